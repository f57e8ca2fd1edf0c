import { Payload, Received, Viewer } from './support/live-client';
import { CAMPAIGN_GOODS_KEYS, SUMMARY_KEYS, keys, expectError, expectOk, expectEventShape, liveHarness } from './support/live-harness';
import { describeEngines, TestCustomer } from './support/test-app';

/** Stock-driven sales status: set, decrement, increment, the derived status and what viewers are told (docs/api-reference.md, Stock). */

describeEngines('live campaigns: stock', __filename, (ctx) => {
  const live = liveHarness(ctx);
  const { con, stock, salesStatus, liveCampaign, register, viewer, campaignRow } = live;
  let A: TestCustomer;
  let B: TestCustomer;
  beforeAll(() => {
    ({ A, B } = live);
  });

  const statusEvents = (events: Received[]) => events.filter((e) => e.type === 'goods.salesStatus').map((e) => e.payload.salesStatus as string);
  const drain = (v: Viewer): Received[] => {
    const got = v.unread;
    v.skipAll();
    return got;
  };
  const row = async (key: string) => (await con(A).goods(key)).body.results[0] as Payload;

  it('set answers the campaign item with stock and almostSoldOutAt (null until set), in every locator and parameter style', async () => {
    const { key, goods } = await liveCampaign(A, 1);
    const g = goods[0];
    const fresh = await row(key);
    expect(keys(fresh)).toEqual(CAMPAIGN_GOODS_KEYS);
    expect(fresh).toMatchObject({ stock: null, almostSoldOutAt: null, salesStatus: 'ON_SALE' });

    let n = 10;
    for (const by of ['id', 'url', 'sku'] as const) {
      for (const style of ['query', 'form', 'json'] as const) {
        n += 1;
        const locator = by === 'id' ? { goodsId: g.id } : by === 'url' ? { url: g.url } : { sku: g.sku };
        const res = await stock(A, key, by, 'set', { ...locator, stock: n, almostSoldOutAt: 3 }, style);
        expectOk(res);
        expect(keys(res.body)).toEqual(CAMPAIGN_GOODS_KEYS);
        expect(res.body).toMatchObject({ goodsId: String(g.id), stock: n, almostSoldOutAt: 3, salesStatus: 'ON_SALE' });
      }
    }
    // Absent threshold: unchanged; null (empty text in a form or query) clears it; null stock stops tracking.
    expect((await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 7 })).body).toMatchObject({ stock: 7, almostSoldOutAt: 3 });
    expect((await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 7, almostSoldOutAt: null }, 'form')).body).toMatchObject({
      stock: 7,
      almostSoldOutAt: null,
    });
    expect((await stock(A, key, 'id', 'set', { goodsId: g.id, stock: null })).body).toMatchObject({ stock: null, salesStatus: 'ON_SALE' });
    expect(await row(key)).toMatchObject({ stock: null, almostSoldOutAt: null });
  });

  it('decrement and increment answer the remaining stock; the status follows it, one goods.salesStatus per change and none otherwise', async () => {
    const { key, goods } = await liveCampaign(A, 1, { operatorName: 'Desk' });
    const g = goods[0];
    expectOk(await stock(A, key, 'sku', 'set', { sku: g.sku, stock: 5, almostSoldOutAt: 2 }));
    const v = await viewer(A, key);
    const snap = await v.next('campaign.snapshot');
    expect(keys(snap.goods[0])).toEqual(SUMMARY_KEYS); // showStock off: no stock for viewers

    const steps: Array<['decrement' | 'increment', number, number, string]> = [
      ['decrement', 1, 4, 'ON_SALE'],
      ['decrement', 2, 2, 'ALMOST_SOLD_OUT'],
      ['decrement', 1, 1, 'ALMOST_SOLD_OUT'],
      ['decrement', 1, 0, 'SOLD_OUT'],
      ['increment', 1, 1, 'ALMOST_SOLD_OUT'],
      ['increment', 9, 10, 'ON_SALE'],
    ];
    for (const [op, quantity, left, status] of steps) {
      const res = await stock(A, key, 'id', op, { goodsId: g.id, quantity }, 'query');
      expectOk(res);
      expect(res.body).toMatchObject({ stock: left, salesStatus: status });
    }
    // Default quantity 1.
    expect((await stock(A, key, 'url', 'decrement', { url: g.url }, 'form')).body).toMatchObject({ stock: 9, salesStatus: 'ON_SALE' });

    await v.settle(300);
    const got = drain(v);
    expect(statusEvents(got)).toEqual(['ALMOST_SOLD_OUT', 'SOLD_OUT', 'ALMOST_SOLD_OUT', 'ON_SALE']);
    expect(got.map((e) => e.type)).toEqual(['goods.salesStatus', 'goods.salesStatus', 'goods.salesStatus', 'goods.salesStatus']);
    for (const e of got) {
      expectEventShape('goods.salesStatus', e.payload);
      expect(e.payload).toMatchObject({ campaignKey: key, goodsId: String(g.id), adminName: 'Desk' });
    }
    expect(got.map((e) => e.payload.seq)).toEqual([snap.seq + 1, snap.seq + 2, snap.seq + 3, snap.seq + 4]);
    // Recorded in the campaign's event log: the seq moved by exactly the events sent.
    expect(Number((await campaignRow(key)).lastSeq)).toBe(snap.seq + 4);
  });

  it('an order that changes no status answers the campaign item exactly as it is then stored, whichever the locator', async () => {
    const { key, goods } = await liveCampaign(A, 2);
    const g = goods[1];
    expectOk(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 50, almostSoldOutAt: 5 }));
    const listed = async () => ((await con(A).goods(key)).body.results as Payload[]).find((r) => r.goodsId === String(g.id));
    for (const [by, locator, op, left] of [
      ['sku', { sku: g.sku }, 'decrement', 47],
      ['url', { url: g.url }, 'increment', 50],
      ['id', { goodsId: g.id }, 'decrement', 47],
    ] as const) {
      const res = await stock(A, key, by, op, { ...locator, quantity: 3 });
      expectOk(res);
      expect(res.body).toMatchObject({ goodsId: String(g.id), stock: left, almostSoldOutAt: 5, salesStatus: 'ON_SALE' });
      expect(res.body).toEqual(await listed());
    }
  });

  it('errors: 400 for a bad quantity or stock, 404 for unknown items, 409 for more than is left (nothing changes)', async () => {
    const { key, goods } = await liveCampaign(A, 1);
    const g = goods[0];
    const outsider = await register(A);
    const theirs = await register(B);
    // Untracked stock cannot be taken from or added to.
    expectError(await stock(A, key, 'id', 'decrement', { goodsId: g.id }), 409, -409);
    expectError(await stock(A, key, 'id', 'increment', { goodsId: g.id }), 409, -409);
    expectOk(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 3 }));
    const v = await viewer(A, key);
    const snap = await v.next('campaign.snapshot');

    for (const style of ['query', 'form', 'json'] as const) {
      for (const quantity of [0, -1, 1.5, 'two', 1_000_000_001]) {
        expectError(await stock(A, key, 'id', 'decrement', { goodsId: g.id, quantity }, style), 400, -510);
        expectError(await stock(A, key, 'id', 'increment', { goodsId: g.id, quantity }, style), 400, -510);
      }
      for (const value of [-1, 2.5, 'many', 1_000_000_001]) {
        expectError(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: value }, style), 400, -510);
        expectError(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 1, almostSoldOutAt: value }, style), 400, -510);
      }
      expectError(await stock(A, key, 'id', 'set', { goodsId: g.id }, style), 400, -510);
      expectError(await stock(A, key, 'sku', 'decrement', {}, style), 400, -510);
      expectError(await stock(A, key, 'id', 'decrement', { goodsId: g.id, notify: 'perhaps' }, style), 400, -510);
    }
    expectError(await stock(A, 'NoSuchCampaign1', 'id', 'decrement', { goodsId: g.id }), 404, -710);
    expectError(await stock(A, key, 'id', 'decrement', { goodsId: 987654321 }), 404, -404);
    expectError(await stock(A, key, 'sku', 'set', { sku: theirs.sku, stock: 1 }), 404, -404);
    expectError(await stock(A, key, 'url', 'increment', { url: outsider.url }), 404, -711);

    const over = await stock(A, key, 'id', 'decrement', { goodsId: g.id, quantity: 4 });
    expectError(over, 409, -409);
    expect(over.body._e).toMatch(/Only 3 left/);
    expectError(await stock(A, key, 'id', 'increment', { goodsId: g.id, quantity: 1_000_000_000 }), 409, -409);

    expect(await row(key)).toMatchObject({ stock: 3, salesStatus: 'ON_SALE' });
    await v.settle(200);
    expect(drain(v)).toEqual([]);
    expect(Number((await campaignRow(key)).lastSeq)).toBe(snap.seq);
  });

  it('a manual status wins until the stock next changes; a set that changes nothing re-derives nothing', async () => {
    const { key, goods } = await liveCampaign(A, 1);
    const g = goods[0];
    expectOk(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 10, almostSoldOutAt: 2 }));
    const v = await viewer(A, key);
    await v.next('campaign.snapshot');

    expectOk(await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT' }));
    expect((await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 10 })).body).toMatchObject({ stock: 10, salesStatus: 'SOLD_OUT' });
    expect(await row(key)).toMatchObject({ stock: 10, salesStatus: 'SOLD_OUT' });
    const back = await stock(A, key, 'id', 'decrement', { goodsId: g.id });
    expect(back.body).toMatchObject({ stock: 9, salesStatus: 'ON_SALE' });

    await v.settle(200);
    expect(statusEvents(drain(v))).toEqual(['SOLD_OUT', 'ON_SALE']);
  });

  it('notify=false stores the derived status without pushing it', async () => {
    const { key, goods } = await liveCampaign(A, 1);
    const g = goods[0];
    expectOk(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 1 }));
    const v = await viewer(A, key);
    await v.next('campaign.snapshot');
    expect((await stock(A, key, 'id', 'decrement', { goodsId: g.id, notify: false }, 'form')).body).toMatchObject({ stock: 0, salesStatus: 'SOLD_OUT' });
    await v.settle(200);
    expect(drain(v)).toEqual([]);
  });

  it('showStock: viewers get stock in the summaries and a goods.stock event per change; off again, neither', async () => {
    const { key, goods } = await liveCampaign(A, 2, { showStock: true });
    const [g, other] = goods;
    expect((await con(A).get(key)).body.showStock).toBe(true);
    expectOk(await stock(A, key, 'id', 'set', { goodsId: g.id, stock: 2, almostSoldOutAt: 1 }));
    const v = await viewer(A, key);
    const snap = await v.next('campaign.snapshot');
    expect(snap.campaign.showStock).toBe(true);
    expect(snap.goods.map((s: Payload) => s.stock)).toEqual([2, null]);
    expect(keys(snap.goods[0])).toEqual([...SUMMARY_KEYS, 'stock'].sort());

    expectOk(await stock(A, key, 'id', 'decrement', { goodsId: g.id }));
    const events = await v.take(2);
    expect(events.map((e) => e.type)).toEqual(['goods.stock', 'goods.salesStatus']);
    expectEventShape('goods.stock', events[0].payload);
    expect(events[0].payload).toMatchObject({ campaignKey: key, goodsId: String(g.id), stock: 1 });
    expect(events[1].payload).toMatchObject({ salesStatus: 'ALMOST_SOLD_OUT' });
    expect(events[1].payload.seq).toBe(events[0].payload.seq + 1);

    const publicDetail = await live.http().get(`/v1/campaigns/${A.accessKey}/${key}`);
    expect(publicDetail.body.goods.map((s: Payload) => s.stock)).toEqual([1, null]);

    expectOk(await con(A).patch(key, { showStock: false }));
    expect((await v.next('campaign.update')).campaign.showStock).toBe(false);
    expectOk(await stock(A, key, 'id', 'set', { goodsId: other.id, stock: 4 }));
    await v.settle(200);
    expect(drain(v)).toEqual([]);
    const detail = await live.http().get(`/v1/campaigns/${A.accessKey}/${key}`);
    expect(detail.body.goods[0].stock).toBeUndefined();
  });
});
