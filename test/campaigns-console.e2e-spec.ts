import type { Response } from 'supertest';
import { Payload, Viewer } from './support/live-client';
import {
  CAMPAIGN_KEYS,
  SUMMARY_KEYS,
  CAMPAIGN_GOODS_KEYS,
  DAY,
  keys,
  isEpochMs,
  expectError,
  expectOk,
  expectEventShape,
  liveHarness,
} from './support/live-harness';
import { CampaignGoodsService } from '../src/campaign-goods/campaign-goods.service';
import { describeEngines, TestCustomer } from './support/test-app';

/** The campaigns console end to end: campaigns, their goods, the status machine and chat (docs/api-reference.md). */

describeEngines(
  'live campaigns: console',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const { http, cpath, con, salesStatus, createCampaign, register, liveCampaign, viewer } = live;
    let base = '';
    let A: TestCustomer;
    let B: TestCustomer;
    beforeAll(() => {
      ({ base, A, B } = live);
    });

    describe('console: campaigns', () => {
      it('creates a READY campaign with its fields and detail settings (epoch ms or ISO-8601 schedule)', async () => {
        const scheduledAt = Date.now() + DAY;
        const res = await con(A).create({
          title: 'Friday night deals',
          description: 'Big discounts',
          scheduledAt,
          scheduledEndAt: new Date(scheduledAt + 7200_000).toISOString(),
          posterUrl: 'https://cdn.example.com/poster.jpg',
          liveUrl: 'rtmp://live.example.com/abc',
          operatorName: 'Mina',
          collectionVisible: true,
        });
        expectOk(res);
        expect(keys(res.body)).toEqual([...CAMPAIGN_KEYS, 'description'].sort());
        expect(res.body).toMatchObject({
          campaignStatus: 'READY',
          title: 'Friday night deals',
          description: 'Big discounts',
          scheduledAt,
          scheduledEndAt: scheduledAt + 7200_000,
          startedAt: null,
          endedAt: null,
          posterUrl: 'https://cdn.example.com/poster.jpg',
          liveUrl: 'rtmp://live.example.com/abc',
          operatorName: 'Mina',
          collectionVisible: true,
          notice: null,
          userCount: 0,
        });
        // int64, a JSON number (CONTRACT: a campaign has `campaignId` (int64)); CampaignGoods give theirs as text.
        expect(Number.isSafeInteger(res.body.campaignId) && res.body.campaignId > 0).toBe(true);
        expect(res.body.campaignKey).toMatch(/^[A-Za-z0-9]{1,32}$/);
        expect(isEpochMs(res.body.createdAt)).toBe(true);

        const minimal = await createCampaign(A, { title: 'Minimal' });
        expect(minimal).toMatchObject({ collectionVisible: false, operatorName: null, scheduledAt: null, description: null });
        expect(minimal.campaignKey).not.toBe(res.body.campaignKey);
      });

      it('refuses a campaign without a title or with a bad schedule (400 -510)', async () => {
        expectError(await con(A).create({ description: 'no title' }), 400, -510);
        expectError(await con(A).create({ title: 'x', scheduledAt: 'tomorrow' }), 400, -510);
        expectError(await con(A).create({ title: 'x', collectionVisible: 'maybe' }), 400, -510);
      });

      it('lists all campaigns of the tenant, private ones included, newest first, paged', async () => {
        const C = await ctx().createCustomer('Lister');
        const first = await createCampaign(C, { title: 'one', collectionVisible: false });
        const second = await createCampaign(C, { title: 'two', collectionVisible: true });
        const third = await createCampaign(C, { title: 'three' });
        const res = await con(C).list();
        expectOk(res);
        expect(res.body._s).toBe(0);
        expect(res.body.totalCount).toBe(3);
        expect(res.body.results.map((c: Payload) => c.campaignKey)).toEqual([third, second, first].map((c) => c.campaignKey));
        const page2 = await con(C).list({ page: 2, count: 2 });
        expectOk(page2);
        expect(page2.body.totalCount).toBe(3);
        expect(page2.body.results.map((c: Payload) => c.title)).toEqual(['one']);
        expectOk(await con(C).list({ count: 101 })); // served as 100
      });

      it('gets one campaign with its goods in sortOrder; unknown key is 404 -710', async () => {
        const { key, goods } = await liveCampaign(A, 2);
        const res = await con(A).get(key);
        expectOk(res);
        expect(res.body.campaignKey).toBe(key);
        expect(res.body.goods.map((g: Payload) => g.goodsId)).toEqual(goods.map((g) => String(g.id)));
        for (const g of res.body.goods) expect(keys(g)).toEqual(SUMMARY_KEYS);
        expect(res.body.goods[0]).toMatchObject({
          sortOrder: 1,
          showingNow: false,
          salesStatus: 'ON_SALE',
          name: goods[0].name,
          sku: goods[0].sku,
          url: goods[0].url,
          currency: 'KRW',
          originalPrice: goods[0].originalPrice,
          discountedPrice: 9000.5,
          imageUrl: null,
          adminName: null,
        });
        expectError(await con(A).get('NoSuchCampaign1'), 404, -710);
      });

      it('patches fields and detail settings; absent fields stay, null clears', async () => {
        const c = await createCampaign(A, { title: 'Before', description: 'keep me?', operatorName: 'Old', liveUrl: 'x' });
        const scheduledAt = Date.now() + 3 * DAY;
        const res = await con(A).patch(c.campaignKey, {
          title: 'After',
          description: null,
          scheduledAt: new Date(scheduledAt).toISOString(),
          operatorName: 'Mina',
          collectionVisible: true,
        });
        expectOk(res);
        expect(res.body).toMatchObject({ title: 'After', description: null, scheduledAt, operatorName: 'Mina', collectionVisible: true, liveUrl: 'x' });
        const got = await con(A).get(c.campaignKey);
        expect(got.body).toMatchObject({ title: 'After', description: null, scheduledAt, operatorName: 'Mina', collectionVisible: true, liveUrl: 'x' });
        expect(got.body.campaignStatus).toBe('READY');
        expectError(await con(A).patch(c.campaignKey, { title: '' }), 400, -510);
        expectError(await con(A).patch('NoSuchCampaign1', { title: 'x' }), 404, -710);
        // The operator name is trimmed, and a blank one clears it as null does (as a blank brand does).
        expect((await con(A).patch(c.campaignKey, { operatorName: '  Jin  ' })).body.operatorName).toBe('Jin');
        expect((await con(A).patch(c.campaignKey, { operatorName: '   ' })).body.operatorName).toBeNull();
        expect((await con(A).patch(c.campaignKey, { operatorName: 'Jin' })).body.operatorName).toBe('Jin');
        expect((await con(A).patch(c.campaignKey, { operatorName: null })).body.operatorName).toBeNull();
        // null for a field that cannot be cleared leaves it as it is; blank is refused.
        const kept = await con(A).patch(c.campaignKey, { title: null, collectionVisible: null });
        expectOk(kept);
        expect(kept.body).toMatchObject({ title: 'After', collectionVisible: true });
      });

      it('deletes a campaign: 200 {_s:0}; its viewers get campaign.status NOT_EXIST and are disconnected', async () => {
        const { key } = await liveCampaign(A, 1);
        expectOk(await con(A).chat(key, { message: 'hello' }));
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        const res = await con(A).remove(key);
        expectOk(res);
        expect(res.body).toEqual({ _s: 0 });
        const last = await v.next('campaign.status');
        expectEventShape('campaign.status', last);
        expect(last).toMatchObject({ seq: snap.seq + 1, campaignStatus: 'NOT_EXIST' });
        expect(await v.disconnected(3000)).toBe('io server disconnect');
        expectError(await con(A).get(key), 404, -710);
        expectError(await con(A).remove(key), 404, -710);
        const pub = await http().get(`/v1/campaigns/${A.accessKey}/${key}`);
        expect(pub.body).toEqual({ campaignKey: key, campaignStatus: 'NOT_EXIST' });
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: key })).toMatch(/\S/);
      });
    });

    describe('console: goods in a campaign', () => {
      it('adds goods by goodsIds, skus or urls, appended in the given order as ON_SALE; duplicates skipped', async () => {
        const c = await createCampaign(A);
        const g = [await register(A), await register(A), await register(A), await register(A), await register(A)];
        const byIds = await con(A).addGoods(c.campaignKey, { goodsIds: [g[1].id, g[0].id] });
        expectOk(byIds);
        expect(byIds.body._s).toBe(0);
        expect(byIds.body.totalCount).toBe(2);
        for (const row of byIds.body.results) expect(keys(row)).toEqual(CAMPAIGN_GOODS_KEYS);
        expect(byIds.body.results.map((r: Payload) => [r.goodsId, r.sortOrder, r.salesStatus, r.showingNow])).toEqual([
          [String(g[1].id), 1, 'ON_SALE', false],
          [String(g[0].id), 2, 'ON_SALE', false],
        ]);
        const bySkus = await con(A).addGoods(c.campaignKey, { skus: [g[2].sku, g[0].sku, g[2].sku] });
        expectOk(bySkus);
        const byUrls = await con(A).addGoods(c.campaignKey, { urls: [g[4].url, g[3].url] });
        expectOk(byUrls);
        const list = await con(A).goods(c.campaignKey);
        expectOk(list);
        expect(list.body.results.map((r: Payload) => [r.goodsId, r.sortOrder])).toEqual([
          [String(g[1].id), 1],
          [String(g[0].id), 2],
          [String(g[2].id), 3],
          [String(g[4].id), 4],
          [String(g[3].id), 5],
        ]);
        expect(list.body.totalCount).toBe(5);
      });

      it('adding unknown goods (or another tenant’s) is 404 -404 and adds nothing; ambiguous bodies are 400', async () => {
        const c = await createCampaign(A);
        const mine = await register(A);
        const theirs = await register(B);
        expectError(await con(A).addGoods(c.campaignKey, { goodsIds: [mine.id, 99999999] }), 404, -404);
        expectError(await con(A).addGoods(c.campaignKey, { goodsIds: [theirs.id] }), 404, -404);
        expectError(await con(A).addGoods(c.campaignKey, { skus: ['NO-SUCH-SKU'] }), 404, -404);
        expectError(await con(A).addGoods(c.campaignKey, { urls: [theirs.url] }), 404, -404);
        expect((await con(A).goods(c.campaignKey)).body.totalCount).toBe(0);
        expectError(await con(A).addGoods(c.campaignKey, {}), 400, -510);
        expectError(await con(A).addGoods(c.campaignKey, { goodsIds: [mine.id], skus: [mine.sku] }), 400, -510);
        expectError(await con(A).addGoods(c.campaignKey, { goodsIds: ['x'] }), 400, -510);
        expectError(await con(A).addGoods('NoSuchCampaign1', { goodsIds: [mine.id] }), 404, -710);
        // The lists a client leaves null are not sent (a typed client's unset fields); a list's type is checked first.
        expectError(await con(A).addGoods(c.campaignKey, { skus: null, urls: null }), 400, -510);
        const listed = await con(A).addGoods(c.campaignKey, { skus: 'NOT-A-LIST' });
        expectError(listed, 400, -510);
        expect(listed.body.errors).toEqual([{ field: 'skus', message: "skus must be a list; got 'NOT-A-LIST'" }]);
        expectOk(await con(A).addGoods(c.campaignKey, { goodsIds: null, skus: [mine.sku], urls: null }));
        expect((await con(A).goods(c.campaignKey)).body.totalCount).toBe(1);
      });

      it('an add racing a catalog delete of one of its goods: no 500; the add is whole and the delete then takes the item out', async () => {
        const c = await createCampaign(A);
        const kept = await register(A);
        const doomed = await register(A);
        // The add has found its goods and waits, before it writes the links, until the delete has had time to run.
        const service = ctx().app.get<CampaignGoodsService, { resolve: (...args: unknown[]) => Promise<number[]> }>(CampaignGoodsService);
        const resolve = service.resolve.bind(service);
        let found!: () => void;
        const resolved = new Promise<void>((r) => (found = r));
        let proceed!: () => void;
        const gate = new Promise<void>((r) => (proceed = r));
        const spy = jest.spyOn(service, 'resolve').mockImplementationOnce(async (...args: unknown[]) => {
          const ids = await resolve(...args);
          found();
          await gate;
          return ids;
        });
        try {
          // (.then sends a supertest request; it is lazy until then.)
          const adding = con(A)
            .addGoods(c.campaignKey, { goodsIds: [kept.id, doomed.id] })
            .then((res) => res);
          await resolved;
          const deleted = http()
            .delete(`/v1/goods/${A.accessKey}/${doomed.id}`)
            .set('Authorization', A.auth())
            .then((res) => res);
          await new Promise((r) => setTimeout(r, 500));
          proceed();
          // On MySQL the add read its goods with a shared lock: the delete waited for the add to commit.
          // (SQLite runs one write transaction at a time: the delete waits the same way.)
          expectOk(await adding);
          expectOk(await deleted);
        } finally {
          spy.mockRestore();
          proceed();
        }
        const after = await con(A).goods(c.campaignKey);
        expect(after.body.results.map((g: { goodsId: number }) => Number(g.goodsId))).toEqual([kept.id]);
      });

      it('reorders: listed ids first, the rest after in their old order; an id not in the campaign is 404 -711, an unknown one -404', async () => {
        const { key, goods: g } = await liveCampaign(A, 4);
        const res = await con(A).order(key, [g[3].id, g[1].id]);
        expectOk(res);
        expect(res.body.results.map((r: Payload) => [r.goodsId, r.sortOrder])).toEqual([
          [String(g[3].id), 1],
          [String(g[1].id), 2],
          [String(g[0].id), 3],
          [String(g[2].id), 4],
        ]);
        const outsider = await register(A);
        expectError(await con(A).order(key, [outsider.id]), 404, -711);
        expectUnknownGoods(await con(A).order(key, [g[0].id, 99999999]));
        expectError(await con(A).order(key, []), 400, -510);
      });

      it('goodsIds take ids as text too, as CampaignGoods and goods.list give them; a refusal names the element and the value sent', async () => {
        const { key, goods: g } = await liveCampaign(A, 3);
        // The ids as the campaign's goods list gives them back (text), sent straight back in a new order.
        const listed = (await con(A).goods(key)).body.results.map((r: Payload) => r.goodsId as string);
        expect(listed).toEqual(g.map((x) => String(x.id)));
        const res = await con(A).order(key, [listed[2], ` ${listed[0]} `]);
        expectOk(res);
        expect(res.body.results.map((r: Payload) => r.goodsId)).toEqual([listed[2], listed[0], listed[1]]);
        const extra = await register(A);
        expectOk(await con(A).addGoods(key, { goodsIds: [String(extra.id)] }));
        expect((await con(A).goods(key)).body.results.map((r: Payload) => r.goodsId)).toEqual([listed[2], listed[0], listed[1], String(extra.id)]);
        const refused = async (goodsIds: unknown[]) => {
          const r = await con(A).order(key, goodsIds);
          expect([r.status, r.body._s]).toEqual([400, -510]);
          return (r.body._e as string).replace(/^Invalid argument: /, '');
        };
        expect(await refused([listed[0], 'x'])).toBe("goodsIds[1] must be a positive integer; got 'x'");
        expect(await refused([0])).toBe('goodsIds[0] must be a positive integer; got 0');
        expect(await refused(['2', 1.5])).toBe('goodsIds[1] must be a positive integer; got 1.5');
        expect(await refused(['9223372036854775807'])).toBe("goodsIds[0] is too large: ids go up to 9007199254740991; got '9223372036854775807'");
        // An order names each item once: a repeat, as number or as text, is refused (adding skips repeats instead).
        expect(await refused([listed[2], listed[1], Number(listed[2])])).toBe(`goodsIds[2] repeats goodsIds[0] (${listed[2]}); list each id once`);
        expect((await con(A).goods(key)).body.results.map((r: Payload) => r.goodsId)).toEqual([listed[2], listed[0], listed[1], String(extra.id)]);
        const added = await con(A).addGoods(key, { goodsIds: ['2', null] });
        expect([added.status, added.body._e]).toEqual([400, 'Invalid argument: goodsIds[1] must be a positive integer; got null']);
      });

      it('showing: at most one item shows at a time', async () => {
        const { key, goods: g } = await liveCampaign(A, 3);
        const showing = (res: Response) => res.body.results.filter((r: Payload) => r.showingNow).map((r: Payload) => r.goodsId);
        expect(showing(await con(A).showing(key, g[0].id, true))).toEqual([String(g[0].id)]);
        expect(showing(await con(A).showing(key, g[2].id, true))).toEqual([String(g[2].id)]);
        expect(showing(await con(A).goods(key))).toEqual([String(g[2].id)]);
        // Showing it again changes nothing (no updatedAt moves).
        const shownBefore = (await con(A).goods(key)).body.results;
        expect((await con(A).showing(key, g[2].id, true)).body.results).toEqual(shownBefore);
        expect(showing(await con(A).showing(key, g[2].id, false))).toEqual([]);
        // Stopping an item that is not showing changes nothing either: its updatedAt stays (no event tells viewers of it).
        const before = (await con(A).goods(key)).body.results.find((r: Payload) => r.goodsId === String(g[1].id));
        const after = (await con(A).showing(key, g[1].id, false)).body.results.find((r: Payload) => r.goodsId === String(g[1].id));
        expect(after).toEqual(before);
        const outsider = await register(A);
        expectError(await con(A).showing(key, outsider.id, true), 404, -711);
        expectUnknownGoods(await con(A).showing(key, 99999999, true));
        expectError(await con(A).showing(key, g[0].id, 'perhaps'), 400, -510);
      });

      it('answers the goods whole, long descriptions included, as one JSON body; a conditional GET of the list is 304', async () => {
        const campaign = await createCampaign(A);
        const key = campaign.campaignKey as string;
        // 100 goods, every other one with a description of 10,000 Hangul characters (30 KB of UTF-8): the
        // answer is read a few goods at a time and written in many chunks.
        const goods: Payload[] = [];
        for (let i = 0; i < 100; i += 1)
          goods.push(await register(A, i % 2 ? {} : { description: `${i}${'가나다라마바사아자차'.repeat(1000)}`.slice(0, 10_000) }));
        const ids = goods.map((g) => g.id as number);
        const added = await con(A).addGoods(key, { goodsIds: ids });
        expectOk(added);
        const shown = await con(A).showing(key, ids[42], true);
        const listed = await con(A).goods(key);
        for (const res of [added, shown, listed]) {
          expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
          expect(res.body.totalCount).toBe(100);
          expect(res.body.results.map((r: Payload) => r.goodsId)).toEqual(ids.map(String));
          expect(res.body.results.map((r: Payload) => (r.goods as Payload).description)).toEqual(goods.map((g) => g.description));
        }
        expect(shown.body.results.filter((r: Payload) => r.showingNow).map((r: Payload) => r.goodsId)).toEqual([String(ids[42])]);
        expect(listed.body).toEqual(shown.body);
        const etag = listed.headers.etag;
        expect(etag).toMatch(/^W\/"[0-9a-f]+-/);
        const again = await con(A).goods(key).set('If-None-Match', etag);
        expect(again.status).toBe(304);
        expect(again.text ?? '').toBe('');
        // Uncompressed, the answer says its length; HEAD says the same without the body.
        const plain = await con(A).goods(key).set('Accept-Encoding', 'identity');
        expect(Number(plain.headers['content-length'])).toBe(Buffer.byteLength(JSON.stringify(plain.body)));
        expect(plain.headers.etag).toBe(etag);
        const head = await http()
          .head(cpath(A, `/${key}/goods`))
          .set('Authorization', A.auth())
          .set('Accept-Encoding', 'identity');
        expect(head.status).toBe(200);
        expect(head.headers['content-length']).toBe(plain.headers['content-length']);
        expect(head.headers.etag).toBe(etag);
      });

      it('removes an item from the campaign; afterwards it is not in the campaign (404 -711); an unknown id is 404 -404', async () => {
        const { key, goods: g } = await liveCampaign(A, 3);
        const res = await con(A).removeGoods(key, g[1].id);
        expectOk(res);
        expect(res.body.results.map((r: Payload) => r.goodsId)).toEqual([String(g[0].id), String(g[2].id)]);
        expectError(await con(A).removeGoods(key, g[1].id), 404, -711);
        expectUnknownGoods(await con(A).removeGoods(key, 99999999));
        expectError(await salesStatus(A, key, 'id', { goodsId: g[1].id, salesStatus: 'SOLD_OUT' }), 404, -711);
        // The goods item itself stays in the catalog.
        expectOk(await http().get(`/v1/goods/${A.accessKey}/sku`).query({ value: g[1].sku }).set('Authorization', A.auth()));
      });
      it('keeps sortOrder 1..n without gaps after a removal or a catalog delete; an add goes to n+1; viewers get the new places', async () => {
        const { key, goods: g } = await liveCampaign(A, 3);
        const places = (rows: Payload[]) => rows.map((r: Payload) => [Number(r.goodsId), r.sortOrder]);
        const v = await viewer(A, key);
        await v.next('campaign.snapshot');

        const removed = await con(A).removeGoods(key, g[0].id);
        expectOk(removed);
        expect(places(removed.body.results)).toEqual([
          [g[1].id, 1],
          [g[2].id, 2],
        ]);
        expect(places((await v.next('goods.list')).goods)).toEqual([
          [g[1].id, 1],
          [g[2].id, 2],
        ]);

        // Deleting a goods item from the catalog takes it out of the campaign: the rest move up.
        expectOk(await http().delete(`/v1/goods/${A.accessKey}/${g[1].id}`).set('Authorization', A.auth()));
        expect(places((await v.next('goods.list')).goods)).toEqual([[g[2].id, 1]]);
        expect(places((await con(A).goods(key)).body.results)).toEqual([[g[2].id, 1]]);

        const readded = await con(A).addGoods(key, { goodsIds: [g[0].id] });
        expectOk(readded);
        expect(places(readded.body.results)).toEqual([
          [g[2].id, 1],
          [g[0].id, 2],
        ]);
        expect(places((await v.next('goods.list')).goods)).toEqual([
          [g[2].id, 1],
          [g[0].id, 2],
        ]);

        // A new viewer's snapshot, the console detail and the public detail carry the same places.
        const late = await viewer(A, key);
        expect(places((await late.next('campaign.snapshot')).goods)).toEqual([
          [g[2].id, 1],
          [g[0].id, 2],
        ]);
        expect(places((await con(A).get(key)).body.goods)).toEqual([
          [g[2].id, 1],
          [g[0].id, 2],
        ]);
      });

      it('a catalog delete renumbers every campaign holding the item', async () => {
        const { key: k1, goods: g } = await liveCampaign(A, 3);
        const k2 = (await createCampaign(A)).campaignKey;
        expectOk(await con(A).addGoods(k2, { goodsIds: [g[2].id, g[1].id, g[0].id] }));
        expectOk(await http().delete(`/v1/goods/${A.accessKey}/${g[1].id}`).set('Authorization', A.auth()));
        const places = async (key: string) => (await con(A).goods(key)).body.results.map((r: Payload) => [Number(r.goodsId), r.sortOrder]);
        expect(await places(k1)).toEqual([
          [g[0].id, 1],
          [g[2].id, 2],
        ]);
        expect(await places(k2)).toEqual([
          [g[2].id, 1],
          [g[0].id, 2],
        ]);
      });
    });

    describe('console: status machine', () => {
      it('READY → ONAIR sets startedAt, ONAIR → CLOSED sets endedAt; every other move is 422 -422', async () => {
        const c = await createCampaign(A);
        const key = c.campaignKey;
        expectError(await con(A).status(key, 'READY'), 422, -422);
        expectError(await con(A).status(key, 'CLOSED'), 422, -422);
        const before = Date.now();
        const onair = await con(A).status(key, 'ONAIR');
        expectOk(onair);
        expect(onair.body.campaignStatus).toBe('ONAIR');
        expect(onair.body.startedAt).toBeGreaterThanOrEqual(before - 5);
        expect(onair.body.startedAt).toBeLessThanOrEqual(Date.now() + 5);
        expect(onair.body.endedAt).toBeNull();
        const again = await con(A).status(key, 'ONAIR');
        expectError(again, 422, -422);
        expect(again.body._e).toBe('An ONAIR campaign cannot become ONAIR (READY → ONAIR → CLOSED only)');
        expectError(await con(A).status(key, 'READY'), 422, -422);
        const closed = await con(A).status(key, 'CLOSED');
        expectOk(closed);
        expect(closed.body).toMatchObject({ campaignStatus: 'CLOSED', startedAt: onair.body.startedAt });
        expect(closed.body.endedAt).toBeGreaterThanOrEqual(onair.body.startedAt);
        expectError(await con(A).status(key, 'ONAIR'), 422, -422);
        expectError(await con(A).status(key, 'READY'), 422, -422);
        expectError(await con(A).status(key, 'CLOSED'), 422, -422);
        expect((await con(A).get(key)).body).toMatchObject({ campaignStatus: 'CLOSED', startedAt: onair.body.startedAt, endedAt: closed.body.endedAt });
        expectError(await con(A).status(key, 'LIVE'), 400, -510);
        expectError(
          await http()
            .put(cpath(A, `/${key}/status`))
            .set('Authorization', A.auth())
            .send({}),
          400,
          -510,
        );
        expectError(await con(A).status('NoSuchCampaign1', 'ONAIR'), 404, -710);
      });
    });

    describe('console: chat', () => {
      it('pins a notice, unpins it with an empty pinned message, posts chat lines; an empty chat line is 400', async () => {
        const c = await createCampaign(A, { operatorName: 'Desk' });
        const key = c.campaignKey;
        const pinned = await con(A).chat(key, { message: 'Free shipping until 9 pm', pinned: true, name: 'Mina' });
        expectOk(pinned);
        expect(keys(pinned.body)).toEqual(['_s', 'notice']);
        expect(pinned.body.notice).toMatchObject({ message: 'Free shipping until 9 pm', adminName: 'Mina' });
        expect(isEpochMs(pinned.body.notice.createdAt)).toBe(true);
        expect((await con(A).get(key)).body.notice).toEqual(pinned.body.notice);

        const unpinned = await con(A).chat(key, { message: '', pinned: true });
        expectOk(unpinned);
        expect(unpinned.body).toEqual({ notice: null, _s: 0 });
        expect((await con(A).get(key)).body.notice).toBeNull();

        const line = await con(A).chat(key, { message: 'Welcome!', pinned: null, name: null });
        expectOk(line);
        expect(keys(line.body)).toEqual(['_s', 'chat']);
        expect(keys(line.body.chat)).toEqual(['adminName', 'createdAt', 'id', 'message']);
        expect(line.body.chat).toMatchObject({ message: 'Welcome!', adminName: 'Desk' });
        expect(line.body.chat.id).toMatch(/^\d+$/);
        // The campaign's operator name comes before the token's name claim; the claim is used without one.
        const tokenNamed = await http()
          .post(cpath(A, `/${key}/chat`))
          .set('Authorization', A.auth({ name: 'Token Name' }))
          .send({ message: 'hi' });
        expect(tokenNamed.body.chat.adminName).toBe('Desk');
        const bare = (await createCampaign(A)).campaignKey;
        const claimNamed = await http()
          .post(cpath(A, `/${bare}/chat`))
          .set('Authorization', A.auth({ name: 'Token Name' }))
          .send({ message: 'hi' });
        expect(claimNamed.body.chat.adminName).toBe('Token Name');

        expectError(await con(A).chat(key, { message: '' }), 400, -510);
        const blank = await con(A).chat(key, { message: '   ' });
        expectError(blank, 400, -510);
        // Worded as every other refused field is.
        expect(blank.body).toMatchObject({
          _e: 'Invalid argument: message must not be empty',
          errors: [{ field: 'message', message: 'message must not be empty' }],
        });
        expectError(await con(A).chat(key, {}), 400, -510);
        const numeric = await con(A).chat(key, { message: 123 });
        expectError(numeric, 400, -510);
        expect(numeric.body.errors).toEqual([{ field: 'message', message: 'message must be a string; got 123' }]);
        expectError(await con(A).chat('NoSuchCampaign1', { message: 'x' }), 404, -710);
      });

      it('the snapshot carries the last 50 chat lines, oldest first', async () => {
        const c = await createCampaign(A);
        for (let i = 1; i <= 52; i += 1) expectOk(await con(A).chat(c.campaignKey, { message: `line ${i}` }));
        const v = await viewer(A, c.campaignKey);
        const snap = await v.next('campaign.snapshot');
        expect(snap.chat).toHaveLength(50);
        expect(snap.chat[0].message).toBe('line 3');
        expect(snap.chat[49].message).toBe('line 52');
        expect(snap.seq).toBe(52);
      });
    });

    // -------------------------------------------------------------------------------------------
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);

/** A goods id the customer has no item with: 404 -404 (not -711, which says the item exists elsewhere). */
function expectUnknownGoods(res: Response): void {
  expectError(res, 404, -404);
  expect(res.body._e).toBe('Goods not found: id 99999999');
}
