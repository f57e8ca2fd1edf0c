import { BYTES_KEPT, EVENTS_KEPT } from '../src/campaigns/campaign-event-log';
import { CampaignEvent } from '../src/campaigns/entities/campaign-event.entity';
import { Transactions } from '../src/database/transactions';
import { RESYNC_MAX_REPLAY_BYTES } from '../src/live/live.gateway';
import type { Payload } from './support/live-client';
import { expectOk, liveHarness } from './support/live-harness';
import { describeEngines } from './support/test-app';

/**
 * The event log behind `resync` weighed by bytes (docs/live-protocol.md, Resync): a resync whose missed
 * events are over the replay limit (256 KB) is answered with a snapshot without their payloads being read,
 * and each campaign keeps at most BYTES_KEPT bytes of payloads, whatever the number of events. The events
 * here are goods.list of a campaign of goods with long fields (~50 KB each): what an operator toggling
 * showingNow makes, one per toggle.
 */
const REPLAY_LIMIT = RESYNC_MAX_REPLAY_BYTES;
const GOODS = 20;

describeEngines('live campaigns: the event log weighed by bytes', __filename, (ctx) => {
  const live = liveHarness(ctx);
  const { http, con, createCampaign, viewer, campaignRow } = live;
  let goodsIds: string[] = [];

  beforeAll(async () => {
    const items = Array.from({ length: GOODS }, (_, i) => ({
      sku: `LOG-${i}`,
      url: `https://shop.example.com/${'u'.repeat(1900)}/${i}`,
      name: `${'N'.repeat(240)} ${i}`,
      brand: 'B'.repeat(255),
      originalPrice: 1000 + i,
    }));
    const res = await http().post(`/v1/goods/${live.A.accessKey}/sync`).set('Authorization', live.A.auth()).send(items);
    expectOk(res);
    goodsIds = (res.body.results as Payload[]).map((r) => String(r.id));
    expect(goodsIds).toHaveLength(GOODS);
  });

  /** A campaign of the long goods, then `toggles` showingNow changes: one goods.list each. */
  async function campaignWithToggles(toggles: number): Promise<{ key: string; campaignId: number; lastSeq: number }> {
    const { campaignKey: key } = await createCampaign(live.A);
    expectOk(await con(live.A).addGoods(key, { goodsIds }));
    for (let i = 0; i < toggles; i += 1) expectOk(await con(live.A).showing(key, goodsIds[i % GOODS], true));
    const row = await campaignRow(key);
    return { key, campaignId: Number(row.id), lastSeq: Number(row.lastSeq) };
  }

  async function logged(campaignId: number): Promise<Array<{ seq: number; bytes: number }>> {
    const rows: Array<{ seq: number | string; bytes: number | string }> = await ctx().dataSource.query(
      'SELECT seq, LENGTH(payload) AS bytes FROM campaign_events WHERE campaignId = ? ORDER BY seq',
      [campaignId],
    );
    return rows.map((r) => ({ seq: Number(r.seq), bytes: Number(r.bytes) }));
  }

  it('a resync whose missed events are over 256 KB gets a snapshot without their payloads being read; one within it is replayed in order', async () => {
    const { key, campaignId, lastSeq } = await campaignWithToggles(8);
    expect(REPLAY_LIMIT).toBe(256 * 1024); // as docs/live-protocol.md says
    const log = await logged(campaignId);
    const bytesSince = (since: number) => log.filter((e) => e.seq > since).reduce((sum, e) => sum + e.bytes, 0);
    // The fixture: all 8 kept, over the replay limit together, the last 3 within it (ASCII: LENGTH is bytes on both engines).
    expect(log.map((e) => e.seq).slice(-8)).toEqual(Array.from({ length: 8 }, (_, i) => lastSeq - 7 + i));
    expect(bytesSince(lastSeq - 8)).toBeGreaterThan(REPLAY_LIMIT);
    expect(bytesSince(lastSeq - 3)).toBeLessThanOrEqual(REPLAY_LIMIT);

    const v = await viewer(live.A, key);
    expect((await v.next('campaign.snapshot')).seq).toBe(lastSeq);
    const manager = ctx().app.get(Transactions).manager;
    const find = jest.spyOn(manager, 'find');
    const payloadReads = () => find.mock.calls.filter(([target]) => target === CampaignEvent).length;
    try {
      v.resync(lastSeq - 8);
      expect((await v.next('campaign.snapshot')).seq).toBe(lastSeq);
      expect(payloadReads()).toBe(0);

      v.resync(lastSeq - 3);
      const replay = await v.take(3);
      expect(replay.map((e) => [e.type, e.payload.seq])).toEqual([
        ['goods.list', lastSeq - 2],
        ['goods.list', lastSeq - 1],
        ['goods.list', lastSeq],
      ]);
      expect(replay[2].payload.goods.find((g: Payload) => g.showingNow)?.goodsId).toBe(goodsIds[7]);
      expect(payloadReads()).toBe(1);
    } finally {
      find.mockRestore();
    }
    await v.settle(200);
    expect(v.unread).toEqual([]);
  });

  it(`each campaign keeps at most BYTES_KEPT (${BYTES_KEPT}) bytes of events: the newest; a resync from before them gets a snapshot`, async () => {
    const toggles = 40;
    const { key, campaignId, lastSeq } = await campaignWithToggles(toggles);
    const log = await logged(campaignId);
    const kept = log.reduce((sum, e) => sum + e.bytes, 0);
    expect(kept).toBeLessThanOrEqual(BYTES_KEPT);
    // The newest are kept, in an unbroken run up to the last.
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => lastSeq - log.length + 1 + i));
    expect(log.length).toBeGreaterThanOrEqual(3);
    expect(log.length).toBeLessThan(toggles);
    // payloadBytes is what the log weighs: the payloads' sizes.
    const sizes: Array<{ payloadBytes: number | string }> = await ctx().dataSource.query(
      'SELECT payloadBytes FROM campaign_events WHERE campaignId = ? ORDER BY seq',
      [campaignId],
    );
    expect(sizes.map((r) => Number(r.payloadBytes))).toEqual(log.map((e) => e.bytes));

    const v = await viewer(live.A, key);
    expect((await v.next('campaign.snapshot')).seq).toBe(lastSeq);
    v.resync(lastSeq - 2);
    expect((await v.take(2)).map((e) => [e.type, e.payload.seq])).toEqual([
      ['goods.list', lastSeq - 1],
      ['goods.list', lastSeq],
    ]);
    // Trimming by bytes never takes what a replay could send (it always ends at the newest event).
    expect(BYTES_KEPT).toBeGreaterThanOrEqual(REPLAY_LIMIT);
    // Less than EVENTS_KEPT behind, but no longer kept: a snapshot.
    expect(toggles).toBeLessThan(EVENTS_KEPT);
    v.resync(lastSeq - toggles + 1);
    expect((await v.next('campaign.snapshot')).seq).toBe(lastSeq);
    await v.settle(200);
    expect(v.unread).toEqual([]);
  });
});
