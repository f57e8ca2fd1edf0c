import type { EntityManager } from 'typeorm';
import { BYTES_KEPT, CampaignEventLog, EVENTS_KEPT, MAX_LOGGED_PAYLOAD_BYTES } from './campaign-event-log';
import { CampaignEvent } from './entities/campaign-event.entity';

/**
 * A manager on "SQLite" that keeps what is inserted and answers the log's own statements from it: the
 * lastSeq update, the sizes of a range (since), the sizes of the last events and the delete (trim).
 */
function fakeManager(rows: CampaignEvent[], reads: { payloads: number } = { payloads: 0 }): EntityManager {
  let lastSeq = 0;
  const inRange = (from: number, to: number) => rows.filter((r) => r.seq > from && r.seq <= to);
  return {
    connection: { options: { type: 'better-sqlite3' } },
    query: (sql: string, params: number[]) => {
      if (sql.startsWith('UPDATE campaigns')) return Promise.resolve([{ lastSeq: (lastSeq += params[0]) }]);
      if (sql.startsWith('SELECT COUNT(*)')) {
        const range = inRange(params[1], params[2]);
        const sizes = range.map((r) => r.payloadBytes);
        return Promise.resolve([
          { events: range.length, bytes: range.length ? sizes.reduce((a, b) => a + b) : null, smallest: range.length ? Math.min(...sizes) : null },
        ]);
      }
      if (sql.startsWith('SELECT seq, payloadBytes')) {
        return Promise.resolve(
          inRange(params[1], Infinity)
            .sort((a, b) => b.seq - a.seq)
            .map((r) => ({ seq: r.seq, payloadBytes: r.payloadBytes })),
        );
      }
      if (sql.startsWith('DELETE FROM campaign_events')) {
        rows.splice(0, rows.length, ...rows.filter((r) => r.seq > params[1]));
        return Promise.resolve([]);
      }
      throw new Error(`unexpected query: ${sql}`);
    },
    insert: (_target: unknown, inserted: CampaignEvent[]) => {
      rows.push(...inserted);
      return Promise.resolve({});
    },
    find: (_target: unknown, options: { where: { seq: { value: [number, number] } } }) => {
      reads.payloads += 1;
      const [from, to] = options.where.seq.value;
      return Promise.resolve(inRange(from - 1, to).sort((a, b) => a.seq - b.seq));
    },
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

describe('CampaignEventLog: weighing events by their sizes, not their payloads', () => {
  const chat = (message: string) => ({ type: 'chat.message' as const, payload: { id: '1', message, adminName: null, createdAt: 0 } });

  it('records each payload with its size in UTF-8 bytes', async () => {
    const rows: CampaignEvent[] = [];
    await new CampaignEventLog().record(fakeManager(rows), 7, [chat('한글'), chat('ab')]);
    expect(rows.map((r) => [r.seq, r.payloadBytes])).toEqual(rows.map((r) => [r.seq, Buffer.byteLength(r.payload)]));
    expect(rows[0].payloadBytes).toBe(rows[1].payloadBytes + 4); // two 3-byte characters for two 1-byte ones
  });

  it('a resync whose events add up to more than maxBytes is answered null without reading a payload; one that fits is replayed in order', async () => {
    const rows: CampaignEvent[] = [];
    const reads = { payloads: 0 };
    const em = fakeManager(rows, reads);
    const log = new CampaignEventLog();
    await log.record(em, 7, [chat('x'.repeat(100_000)), chat('y'.repeat(100_000)), chat('z'.repeat(100_000))]);
    expect(await log.since(em, 7, 0, 3, 256 * 1024)).toBeNull();
    expect(reads.payloads).toBe(0);
    const replay = await log.since(em, 7, 1, 3, 256 * 1024);
    expect(replay?.map((e) => [e.seq, (e.payload as { message: string }).message[0]])).toEqual([
      [2, 'y'],
      [3, 'z'],
    ]);
    expect(reads.payloads).toBe(1);
  });

  it('a resync reaching an event kept empty (too large) or no longer kept is answered null without reading a payload', async () => {
    const rows: CampaignEvent[] = [];
    const reads = { payloads: 0 };
    const em = fakeManager(rows, reads);
    const log = new CampaignEventLog();
    await log.record(em, 7, [chat('a'), chat('b'), chat('c')]);
    rows[1].payload = '';
    rows[1].payloadBytes = 0;
    expect(await log.since(em, 7, 0, 3)).toBeNull();
    rows.splice(0, 1);
    expect(await log.since(em, 7, 0, 3)).toBeNull();
    expect(reads.payloads).toBe(0);
  });

  it(`keeps at most BYTES_KEPT (${BYTES_KEPT}) bytes of payloads: the newest events that fit`, async () => {
    const rows: CampaignEvent[] = [];
    const em = fakeManager(rows);
    const log = new CampaignEventLog();
    const size = 300 * 1024;
    for (let i = 0; i < 20; i += 1) await log.record(em, 7, [chat('x'.repeat(size))]);
    const kept = rows.reduce((sum, r) => sum + r.payloadBytes, 0);
    expect(kept).toBeLessThanOrEqual(BYTES_KEPT);
    expect(rows.map((r) => r.seq)).toEqual([18, 19, 20]); // three of ~300 KB fit 1 MB, four do not
  });

  it('small events are still trimmed by count only, every 100 (EVENTS_KEPT)', async () => {
    const rows: CampaignEvent[] = [];
    const em = fakeManager(rows);
    const log = new CampaignEventLog();
    for (let i = 0; i < EVENTS_KEPT + 150; i += 1) await log.record(em, 7, [chat(`m${i}`)]);
    // Trimmed at 600 to the last 500; 50 more since.
    expect(rows.length).toBe(EVENTS_KEPT + 50);
    expect(rows[0].seq).toBe(101);
  });
});
