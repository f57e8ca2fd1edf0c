import type { EntityManager } from 'typeorm';
import { CampaignEventLog, MAX_LOGGED_PAYLOAD_BYTES } from './campaign-event-log';
import { CampaignEvent } from './entities/campaign-event.entity';

/** A manager on "SQLite" whose lastSeq is 1 after the update, and which keeps what is inserted. */
function fakeManager(rows: CampaignEvent[]): EntityManager {
  return {
    connection: { options: { type: 'better-sqlite3' } },
    query: () => Promise.resolve([{ lastSeq: 1 }]),
    insert: (_target: unknown, inserted: CampaignEvent[]) => {
      rows.push(...inserted);
      return Promise.resolve({});
    },
    find: () => Promise.resolve(rows),
  } as unknown as EntityManager;
}

describe('CampaignEventLog: payloads over MAX_LOGGED_PAYLOAD_BYTES', () => {
  it('keeps a payload up to the limit whole', async () => {
    const rows: CampaignEvent[] = [];
    const em = fakeManager(rows);
    const name = 'x'.repeat(MAX_LOGGED_PAYLOAD_BYTES - 100);
    const [event] = await new CampaignEventLog().record(em, 7, [{ type: 'goods.list', payload: { goods: [{ name }] } as never }]);
    expect(event.seq).toBe(1);
    expect(rows[0].payload).toBe(JSON.stringify({ seq: 1, goods: [{ name }] }));
    expect(await new CampaignEventLog().since(em, 7, 0, 1)).toEqual([{ campaignId: 7, seq: 1, type: 'goods.list', payload: { seq: 1, goods: [{ name }] } }]);
  });

  it('records a larger one with an empty payload (it keeps its seq and is pushed whole); a resync reaching it gets null (a snapshot)', async () => {
    const rows: CampaignEvent[] = [];
    const em = fakeManager(rows);
    // 3-byte characters: fewer UTF-16 units than the limit, more bytes.
    const name = '한'.repeat(Math.ceil(MAX_LOGGED_PAYLOAD_BYTES / 3) + 10);
    const [event] = await new CampaignEventLog().record(em, 7, [{ type: 'goods.list', payload: { goods: [{ name }] } as never }]);
    expect(event).toMatchObject({ campaignId: 7, seq: 1, type: 'goods.list', payload: { seq: 1, goods: [{ name }] } });
    expect(rows.map((r) => [r.seq, r.type, r.payload])).toEqual([[1, 'goods.list', '']]);
    expect(await new CampaignEventLog().since(em, 7, 0, 1)).toBeNull();
  });
});
