import type { Payload } from './support/live-client';
import { expectError, expectEventShape, expectOk, liveHarness } from './support/live-harness';
import { describeEngines } from './support/test-app';

/**
 * A campaign at CAMPAIGN_MAX_GOODS (1,000 by default): 1,000 goods added in one call (on SQLite one
 * statement for all of them was a 500, "Expression tree is too large"), a viewer's goods.list and
 * goods.update carrying all of them (on MariaDB over 64 KB of JSON, which campaign_events.payload held
 * only as MEDIUMTEXT: as TEXT the add was a 500 and the sync's goods.update was lost), and the cap itself
 * (413 -413 past it, nothing added). docs/api-reference.md, Limits and Campaigns console.
 */

const FULL = 1000;

describeEngines('campaign goods: a campaign at CAMPAIGN_MAX_GOODS', __filename, (ctx) => {
  const live = liveHarness(ctx);
  const { http, con, createCampaign, viewer } = live;
  const sync = (body: unknown[]) => http().post(`/v1/goods/${live.A.accessKey}/sync`).set('Authorization', live.A.auth()).send(body);
  const stamp = Date.now().toString(36);
  // Long enough names that 1,000 summaries are far over 64 KB of JSON (about 400 KB).
  const rows = Array.from({ length: FULL + 1 }, (_, i) => ({
    sku: `CAP-${stamp}-${i}`,
    url: `https://shop.example.com/cap/${stamp}/${i}`,
    name: `Capped item ${i} ${'x'.repeat(150)}`,
    brand: 'Sampletech',
    originalPrice: 10_000 + i,
  }));
  let ids: number[] = [];

  beforeAll(async () => {
    const res = await sync(rows);
    expectOk(res);
    expect(res.body.createCount).toBe(FULL + 1);
    ids = res.body.results.map((r: Payload) => Number(r.id));
  });

  it(`adds ${FULL} goods in one call; a viewer gets goods.list with all of them, and one sync updating them all as one goods.update`, async () => {
    const { campaignKey: key } = await createCampaign(live.A, { title: 'Full house' });
    const v = await viewer(live.A, key);
    await v.next('campaign.snapshot');

    const added = await con(live.A).addGoods(key, { goodsIds: ids.slice(0, FULL) });
    expectOk(added);
    expect(added.body.totalCount).toBe(FULL);
    expect(added.body.results.map((r: Payload) => [Number(r.goods.id), r.sortOrder])).toEqual(ids.slice(0, FULL).map((id, i) => [id, i + 1]));

    const list = await v.next('goods.list', 15_000);
    expectEventShape('goods.list', list);
    expect(list.goods.map((g: Payload) => g.goodsId)).toEqual(ids.slice(0, FULL).map(String));
    expect(JSON.stringify(list).length).toBeGreaterThan(64 * 1024);

    const updated = await sync(rows.slice(0, FULL).map((r, i) => ({ sku: r.sku, name: `Renamed ${i} ${'y'.repeat(150)}` })));
    expectOk(updated);
    expect(updated.body.updateCount).toBe(FULL);
    const update = await v.next('goods.update', 15_000);
    expectEventShape('goods.update', update);
    expect(update.seq).toBe(list.seq + 1);
    expect(update.goods.map((g: Payload) => [g.goodsId, g.sortOrder, g.name])).toEqual(
      ids.slice(0, FULL).map((id, i) => [String(id), i + 1, `Renamed ${i} ${'y'.repeat(150)}`]),
    );
    // Both are in the event log, whole, for a viewer that resyncs.
    const logged: Array<{ type: string; payload: string }> = await ctx().dataSource.query(
      'SELECT e.type, e.payload FROM campaign_events e JOIN campaigns c ON c.id = e.campaignId WHERE c.campaignKey = ? ORDER BY e.seq',
      [key],
    );
    expect(logged.map((e) => [e.type, (JSON.parse(e.payload) as Payload).goods.length])).toEqual([
      ['goods.list', FULL],
      ['goods.update', FULL],
    ]);

    // At the cap: one more is 413 -413 naming the limit and the setting, and nothing is added.
    const over = await con(live.A).addGoods(key, { goodsIds: [ids[FULL]] });
    expectError(over, 413, -413);
    expect(over.body._e).toBe(`A campaign holds at most ${FULL} goods (CAMPAIGN_MAX_GOODS); campaign ${key} holds ${FULL} and this would add 1`);
    // Goods already in it are skipped, as ever: that add is no add.
    expectOk(await con(live.A).addGoods(key, { goodsIds: ids.slice(0, 10) }));
    const after = await con(live.A).goods(key);
    expectOk(after);
    expect(after.body.totalCount).toBe(FULL);
    await v.settle(300);
    expect(v.unread).toEqual([]);
  });

  it('an add that would take a campaign past the cap adds none of its goods', async () => {
    const { campaignKey: key } = await createCampaign(live.A, { title: 'Nearly full' });
    expectOk(await con(live.A).addGoods(key, { goodsIds: ids.slice(0, FULL - 1) }));
    const over = await con(live.A).addGoods(key, { goodsIds: ids.slice(FULL - 1, FULL + 1) });
    expectError(over, 413, -413);
    expect(over.body._e).toContain('CAMPAIGN_MAX_GOODS');
    expect(over.body._e).toContain(`holds ${FULL - 1} and this would add 2`);
    expect((await con(live.A).goods(key)).body.totalCount).toBe(FULL - 1);
    expectOk(await con(live.A).addGoods(key, { goodsIds: [ids[FULL]] }));
    expect((await con(live.A).goods(key)).body.totalCount).toBe(FULL);
  });
});

describeEngines(
  'campaign goods: CAMPAIGN_MAX_GOODS set low',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const { con, createCampaign, register } = live;

    it('counts the goods the campaign holds and those the add brings (repeats and ones already in skipped)', async () => {
      const goods = [await register(live.A), await register(live.A), await register(live.A), await register(live.A)];
      const id = (i: number) => Number(goods[i].id);
      const { campaignKey: key } = await createCampaign(live.A);
      expectOk(await con(live.A).addGoods(key, { goodsIds: [id(0), id(1), id(0)] }));
      const over = await con(live.A).addGoods(key, { goodsIds: [id(2), id(3)] });
      expectError(over, 413, -413);
      expect(over.body._e).toBe(`A campaign holds at most 3 goods (CAMPAIGN_MAX_GOODS); campaign ${key} holds 2 and this would add 2`);
      expect((await con(live.A).goods(key)).body.results.map((r: Payload) => Number(r.goods.id))).toEqual([id(0), id(1)]);
      const skus = await con(live.A).addGoods(key, { skus: [goods[0].sku, goods[1].sku, goods[2].sku] });
      expectOk(skus);
      expect(skus.body.totalCount).toBe(3);
      expectError(await con(live.A).addGoods(key, { urls: [goods[3].url] }), 413, -413);
    });
  },
  { CAMPAIGN_MAX_GOODS: '3' },
);
