import type { EntityManager } from 'typeorm';
import { CampaignGoods } from '../src/campaigns/entities/campaign-goods.entity';
import { lockRow } from '../src/database/engine';
import { Transactions } from '../src/database/transactions';
import { findGoodsIdsOrFail } from '../src/goods/goods-lookup';
import { createTestApp, describeEngines, engineUnavailable, TestApp, TestCustomer } from './support/test-app';
import { expectOk, liveHarness } from './support/live-harness';
import type { Payload } from './support/live-client';

/**
 * A goods item deleted from the catalog while another writer changes a campaign holding it (or adds it to
 * one): the campaign's viewers get the list the database holds once both have committed. The other writer
 * is a transaction of the app's own, holding the campaign (on MySQL its row lock; SQLite has one writer at
 * a time) while it makes its change and until the test lets it commit, so that the deletion begins, waits
 * for it, and must then read what it committed.
 */
async function otherWriter(t: TestApp, campaignId: number, work: (em: EntityManager) => Promise<unknown>): Promise<{ commit(): Promise<void> }> {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  let begun: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (begun = resolve));
  const done = t.app.get(Transactions).run(async (em) => {
    await lockRow(em, 'campaigns', campaignId);
    await work(em);
    begun();
    await released;
  });
  await Promise.race([started, done]);
  return {
    commit: async () => {
      release();
      await done;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeEngines('catalog deletion beside campaign changes', __filename, (ctx) => {
  const live = liveHarness(ctx);

  const deleteGoods = (accessKey: string, auth: string, goodsId: unknown) =>
    ctx()
      .http.delete(`/v1/goods/${accessKey}/${String(goodsId)}`)
      .set('Authorization', auth);
  const campaignId = async (key: string) => Number((await live.campaignRow(key)).id);
  const places = async (id: number) =>
    (await ctx().dataSource.query('SELECT goodsId, sortOrder, salesStatus FROM campaign_goods WHERE campaignId = ? ORDER BY sortOrder', [id])).map(
      (r: Payload) => ({ goodsId: String(r.goodsId), sortOrder: Number(r.sortOrder), salesStatus: r.salesStatus }),
    );
  const listOf = (payload: Payload) =>
    (payload.goods as Payload[]).map((g) => ({ goodsId: String(g.goodsId), sortOrder: Number(g.sortOrder), salesStatus: g.salesStatus }));

  /**
   * Deletes `goodsId` from the catalog while another writer, holding the campaign, runs `work` and
   * commits; answers the campaign's places then, and the goods.list its viewers were sent.
   */
  async function deleteBeside(c: TestCustomer, key: string, goodsId: unknown, work: (em: EntityManager, campaignId: number) => Promise<unknown>) {
    const id = await campaignId(key);
    const viewer = await live.viewer(c, key);
    viewer.skipAll();
    const other = await otherWriter(ctx(), id, (em) => work(em, id));
    const deletion = deleteGoods(c.accessKey, c.auth(), goodsId).then((res) => res);
    await sleep(400); // the deletion has begun and waits for the campaign
    await other.commit();
    expectOk(await deletion);
    return { places: await places(id), told: listOf(await viewer.next('goods.list')) };
  }

  it('the goods.list of a deletion that waited for a campaign change shows that change (a status set meanwhile)', async () => {
    const c = await ctx().createCustomer();
    const { key, goods } = await live.liveCampaign(c, 2);
    const [a, b] = goods;
    const after = await deleteBeside(c, key, b.id, (em, id) =>
      em.update(CampaignGoods, { campaignId: id, goodsId: Number(a.id) }, { salesStatus: 'SOLD_OUT' }),
    );
    const expected = [{ goodsId: String(a.id), sortOrder: 1, salesStatus: 'SOLD_OUT' }];
    expect(after.places).toEqual(expected);
    expect(after.told).toEqual(expected);
  });

  it('the goods.list of a deletion that waited for a campaign change shows that change (an item removed meanwhile)', async () => {
    const c = await ctx().createCustomer();
    const { key, goods } = await live.liveCampaign(c, 3);
    const [a, b, x] = goods;
    const after = await deleteBeside(c, key, b.id, async (em, id) => {
      await em.delete(CampaignGoods, { campaignId: id, goodsId: Number(a.id) });
      await em.query('UPDATE campaign_goods SET sortOrder = sortOrder - 1 WHERE campaignId = ?', [id]);
    });
    const expected = [{ goodsId: String(x.id), sortOrder: 1, salesStatus: 'ON_SALE' }];
    expect(after.places).toEqual(expected);
    expect(after.told).toEqual(expected);
  });

  it('an item added to a campaign by a change still open when its deletion begins leaves that campaign, and its viewers are told', async () => {
    const c = await ctx().createCustomer();
    const { key, goods } = await live.liveCampaign(c, 1);
    const [a] = goods;
    const b = await live.register(c);
    // As the console's add does it: the goods read (with a shared lock on MySQL), then the new place.
    const after = await deleteBeside(c, key, b.id, async (em, id) => {
      await findGoodsIdsOrFail(em, c.id, 'id', [Number(b.id)]);
      const now = new Date();
      await em.insert(CampaignGoods, {
        campaignId: id,
        goodsId: Number(b.id),
        sortOrder: 2,
        showingNow: false,
        salesStatus: 'ON_SALE',
        stock: null,
        almostSoldOutAt: null,
        adminName: null,
        adminId: '',
        createdAt: now,
        updatedAt: now,
      });
    });
    const expected = [{ goodsId: String(a.id), sortOrder: 1, salesStatus: 'ON_SALE' }];
    expect(after.places).toEqual(expected);
    // The deletion found the new place and told the viewers (who never heard of it: the other writer sent nothing).
    expect(after.told).toEqual(expected);
  });
});

/**
 * A real deadlock on MariaDB: the deletion holds the item's row and waits for the campaign, which the other
 * writer holds while it then asks for the item's row. The server rolls one of them back; the other writer
 * has written far more rows, so the deletion is the victim, and it runs again (Transactions
 * runAgainOnDeadlock) instead of answering 503.
 */
const mysqlDown = engineUnavailable('mysql');
(mysqlDown && process.env.REQUIRE_SERVICES !== '1' ? describe.skip : describe)(
  `a goods deletion chosen as a deadlock's victim [mysql]${mysqlDown ? ` (skipped: ${mysqlDown})` : ''}`,
  () => {
    let t: TestApp;
    beforeAll(async () => {
      if (mysqlDown) throw new Error(`MariaDB required (REQUIRE_SERVICES=1) but unavailable: ${mysqlDown}`);
      t = await createTestApp('mysql', `${__filename}.deadlock`);
    });
    afterAll(async () => {
      await t?.close();
    });
    const live = liveHarness(() => t);

    it('runs again and succeeds; the campaign holds what both committed and its viewers are told so', async () => {
      const c = await t.createCustomer();
      const { key, goods } = await live.liveCampaign(c, 2);
      const [a, b] = goods;
      const id = Number((await live.campaignRow(key)).id);
      // Rows for the other writer to change, so that it weighs more than the deletion.
      const filler = Array.from({ length: 300 }, (_, i) => ({ name: `Filler ${i}`, sku: `FILL-${i}`, url: `https://shop.example.com/fill/${i}` }));
      const synced = await t.http.post(`/v1/goods/${c.accessKey}/sync`).set('Authorization', c.auth()).send(filler);
      expectOk(synced);
      const fillerIds = (synced.body.results as Payload[]).map((r) => Number(r.id));
      const viewer = await live.viewer(c, key);
      viewer.skipAll();

      const transactions = t.app.get(Transactions);
      const runs = jest.spyOn(transactions, 'run');
      let closeCycle!: () => void;
      const cycle = new Promise<void>((resolve) => (closeCycle = resolve));
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const other = transactions.run(async (em) => {
        await lockRow(em, 'campaigns', id);
        // A range of the primary key: a scan of the table (as for a long IN list) would lock the deletion's item too.
        await em.query("UPDATE goods SET description = CONCAT('filled ', id) WHERE id BETWEEN ? AND ?", [Math.min(...fillerIds), Math.max(...fillerIds)]);
        await em.update(CampaignGoods, { campaignId: id, goodsId: Number(a.id) }, { salesStatus: 'SOLD_OUT' });
        holding();
        await cycle;
        await lockRow(em, 'goods', Number(b.id));
      });
      await held;
      try {
        const deletion = t.http
          .delete(`/v1/goods/${c.accessKey}/${String(b.id)}`)
          .set('Authorization', c.auth())
          .then((res) => res);
        // The deletion holds the item's row and waits for the campaign's.
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline) {
          const [{ n }] = await t.dataSource.query(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'SELECT id FROM campaigns WHERE id = % FOR UPDATE'",
          );
          if (Number(n) > 0) break;
          await sleep(20);
        }
        closeCycle();
        await other;
        expectOk(await deletion);
        // The other writer's run, and the deletion's two: the first rolled back by the server.
        expect(runs).toHaveBeenCalledTimes(3);
      } finally {
        closeCycle();
        runs.mockRestore();
      }
      const expected = [{ goodsId: String(a.id), sortOrder: 1, salesStatus: 'SOLD_OUT' }];
      const places = (await t.dataSource.query('SELECT goodsId, sortOrder, salesStatus FROM campaign_goods WHERE campaignId = ? ORDER BY sortOrder', [id])).map(
        (r: Payload) => ({ goodsId: String(r.goodsId), sortOrder: Number(r.sortOrder), salesStatus: r.salesStatus }),
      );
      expect(places).toEqual(expected);
      const told = (await viewer.next('goods.list')).goods as Payload[];
      expect(told.map((g) => ({ goodsId: String(g.goodsId), sortOrder: Number(g.sortOrder), salesStatus: g.salesStatus }))).toEqual(expected);
      expect(Number((await t.dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE id = ?', [b.id]))[0].n)).toBe(0);
    }, 60_000);
  },
);
