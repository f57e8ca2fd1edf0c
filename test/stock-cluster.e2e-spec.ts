import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { describeTwoNodes, expectOk, Node, NodeCustomer } from './support/cluster-app';
import { Viewer } from './support/live-client';

/**
 * Stock decrements racing on two app nodes that share one MariaDB database (and one Redis, so a viewer on
 * either node hears every event): no oversell, the stock ends at exactly 0, every decrement beyond it is
 * refused with 409, and each status change is pushed exactly once. MariaDB only (SQLite cannot be shared
 * between processes); a missing MariaDB or Redis skips the suite, or fails it with REQUIRE_SERVICES=1.
 */

describeTwoNodes('stock across two nodes sharing one database', __filename, 'Stock cluster', (cluster) => {
  let A: Node;
  let B: Node;
  let C: NodeCustomer;
  beforeAll(() => ({ A, B, C } = cluster));

  const stockPath = (key: string, op = '') => `/v1/goods/${C.accessKey}/campaign/${key}/stock/id${op}`;

  it('20 clients on two nodes decrementing one item of 20 units: 20 taken, the rest refused with 409, one event per status change', async () => {
    const created = await A.http.post(`/v1/console/${C.accessKey}/campaigns`).set('Authorization', C.auth()).send({ title: 'Rush' });
    expectOk(created);
    const key = created.body.campaignKey as string;
    const item = await B.http
      .post(`/v1/goods/${C.accessKey}`)
      .set('Authorization', C.auth())
      .send({ name: 'Hot', sku: 'HOT-1', url: 'https://shop.example.com/hot' });
    expectOk(item);
    const goodsId = item.body.id as number;
    expectOk(
      await A.http
        .post(`/v1/console/${C.accessKey}/campaigns/${key}/goods`)
        .set('Authorization', C.auth())
        .send({ goodsIds: [goodsId] }),
    );
    expectOk(await B.http.put(stockPath(key)).set('Authorization', C.auth()).send({ goodsId, stock: 20, almostSoldOutAt: 5 }));

    const onA = await Viewer.connect(A.base, { accessKey: C.accessKey, campaignKey: key });
    const onB = await Viewer.connect(B.base, { accessKey: C.accessKey, campaignKey: key });
    const seq0 = (await onA.next('campaign.snapshot')).seq as number;
    await onB.next('campaign.snapshot');

    // Each client keeps decrementing by 1 through its node until it is refused.
    const remaining: number[] = [];
    const refusals: Array<{ status: number; _s: number }> = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const node = i % 2 ? B : A;
        for (let attempt = 0; attempt <= 20; attempt += 1) {
          const res = await node.http.post(stockPath(key, '/decrement')).set('Authorization', C.auth()).send({ goodsId, quantity: 1 });
          if (res.status === 200) {
            remaining.push(res.body.stock as number);
            continue;
          }
          refusals.push({ status: res.status, _s: res.body._s });
          return;
        }
        refusals.push({ status: 0, _s: 0 }); // never refused: more was taken than there was
      }),
    );

    expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(refusals).toEqual(Array.from({ length: 20 }, () => ({ status: 409, _s: -409 })));
    const [stored] = await A.app.get(DataSource).query('SELECT stock, salesStatus FROM campaign_goods WHERE goodsId = ?', [goodsId]);
    expect({ stock: Number(stored.stock), salesStatus: stored.salesStatus }).toEqual({ stock: 0, salesStatus: 'SOLD_OUT' });

    for (const v of [onA, onB]) {
      const events = await v.take(2);
      expect(events.map((e) => [e.type, e.payload.salesStatus, e.payload.seq])).toEqual([
        ['goods.salesStatus', 'ALMOST_SOLD_OUT', seq0 + 1],
        ['goods.salesStatus', 'SOLD_OUT', seq0 + 2],
      ]);
      await v.settle(300);
      expect(v.unread).toEqual([]);
    }
  });
  it('orders racing manual status changes and other campaign writes on both nodes: every call answered, no deadlock, the stock exact', async () => {
    const created = await A.http.post(`/v1/console/${C.accessKey}/campaigns`).set('Authorization', C.auth()).send({ title: 'Mixed' });
    expectOk(created);
    const key = created.body.campaignKey as string;
    const ids: number[] = [];
    for (const n of [1, 2]) {
      const item = await A.http
        .post(`/v1/goods/${C.accessKey}`)
        .set('Authorization', C.auth())
        .send({ name: `Mixed ${n}`, sku: `MIX-${n}`, url: `https://shop.example.com/mix/${n}` });
      expectOk(item);
      ids.push(item.body.id as number);
    }
    expectOk(await A.http.post(`/v1/console/${C.accessKey}/campaigns/${key}/goods`).set('Authorization', C.auth()).send({ goodsIds: ids }));
    for (const goodsId of ids) expectOk(await A.http.put(stockPath(key)).set('Authorization', C.auth()).send({ goodsId, stock: 100, almostSoldOutAt: 90 }));

    const calls: Array<Promise<Response>> = [];
    for (let i = 0; i < 40; i += 1) {
      const node = i % 2 ? B : A;
      calls.push(
        node.http
          .post(stockPath(key, '/decrement'))
          .set('Authorization', C.auth())
          .send({ goodsId: ids[i % 2], quantity: 1 }),
      );
      if (i % 4 === 0) {
        calls.push(
          (i % 8 ? A : B).http
            .put(`/v1/goods/${C.accessKey}/campaign/${key}/salesStatus/id`)
            .set('Authorization', C.auth())
            .send({ goodsId: ids[(i / 4) % 2], salesStatus: i % 8 ? 'SOLD_OUT' : 'ON_SALE' }),
        );
        calls.push(
          node.http
            .put(`/v1/console/${C.accessKey}/campaigns/${key}/goods/${ids[0]}/showing`)
            .set('Authorization', C.auth())
            .send({ showingNow: i % 8 === 0 }),
        );
      }
    }
    const answers = await Promise.all(calls);
    expect(answers.filter((r) => r.status !== 200).map((r) => [r.status, r.body._e])).toEqual([]);
    const rows: Array<{ stock: number | string }> = await A.app
      .get(DataSource)
      .query('SELECT stock FROM campaign_goods WHERE goodsId IN (?, ?) ORDER BY goodsId', ids);
    expect(rows.map((r) => Number(r.stock))).toEqual([80, 80]);
  });
});
