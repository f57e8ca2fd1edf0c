import type { Response } from 'supertest';
import { CampaignEvent } from '../src/campaigns/entities/campaign-event.entity';
import { Transactions } from '../src/database/transactions';
import { EVENTS_KEPT, CampaignEventLog } from '../src/campaigns/campaign-event-log';
import { LiveNotifier } from '../src/live/live-notifier';
import type { PendingEvent } from '../src/live/live-events';
import { ImageServer, startImageServer } from './support/image-server';
import { closeAllViewers, eventually, listenOn, Payload, Viewer } from './support/live-client';
import { describeEngines, TestCustomer } from './support/test-app';

/**
 * Campaigns end to end (docs/api-reference.md: campaigns console, sales status, public broadcast
 * information; docs/live-protocol.md): the console, the sales-status operations in all three parameter styles, the viewer
 * channel with real socket.io-client viewers, and the public endpoints. Single process, no Redis
 * (live-cluster.e2e-spec.ts covers two nodes sharing Redis).
 */

type Body = Record<string, unknown>;

const JSON_UTF8 = 'application/json; charset=utf-8';
const SNAPSHOT_KEYS = ['campaign', 'chat', 'goods', 'notice', 'seq'];
const SUMMARY_KEYS = [
  'adminName',
  'brand',
  'currency',
  'discountPercentage',
  'discountedPrice',
  'goodsId',
  'imageUrl',
  'name',
  'originalPrice',
  'salesStatus',
  'showingNow',
  'sku',
  'sortOrder',
  'thumbnailUrl',
  'updatedAt',
  'url',
];
const CAMPAIGN_KEYS = [
  'campaignId',
  'campaignKey',
  'campaignStatus',
  'collectionVisible',
  'createdAt',
  'endedAt',
  'liveUrl',
  'notice',
  'operatorName',
  'posterUrl',
  'scheduledAt',
  'scheduledEndAt',
  'startedAt',
  'title',
  'updatedAt',
  'userCount',
];
const CAMPAIGN_GOODS_KEYS = ['adminId', 'adminName', 'campaignId', 'createdAt', 'goods', 'goodsId', 'salesStatus', 'showingNow', 'sortOrder', 'updatedAt'];
const CAMPAIGN_GOODS_ITEM_KEYS = [
  'adminId',
  'adminName',
  'brand',
  'checked',
  'createdAt',
  'currency',
  'customDiscountedPrice',
  'customOriginalPrice',
  'customerId',
  'description',
  'discountPercentage',
  'discountedPrice',
  'id',
  'locked',
  'medias',
  'name',
  'originalPrice',
  'sku',
  'updatedAt',
  'url',
];
const CAMPAIGN_GOODS_MEDIA_KEYS = [
  'checksum',
  'createdAt',
  'customerId',
  'description',
  'height',
  'historyId',
  'id',
  'mediaType',
  'name',
  'originalUrl',
  'size',
  'thumbnails',
  'updatedAt',
  'url',
  'width',
];
const EVENT_KEYS: Record<string, string[]> = {
  'goods.salesStatus': ['adminName', 'campaignKey', 'goodsId', 'salesStatus', 'seq', 'updatedAt'],
  'goods.list': ['goods', 'seq'],
  'chat.notice': ['adminName', 'createdAt', 'message', 'seq'],
  'chat.message': ['adminName', 'createdAt', 'id', 'message', 'seq'],
  'campaign.status': ['campaignStatus', 'endedAt', 'seq', 'startedAt'],
};
const DAY = 24 * 3600 * 1000;

const keys = (o: unknown): string[] => Object.keys(o as object).sort();
const isEpochMs = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v > 1.6e12 && v < 4.1e12;

function expectError(res: Response, status: number, code: number): void {
  expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
  expect(typeof res.body._e).toBe('string');
  expect(res.headers['content-type']).toBe(JSON_UTF8);
}

function expectOk(res: Response): void {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status} ${JSON.stringify(res.body)}`);
  expect(res.headers['content-type']).toBe(JSON_UTF8);
}

/** Every logged event carries exactly the fields of live-events.ts. */
function expectEventShape(type: string, payload: Payload): void {
  expect(EVENT_KEYS[type]).toBeDefined();
  expect(keys(payload)).toEqual(EVENT_KEYS[type]);
  expect(Number.isInteger(payload.seq)).toBe(true);
  if (type === 'goods.list') for (const g of payload.goods) expect(keys(g)).toEqual(SUMMARY_KEYS);
}

let images: ImageServer;
beforeAll(async () => {
  images = await startImageServer();
});
afterAll(async () => {
  await images?.close();
});

describeEngines(
  'live campaigns',
  __filename,
  (ctx) => {
    let base = '';
    let A: TestCustomer;
    let B: TestCustomer;
    let uniq = 0;

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      A = await ctx().createCustomer('Tenant A');
      B = await ctx().createCustomer('Tenant B', 'USD');
    });
    afterEach(() => closeAllViewers());

    const http = () => ctx().http;
    const cpath = (c: TestCustomer, rest = '') => `/v1/console/${c.accessKey}/campaigns${rest}`;
    const con = (c: TestCustomer, auth = c.auth()) => ({
      create: (body: Body) => http().post(cpath(c)).set('Authorization', auth).send(body),
      list: (query: Body = {}) => http().get(cpath(c)).query(query).set('Authorization', auth),
      get: (key: string) => http().get(cpath(c, `/${key}`)).set('Authorization', auth),
      patch: (key: string, body: Body) => http().patch(cpath(c, `/${key}`)).set('Authorization', auth).send(body),
      status: (key: string, campaignStatus: string) => http().put(cpath(c, `/${key}/status`)).set('Authorization', auth).send({ campaignStatus }),
      remove: (key: string) => http().delete(cpath(c, `/${key}`)).set('Authorization', auth),
      addGoods: (key: string, body: Body) => http().post(cpath(c, `/${key}/goods`)).set('Authorization', auth).send(body),
      goods: (key: string) => http().get(cpath(c, `/${key}/goods`)).set('Authorization', auth),
      order: (key: string, goodsIds: unknown[]) => http().put(cpath(c, `/${key}/goods/order`)).set('Authorization', auth).send({ goodsIds }),
      showing: (key: string, goodsId: unknown, showingNow: unknown) =>
        http().put(cpath(c, `/${key}/goods/${goodsId}/showing`)).set('Authorization', auth).send({ showingNow }),
      removeGoods: (key: string, goodsId: unknown) => http().delete(cpath(c, `/${key}/goods/${goodsId}`)).set('Authorization', auth),
      chat: (key: string, body: Body) => http().post(cpath(c, `/${key}/chat`)).set('Authorization', auth).send(body),
    });

    type Style = 'query' | 'form' | 'json';
    const salesStatus = (c: TestCustomer, key: string, by: 'id' | 'url' | 'sku', params: Body, style: Style = 'json', auth = c.auth()) => {
      const req = http().put(`/v1/goods/${c.accessKey}/campaign/${key}/salesStatus/${by}`).set('Authorization', auth);
      if (style === 'query') return req.query(params);
      if (style === 'form') return req.type('form').send(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])));
      return req.send(params);
    };

    async function createCampaign(c: TestCustomer, body: Body = {}): Promise<Payload> {
      const res = await con(c).create({ title: 'Friday live', ...body });
      expectOk(res);
      return res.body;
    }

    async function register(c: TestCustomer, extra: Body = {}): Promise<Payload> {
      uniq += 1;
      const res = await http()
        .post(`/v1/goods/${c.accessKey}`)
        .set('Authorization', c.auth())
        .send({
          name: `Item ${uniq}`,
          brand: 'Sampletech',
          description: `Description ${uniq}`,
          sku: `LV-${uniq}`,
          url: `https://shop.example.com/live/${uniq}`,
          originalPrice: 10000 + uniq,
          discountedPrice: 9000.5,
          discountPercentage: 10,
          ...extra,
        });
      expectOk(res);
      return res.body;
    }

    /** A campaign with `n` goods in it (in registration order). */
    async function liveCampaign(c: TestCustomer, n: number, body: Body = {}): Promise<{ key: string; campaign: Payload; goods: Payload[] }> {
      const campaign = await createCampaign(c, body);
      const goods: Payload[] = [];
      for (let i = 0; i < n; i += 1) goods.push(await register(c));
      if (n) expectOk(await con(c).addGoods(campaign.campaignKey, { goodsIds: goods.map((g) => g.id) }));
      return { key: campaign.campaignKey, campaign, goods };
    }

    const viewer = (c: TestCustomer, campaignKey: string) => Viewer.connect(base, { accessKey: c.accessKey, campaignKey });
    const campaignRow = async (key: string) =>
      (await ctx().dataSource.query('SELECT id, lastSeq FROM campaigns WHERE campaignKey = ?', [key]))[0] as { id: number | string; lastSeq: number | string };

    // -------------------------------------------------------------------------------------------
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
        expect(res.body.campaignId).toMatch(/^[1-9]\d*$/);
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

    // -------------------------------------------------------------------------------------------
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
      });

      it('reorders: listed ids first, the rest after in their old order; an id not in the campaign is 404 -711', async () => {
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
        expectError(await con(A).order(key, []), 400, -510);
      });

      it('showing: at most one item shows at a time', async () => {
        const { key, goods: g } = await liveCampaign(A, 3);
        const showing = (res: Response) => res.body.results.filter((r: Payload) => r.showingNow).map((r: Payload) => r.goodsId);
        expect(showing(await con(A).showing(key, g[0].id, true))).toEqual([String(g[0].id)]);
        expect(showing(await con(A).showing(key, g[2].id, true))).toEqual([String(g[2].id)]);
        expect(showing(await con(A).goods(key))).toEqual([String(g[2].id)]);
        expect(showing(await con(A).showing(key, g[2].id, false))).toEqual([]);
        const outsider = await register(A);
        expectError(await con(A).showing(key, outsider.id, true), 404, -711);
        expectError(await con(A).showing(key, g[0].id, 'perhaps'), 400, -510);
      });

      it('removes an item from the campaign; afterwards it is not in the campaign (404 -711)', async () => {
        const { key, goods: g } = await liveCampaign(A, 3);
        const res = await con(A).removeGoods(key, g[1].id);
        expectOk(res);
        expect(res.body.results.map((r: Payload) => r.goodsId)).toEqual([String(g[0].id), String(g[2].id)]);
        expectError(await con(A).removeGoods(key, g[1].id), 404, -711);
        expectError(await salesStatus(A, key, 'id', { goodsId: g[1].id, salesStatus: 'SOLD_OUT' }), 404, -711);
        // The goods item itself stays in the catalog.
        expectOk(await http().get(`/v1/goods/${A.accessKey}/sku`).query({ value: g[1].sku }).set('Authorization', A.auth()));
      });
    });

    // -------------------------------------------------------------------------------------------
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
        expectError(await con(A).status(key, 'ONAIR'), 422, -422);
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
        expectError(await http().put(cpath(A, `/${key}/status`)).set('Authorization', A.auth()).send({}), 400, -510);
        expectError(await con(A).status('NoSuchCampaign1', 'ONAIR'), 404, -710);
      });
    });

    // -------------------------------------------------------------------------------------------
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

        const line = await con(A).chat(key, { message: 'Welcome!' });
        expectOk(line);
        expect(keys(line.body)).toEqual(['_s', 'chat']);
        expect(keys(line.body.chat)).toEqual(['adminName', 'createdAt', 'id', 'message']);
        expect(line.body.chat).toMatchObject({ message: 'Welcome!', adminName: 'Desk' });
        expect(line.body.chat.id).toMatch(/^\d+$/);
        // The campaign's operator name comes before the token's name claim; the claim is used without one.
        const tokenNamed = await http().post(cpath(A, `/${key}/chat`)).set('Authorization', A.auth({ name: 'Token Name' })).send({ message: 'hi' });
        expect(tokenNamed.body.chat.adminName).toBe('Desk');
        const bare = (await createCampaign(A)).campaignKey;
        const claimNamed = await http().post(cpath(A, `/${bare}/chat`)).set('Authorization', A.auth({ name: 'Token Name' })).send({ message: 'hi' });
        expect(claimNamed.body.chat.adminName).toBe('Token Name');

        expectError(await con(A).chat(key, { message: '' }), 400, -510);
        expectError(await con(A).chat(key, { message: '   ' }), 400, -510);
        expectError(await con(A).chat(key, {}), 400, -510);
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
    describe('sales status', () => {
      it('answers the CampaignGoods object exactly as documented (media included)', async () => {
        const mediaUrl = images.url1('/photo.jpg');
        const goods = await register(A, { mediaUrl, description: null });
        expect(goods.medias).toHaveLength(1);
        const c = await createCampaign(A, { operatorName: 'Desk' });
        expectOk(await con(A).addGoods(c.campaignKey, { goodsIds: [goods.id] }));
        const before = Date.now();
        const res = await salesStatus(A, c.campaignKey, 'id', { goodsId: goods.id, salesStatus: 'SOLD_OUT' }, 'query', A.auth({ sub: 'op-7' }));
        expectOk(res);
        const body = res.body;
        expect(keys(body)).toEqual(CAMPAIGN_GOODS_KEYS);
        expect(body).toMatchObject({
          campaignId: c.campaignId,
          goodsId: String(goods.id),
          sortOrder: 1,
          showingNow: false,
          salesStatus: 'SOLD_OUT',
          adminName: 'Desk',
          adminId: 'op-7',
        });
        expect(isEpochMs(body.createdAt)).toBe(true);
        expect(body.updatedAt).toBeGreaterThanOrEqual(before - 5);
        expect(body.updatedAt).toBeGreaterThanOrEqual(body.createdAt);

        const item = body.goods;
        expect(keys(item)).toEqual(CAMPAIGN_GOODS_ITEM_KEYS);
        expect(item).toMatchObject({
          id: String(goods.id),
          customerId: String(A.id),
          name: goods.name,
          brand: 'Sampletech',
          description: null,
          url: goods.url,
          sku: goods.sku,
          originalPrice: goods.originalPrice,
          discountedPrice: 9000.5,
          customOriginalPrice: null,
          customDiscountedPrice: null,
          currency: 'KRW',
          discountPercentage: 10,
          checked: false,
          locked: false,
        });
        expect(typeof item.adminId).toBe('string');
        expect(typeof item.adminName).toBe('string');
        expect(isEpochMs(item.createdAt) && isEpochMs(item.updatedAt)).toBe(true);

        expect(item.medias).toHaveLength(1);
        const media = item.medias[0];
        const stored = goods.medias[0];
        expect(keys(media)).toEqual(CAMPAIGN_GOODS_MEDIA_KEYS);
        expect(media).toMatchObject({
          id: String(stored.id),
          customerId: String(A.id),
          mediaType: 'IMAGE',
          name: null,
          description: null,
          originalUrl: mediaUrl,
          url: stored.url,
          width: 800,
          height: 600,
          size: String(stored.size),
        });
        expect(typeof media.historyId).toBe('string');
        expect(media.checksum === null || typeof media.checksum === 'string').toBe(true);
        expect(isEpochMs(media.createdAt) && isEpochMs(media.updatedAt)).toBe(true);
        expect(media.thumbnails.map((t: Payload) => [t.width, t.height, t.original])).toEqual([
          [120, 90, false],
          [240, 180, false],
          [480, 360, false],
        ]);
        for (const t of media.thumbnails) {
          expect(t.imageUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\//);
          expect(Number.isInteger(t.size)).toBe(true);
        }

        // The console list shows the same object.
        const listed = (await con(A).goods(c.campaignKey)).body.results[0];
        expect(listed).toEqual(body);
      });

      it.each([
        ['id', 'query'],
        ['id', 'form'],
        ['id', 'json'],
        ['url', 'query'],
        ['url', 'form'],
        ['url', 'json'],
        ['sku', 'query'],
        ['sku', 'form'],
        ['sku', 'json'],
      ] as const)('locates the item by %s with parameters as %s', async (by, style) => {
        const { key, goods } = await liveCampaign(A, 2);
        const target = goods[1];
        const locator = by === 'id' ? { goodsId: target.id } : by === 'url' ? { url: target.url } : { sku: target.sku };
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        for (const status of ['ALMOST_SOLD_OUT', 'SOLD_OUT', 'ON_SALE']) {
          const res = await salesStatus(A, key, by, { ...locator, salesStatus: status, name: `Op ${style}` }, style);
          expectOk(res);
          expect(res.body).toMatchObject({ goodsId: String(target.id), salesStatus: status, adminName: `Op ${style}` });
          const event = await v.next('goods.salesStatus');
          expectEventShape('goods.salesStatus', event);
          expect(event).toMatchObject({ campaignKey: key, goodsId: String(target.id), salesStatus: status, adminName: `Op ${style}`, updatedAt: res.body.updatedAt });
        }
        expect(v.lastSeq).toBe(snap.seq + 3);
        const listed = (await con(A).goods(key)).body.results;
        expect(listed.map((r: Payload) => r.salesStatus)).toEqual(['ON_SALE', 'ON_SALE']);
      });

      it('adminName: `name`, else the campaign’s operatorName, else the token’s name claim (else null); adminId: the token’s sub', async () => {
        const { key, goods } = await liveCampaign(A, 1, { operatorName: 'Campaign Op' });
        const g = goods[0];
        const set = (auth: string, extra: Body = {}) => salesStatus(A, key, 'sku', { sku: g.sku, salesStatus: 'SOLD_OUT', ...extra }, 'form', auth);
        const withName = await set(A.auth({ name: 'Token Op', sub: 'u-1' }), { name: 'Param Op' });
        expect(withName.body).toMatchObject({ adminName: 'Param Op', adminId: 'u-1' });
        const fromCampaign = await set(A.auth({ name: 'Token Op', sub: 'u-2' }));
        expect(fromCampaign.body).toMatchObject({ adminName: 'Campaign Op', adminId: 'u-2' });
        expect(typeof (await set(A.auth())).body.adminId).toBe('string');

        const bare = await liveCampaign(A, 1);
        const fromToken = await salesStatus(A, bare.key, 'id', { goodsId: bare.goods[0].id, salesStatus: 'SOLD_OUT' }, 'json', A.auth({ name: 'Token Op' }));
        expect(fromToken.body.adminName).toBe('Token Op');
        const none = await salesStatus(A, bare.key, 'id', { goodsId: bare.goods[0].id, salesStatus: 'SOLD_OUT' });
        expectOk(none);
        expect(none.body.adminName).toBeNull();
      });

      it('errors: unknown campaign -710, unknown goods -404, goods not in the campaign -711, bad parameters -510', async () => {
        const { key, goods } = await liveCampaign(A, 1);
        const outsider = await register(A);
        const theirs = await register(B);
        const g = goods[0];
        expectError(await salesStatus(A, 'NoSuchCampaign1', 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT' }), 404, -710);
        expectError(await salesStatus(A, key, 'id', { goodsId: 987654321, salesStatus: 'SOLD_OUT' }), 404, -404);
        expectError(await salesStatus(A, key, 'url', { url: 'https://shop.example.com/none', salesStatus: 'SOLD_OUT' }, 'form'), 404, -404);
        expectError(await salesStatus(A, key, 'sku', { sku: 'NO-SUCH', salesStatus: 'SOLD_OUT' }, 'query'), 404, -404);
        expectError(await salesStatus(A, key, 'id', { goodsId: theirs.id, salesStatus: 'SOLD_OUT' }), 404, -404);
        expectError(await salesStatus(A, key, 'sku', { sku: theirs.sku, salesStatus: 'SOLD_OUT' }), 404, -404);
        expectError(await salesStatus(A, key, 'id', { goodsId: outsider.id, salesStatus: 'SOLD_OUT' }), 404, -711);
        expectError(await salesStatus(A, key, 'url', { url: outsider.url, salesStatus: 'SOLD_OUT' }, 'query'), 404, -711);
        for (const style of ['query', 'form', 'json'] as const) {
          expectError(await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'GONE' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'id', { goodsId: g.id }, style), 400, -510);
          expectError(await salesStatus(A, key, 'id', { salesStatus: 'SOLD_OUT' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'url', { salesStatus: 'SOLD_OUT' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'sku', { salesStatus: 'SOLD_OUT' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'id', { goodsId: 'abc', salesStatus: 'SOLD_OUT' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT', notify: 'perhaps' }, style), 400, -510);
        }
        expectError(await http().put(`/v1/goods/${A.accessKey}/campaign/${key}/salesStatus/id`).query({ goodsId: g.id, salesStatus: 'SOLD_OUT' }), 401, -102);
        // Nothing above changed the item.
        expect((await con(A).goods(key)).body.results[0].salesStatus).toBe('ON_SALE');
      });

      it.each(['query', 'form', 'json'] as const)(
        'notify=false (%s) stores the status without pushing it; notice and chat message are still stored and pushed',
        async (style) => {
          const { key, goods } = await liveCampaign(A, 2, { operatorName: 'Desk' });
          const g = goods[0];
          const v = await viewer(A, key);
          const snap = await v.next('campaign.snapshot');

          const silent = await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT', notify: false }, style);
          expectOk(silent);
          expect(silent.body.salesStatus).toBe('SOLD_OUT');
          await v.settle(300);
          expect(v.unread).toEqual([]);
          expect((await con(A).goods(key)).body.results[0].salesStatus).toBe('SOLD_OUT');
          const late = await viewer(A, key);
          const lateSnap = await late.next('campaign.snapshot');
          expect(lateSnap.seq).toBe(snap.seq);
          expect(lateSnap.goods[0]).toMatchObject({ goodsId: String(g.id), salesStatus: 'SOLD_OUT', adminName: 'Desk' });

          const withMessages = await salesStatus(
            A,
            key,
            'id',
            { goodsId: g.id, salesStatus: 'ALMOST_SOLD_OUT', notify: false, adminChatNotice: 'Last few!', chatMessage: 'Hurry up' },
            style,
          );
          expectOk(withMessages);
          const [notice, chat] = await v.take(2);
          expect(notice.type).toBe('chat.notice');
          expectEventShape('chat.notice', notice.payload);
          expect(notice.payload).toMatchObject({ seq: snap.seq + 1, message: 'Last few!', adminName: 'Desk' });
          expect(chat.type).toBe('chat.message');
          expectEventShape('chat.message', chat.payload);
          expect(chat.payload).toMatchObject({ seq: snap.seq + 2, message: 'Hurry up', adminName: 'Desk' });
          await v.settle(200);
          expect(v.unread).toEqual([]);
          const stored = await con(A).get(key);
          expect(stored.body.notice).toMatchObject({ message: 'Last few!', adminName: 'Desk' });
          expect(stored.body.goods[0].salesStatus).toBe('ALMOST_SOLD_OUT');
          const third = await viewer(A, key);
          const thirdSnap = await third.next('campaign.snapshot');
          expect(thirdSnap.chat.map((l: Payload) => l.message)).toEqual(['Hurry up']);
          expect(thirdSnap.notice).toMatchObject({ message: 'Last few!' });
        },
      );

      it('notify (default true) pushes the status, then the pinned notice, then the chat message, with consecutive seqs', async () => {
        const { key, goods } = await liveCampaign(A, 1);
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        const res = await salesStatus(A, key, 'url', { url: goods[0].url, salesStatus: 'SOLD_OUT', name: 'Mina', adminChatNotice: 'Sold out!', chatMessage: 'Thank you' }, 'form');
        expectOk(res);
        const events = await v.take(3);
        expect(events.map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.salesStatus', snap.seq + 1],
          ['chat.notice', snap.seq + 2],
          ['chat.message', snap.seq + 3],
        ]);
        expect(events[1].payload).toMatchObject({ message: 'Sold out!', adminName: 'Mina' });
        expect(events[2].payload).toMatchObject({ message: 'Thank you', adminName: 'Mina' });
      });
    });

    // -------------------------------------------------------------------------------------------
    describe('viewers', () => {
      it('get a snapshot on join: {seq, campaign, goods, notice, chat}', async () => {
        const { key, goods } = await liveCampaign(A, 2, { description: 'About tonight', operatorName: 'Desk', collectionVisible: true });
        expectOk(await con(A).chat(key, { message: 'Pinned!', pinned: true }));
        expectOk(await con(A).chat(key, { message: 'Welcome' }));
        expectOk(await salesStatus(A, key, 'id', { goodsId: goods[1].id, salesStatus: 'SOLD_OUT' }));
        const row = await campaignRow(key);
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        expect(keys(snap)).toEqual(SNAPSHOT_KEYS);
        // 1 goods.list (add) + notice + chat + salesStatus
        expect(snap.seq).toBe(4);
        expect(snap.seq).toBe(Number(row.lastSeq));
        expect(keys(snap.campaign)).toEqual([...CAMPAIGN_KEYS, 'description'].sort());
        expect(snap.campaign).toMatchObject({ campaignKey: key, description: 'About tonight', campaignStatus: 'READY', operatorName: 'Desk' });
        expect(snap.campaign.userCount).toBeGreaterThanOrEqual(1);
        expect(snap.goods.map((g: Payload) => [g.goodsId, g.sortOrder, g.salesStatus])).toEqual([
          [String(goods[0].id), 1, 'ON_SALE'],
          [String(goods[1].id), 2, 'SOLD_OUT'],
        ]);
        for (const g of snap.goods) expect(keys(g)).toEqual(SUMMARY_KEYS);
        expect(snap.notice).toMatchObject({ message: 'Pinned!', adminName: 'Desk' });
        expect(snap.chat).toEqual([expect.objectContaining({ message: 'Welcome', adminName: 'Desk' })]);
        expect(snap.chat[0].id).toMatch(/^\d+$/);
      });

      it('receive every event type, in order, seq +1 each with no gap across mixed operations; two viewers see the same stream', async () => {
        const { key, goods: g } = await liveCampaign(A, 3, { operatorName: 'Desk' });
        const extra = await register(A);
        const doomed = await register(A);
        const v1 = await viewer(A, key);
        const v2 = await viewer(A, key);
        const s0 = (await v1.next('campaign.snapshot')).seq;
        expect((await v2.next('campaign.snapshot')).seq).toBe(s0);

        const steps: Array<[string, () => Promise<Response>, (p: Payload) => void]> = [
          [
            'goods.list',
            () => con(A).addGoods(key, { goodsIds: [extra.id, doomed.id] }),
            (p) => expect(p.goods.map((x: Payload) => x.goodsId)).toEqual([g[0].id, g[1].id, g[2].id, extra.id, doomed.id].map(String)),
          ],
          [
            'goods.salesStatus',
            () => salesStatus(A, key, 'id', { goodsId: g[0].id, salesStatus: 'ALMOST_SOLD_OUT' }),
            (p) => expect(p).toMatchObject({ goodsId: String(g[0].id), salesStatus: 'ALMOST_SOLD_OUT', adminName: 'Desk', campaignKey: key }),
          ],
          [
            'goods.list',
            () => con(A).order(key, [g[2].id]),
            (p) => expect(p.goods.map((x: Payload) => [x.goodsId, x.sortOrder])).toEqual([g[2].id, g[0].id, g[1].id, extra.id, doomed.id].map((id, i) => [String(id), i + 1])),
          ],
          [
            'goods.list',
            () => con(A).showing(key, g[1].id, true),
            (p) => expect(p.goods.filter((x: Payload) => x.showingNow).map((x: Payload) => x.goodsId)).toEqual([String(g[1].id)]),
          ],
          ['chat.notice', () => con(A).chat(key, { message: 'Notice', pinned: true }), (p) => expect(p).toMatchObject({ message: 'Notice', adminName: 'Desk' })],
          ['chat.message', () => con(A).chat(key, { message: 'Hello', name: 'Mina' }), (p) => expect(p).toMatchObject({ message: 'Hello', adminName: 'Mina' })],
          [
            'campaign.status',
            () => con(A).status(key, 'ONAIR'),
            (p) => {
              expect(p.campaignStatus).toBe('ONAIR');
              expect(isEpochMs(p.startedAt)).toBe(true);
              expect(p.endedAt).toBeNull();
            },
          ],
          ['goods.list', () => con(A).removeGoods(key, g[0].id), (p) => expect(p.goods.map((x: Payload) => x.goodsId)).not.toContain(String(g[0].id))],
          [
            'goods.list',
            () => http().delete(`/v1/goods/${A.accessKey}/${doomed.id}`).set('Authorization', A.auth()),
            (p) => expect(p.goods.map((x: Payload) => x.goodsId)).toEqual([g[2].id, g[1].id, extra.id].map(String)),
          ],
          ['chat.notice', () => con(A).chat(key, { message: '', pinned: true }), (p) => expect(p.message).toBe('')],
          ['goods.salesStatus', () => salesStatus(A, key, 'sku', { sku: extra.sku, salesStatus: 'SOLD_OUT' }, 'query'), (p) => expect(p.goodsId).toBe(String(extra.id))],
          [
            'campaign.status',
            () => con(A).status(key, 'CLOSED'),
            (p) => {
              expect(p.campaignStatus).toBe('CLOSED');
              expect(isEpochMs(p.startedAt) && isEpochMs(p.endedAt)).toBe(true);
            },
          ],
        ];
        for (const [i, [type, act, check]] of steps.entries()) {
          const res = await act();
          expectOk(res);
          for (const v of [v1, v2]) {
            const event = await v.nextEvent();
            expect([event.type, event.payload.seq]).toEqual([type, s0 + i + 1]);
            expectEventShape(type, event.payload);
            check(event.payload);
          }
        }
        // A no-op (only goods already in) pushes nothing and takes no seq.
        expectOk(await con(A).addGoods(key, { goodsIds: [extra.id] }));
        await v1.settle(300);
        expect(v1.unread).toEqual([]);
        expect(v2.unread).toEqual([]);
        expect(Number((await campaignRow(key)).lastSeq)).toBe(s0 + steps.length);
        const late = await viewer(A, key);
        expect((await late.next('campaign.snapshot')).seq).toBe(s0 + steps.length);
      });

      it('deleting a goods item from the catalog pushes goods.list to every campaign it was in, and nothing elsewhere', async () => {
        const one = await liveCampaign(A, 2);
        const two = await liveCampaign(A, 0);
        const other = await liveCampaign(A, 1);
        const shared = one.goods[1];
        expectOk(await con(A).addGoods(two.key, { goodsIds: [shared.id] }));
        const [v1, v2, v3] = [await viewer(A, one.key), await viewer(A, two.key), await viewer(A, other.key)];
        const seqs = [(await v1.next('campaign.snapshot')).seq, (await v2.next('campaign.snapshot')).seq, (await v3.next('campaign.snapshot')).seq];
        expectOk(await http().delete(`/v1/goods/${A.accessKey}/sku`).query({ value: shared.sku }).set('Authorization', A.auth()));
        expect(await v1.next('goods.list')).toEqual({ seq: seqs[0] + 1, goods: [expect.objectContaining({ goodsId: String(one.goods[0].id) })] });
        expect(await v2.next('goods.list')).toEqual({ seq: seqs[1] + 1, goods: [] });
        const loner = await register(A);
        expectOk(await http().delete(`/v1/goods/${A.accessKey}/${loner.id}`).set('Authorization', A.auth()));
        await v3.settle(300);
        expect([v1.unread, v2.unread, v3.unread]).toEqual([[], [], []]);
        expect((await con(A).goods(two.key)).body.totalCount).toBe(0);
      });

      it('concurrent changes get distinct consecutive seqs, delivered in ascending order', async () => {
        const { key, goods } = await liveCampaign(A, 5);
        const v = await viewer(A, key);
        const s0 = (await v.next('campaign.snapshot')).seq;
        const statuses = ['ON_SALE', 'ALMOST_SOLD_OUT', 'SOLD_OUT'];
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => salesStatus(A, key, 'id', { goodsId: goods[i % 5].id, salesStatus: statuses[i % 3] })),
        );
        for (const r of results) expectOk(r);
        const events = await v.take(20);
        expect(events.map((e) => e.type)).toEqual(Array(20).fill('goods.salesStatus'));
        expect(events.map((e) => e.payload.seq)).toEqual(Array.from({ length: 20 }, (_, i) => s0 + i + 1));
        await v.settle(200);
        expect(v.unread).toEqual([]);
      });

      it('long-polling and upgrading viewers get the same events in the same order as WebSocket viewers (written to directly)', async () => {
        const { key, goods } = await liveCampaign(A, 3);
        const auth = { accessKey: A.accessKey, campaignKey: key };
        const notifier = ctx().app.get(LiveNotifier);
        const before = notifier.writes;
        const ws = await Viewer.connect(base, auth, 10_000, 'websocket');
        const polling = await Viewer.connect(base, auth, 10_000, 'polling');
        const upgrading = await Viewer.connect(base, auth, 10_000, 'upgrade');
        const s0 = (await ws.next('campaign.snapshot')).seq;
        for (const v of [polling, upgrading]) expect((await v.next('campaign.snapshot')).seq).toBe(s0);
        // A burst while the third viewer may still be upgrading from polling to WebSocket.
        const statuses = ['SOLD_OUT', 'ALMOST_SOLD_OUT', 'ON_SALE'];
        const results = await Promise.all(
          Array.from({ length: 15 }, (_, i) => salesStatus(A, key, 'id', { goodsId: goods[i % 3].id, salesStatus: statuses[i % 3] })),
        );
        for (const r of results) expectOk(r);
        const expected = Array.from({ length: 15 }, (_, i) => s0 + i + 1);
        for (const v of [ws, polling, upgrading]) {
          const events = await v.take(15);
          expect(events.map((e) => [e.type, e.payload.seq])).toEqual(expected.map((seq) => ['goods.salesStatus', seq]));
        }
        expect(polling.socket.io.engine.transport.name).toBe('polling');
        const after = notifier.writes;
        // The WebSocket viewer's snapshot and 15 events went straight to its WebSocket; the polling
        // viewer's 16 through socket.io's queue. (If engine.io's internals change, the direct count
        // stays put and this fails, instead of every viewer silently taking the slower path.)
        expect(after.direct - before.direct).toBeGreaterThanOrEqual(16);
        expect(after.engine - before.engine).toBeGreaterThanOrEqual(16);
        expect(after.direct - before.direct + (after.engine - before.engine)).toBe(3 * 16);
      });

      it('a viewer that disconnects, misses three events and reconnects gets exactly those three on resync', async () => {
        const { key, goods } = await liveCampaign(A, 2);
        const steady = await viewer(A, key);
        const v = await viewer(A, key);
        const s0 = (await v.next('campaign.snapshot')).seq;
        await steady.next('campaign.snapshot');
        expectOk(await con(A).chat(key, { message: 'seen' }));
        expect((await v.next('chat.message')).seq).toBe(s0 + 1);
        await steady.next('chat.message');
        const lastSeen = v.lastSeq;
        v.close();

        expectOk(await salesStatus(A, key, 'id', { goodsId: goods[0].id, salesStatus: 'SOLD_OUT' }));
        expectOk(await con(A).showing(key, goods[1].id, true));
        expectOk(await con(A).chat(key, { message: 'missed' }));
        const live = await steady.take(3);

        const back = await viewer(A, key);
        const snap = await back.next('campaign.snapshot');
        expect(snap.seq).toBe(lastSeen + 3);
        back.resync(lastSeen);
        const replay = await back.take(3);
        expect(replay.map((e) => [e.type, e.payload])).toEqual(live.map((e) => [e.type, e.payload]));
        expect(replay.map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.salesStatus', lastSeen + 1],
          ['goods.list', lastSeen + 2],
          ['chat.message', lastSeen + 3],
        ]);
        await back.settle(300);
        expect(back.unread).toEqual([]);

        // Nothing missed: nothing sent. A later gap (simulated: ask again for the last two) replays just those.
        back.resync(lastSeen + 3);
        back.resync(lastSeen + 1000);
        await back.settle(300);
        expect(back.unread).toEqual([]);
        back.resync(lastSeen + 1);
        expect((await back.take(2)).map((e) => e.payload.seq)).toEqual([lastSeen + 2, lastSeen + 3]);
      });

      it('a resync from further back than the kept log gets a fresh snapshot; a malformed one too', async () => {
        const { key, goods } = await liveCampaign(A, 1);
        for (const s of ['SOLD_OUT', 'ON_SALE', 'SOLD_OUT']) expectOk(await salesStatus(A, key, 'id', { goodsId: goods[0].id, salesStatus: s }));
        const row = await campaignRow(key);
        const last = Number(row.lastSeq);
        expect(last).toBe(4);
        // Age out the first two events, as the log trimming would.
        await ctx().dataSource.query('DELETE FROM campaign_events WHERE campaignId = ? AND seq <= ?', [row.id, 2]);
        const v = await viewer(A, key);
        await v.next('campaign.snapshot');
        v.resync(0);
        const fresh = await v.next('campaign.snapshot');
        expect(fresh.seq).toBe(last);
        expect(fresh.goods[0].salesStatus).toBe('SOLD_OUT');
        v.resync(1);
        expect((await v.next('campaign.snapshot')).seq).toBe(last);
        v.resync(2);
        expect((await v.take(2)).map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.salesStatus', 3],
          ['goods.salesStatus', 4],
        ]);
        for (const bad of ['abc', -1, 1.5, null]) {
          v.resync(bad);
          expect((await v.next('campaign.snapshot')).seq).toBe(last);
        }
        await v.settle(200);
        expect(v.unread).toEqual([]);
      });

      it(`the log keeps the last EVENTS_KEPT (${EVENTS_KEPT}) events per campaign: resync within them replays, before them snapshots`, async () => {
        const { key } = await liveCampaign(A, 0);
        const row = await campaignRow(key);
        const campaignId = Number(row.id);
        const total = EVENTS_KEPT + 100;
        const events = Array.from({ length: total }, (_, i): PendingEvent => ({
          type: 'chat.message',
          payload: { id: String(i + 1), message: `m${i + 1}`, adminName: null, createdAt: Date.now() },
        }));
        const log = ctx().app.get(CampaignEventLog);
        const recorded = await ctx().app.get(Transactions).run((em) => log.record(em, campaignId, events));
        expect(recorded.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
        expect(await ctx().dataSource.getRepository(CampaignEvent).count({ where: { campaignId } })).toBe(EVENTS_KEPT);

        const v = await viewer(A, key);
        expect((await v.next('campaign.snapshot')).seq).toBe(total);
        v.resync(total - EVENTS_KEPT);
        const replay = await v.take(EVENTS_KEPT);
        expect(replay[0].payload).toMatchObject({ seq: total - EVENTS_KEPT + 1, message: `m${total - EVENTS_KEPT + 1}` });
        expect(replay.map((e) => e.payload.seq)).toEqual(Array.from({ length: EVENTS_KEPT }, (_, i) => total - EVENTS_KEPT + 1 + i));
        v.resync(total - EVENTS_KEPT - 1);
        expect((await v.next('campaign.snapshot')).seq).toBe(total);
        v.resync(0);
        expect((await v.next('campaign.snapshot')).seq).toBe(total);
      });

      it('are refused with connect_error for an unknown campaign, a wrong accessKey, or no keys', async () => {
        const a = await createCampaign(A);
        const b = await createCampaign(B);
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: 'NoSuchCampaign1' })).toMatch(/not found/i);
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: b.campaignKey })).toMatch(/not found/i);
        expect(await Viewer.refused(base, { accessKey: B.accessKey, campaignKey: a.campaignKey })).toMatch(/not found/i);
        expect(await Viewer.refused(base, { accessKey: 'NoSuchAccessKey000000', campaignKey: a.campaignKey })).toMatch(/\S/);
        expect(await Viewer.refused(base, {})).toMatch(/\S/);
        // The right pair is admitted.
        const ok = await viewer(B, b.campaignKey);
        expect((await ok.next('campaign.snapshot')).campaign.campaignKey).toBe(b.campaignKey);
      });

      it('the Socket.IO handshake answers CORS for any origin', async () => {
        const res = await http().get('/socket.io/').query({ EIO: '4', transport: 'polling' }).set('Origin', 'https://player.example.com');
        // The default namespace path; the /live namespace shares the engine (and its CORS settings).
        expect(res.status).toBe(200);
        expect(res.headers['access-control-allow-origin']).toBe('https://player.example.com');
      });
    });

    // -------------------------------------------------------------------------------------------
    describe('tenant isolation', () => {
      it("A's token never opens B's campaigns: B's path is 401, B's campaignKey under A's path is 404 -710", async () => {
        const b = await liveCampaign(B, 1);
        const bViewer = await viewer(B, b.key);
        await bViewer.next('campaign.snapshot');
        const aOnB = con(B, A.auth());
        expectError(await aOnB.get(b.key), 401, -102);
        expectError(await aOnB.list(), 401, -102);
        expectError(await aOnB.status(b.key, 'ONAIR'), 401, -102);
        expectError(await aOnB.chat(b.key, { message: 'x' }), 401, -102);
        expectError(await aOnB.remove(b.key), 401, -102);
        expectError(await salesStatus(B, b.key, 'id', { goodsId: b.goods[0].id, salesStatus: 'SOLD_OUT' }, 'json', A.auth()), 401, -102);

        const aOwn = con(A);
        expectError(await aOwn.get(b.key), 404, -710);
        expectError(await aOwn.patch(b.key, { title: 'mine' }), 404, -710);
        expectError(await aOwn.status(b.key, 'ONAIR'), 404, -710);
        expectError(await aOwn.goods(b.key), 404, -710);
        expectError(await aOwn.addGoods(b.key, { goodsIds: [b.goods[0].id] }), 404, -710);
        expectError(await aOwn.order(b.key, [b.goods[0].id]), 404, -710);
        expectError(await aOwn.showing(b.key, b.goods[0].id, true), 404, -710);
        expectError(await aOwn.removeGoods(b.key, b.goods[0].id), 404, -710);
        expectError(await aOwn.chat(b.key, { message: 'x' }), 404, -710);
        expectError(await aOwn.remove(b.key), 404, -710);
        expectError(await salesStatus(A, b.key, 'id', { goodsId: b.goods[0].id, salesStatus: 'SOLD_OUT' }), 404, -710);
        expect((await aOwn.list()).body.results.map((c: Payload) => c.campaignKey)).not.toContain(b.key);

        await bViewer.settle(300);
        expect(bViewer.unread).toEqual([]);
        const still = await con(B).get(b.key);
        expect(still.body).toMatchObject({ campaignStatus: 'READY', title: 'Friday live' });
        expect(still.body.goods[0].salesStatus).toBe('ON_SALE');
        expect(still.body.goods[0].currency).toBe('USD');
      });
    });

    // -------------------------------------------------------------------------------------------
    describe('public broadcast information (no token)', () => {
      let P: TestCustomer;
      const at: Record<string, Payload> = {};
      const now = Date.now();
      const pub = (path: string, query: Body = {}) => http().get(`/v1/campaigns/${P.accessKey}${path}`).query(query);
      const order = (res: Response) => res.body.results.map((c: Payload) => c.title);

      beforeAll(async () => {
        P = await ctx().createCustomer('Public');
        const make = async (title: string, scheduledAt: number | null, visible: boolean, status: 'READY' | 'ONAIR' | 'CLOSED', goods = 0) => {
          const c = await liveCampaign(P, goods, { title, scheduledAt, collectionVisible: visible, description: `${title} description` });
          if (status !== 'READY') expectOk(await con(P).status(c.key, 'ONAIR'));
          if (status === 'CLOSED') expectOk(await con(P).status(c.key, 'CLOSED'));
          at[title] = { ...c.campaign, goods: c.goods };
        };
        await make('closed-2d', now - 2 * DAY, true, 'CLOSED');
        await make('late-ready-1d', now - DAY, true, 'READY');
        await make('onair', now - 3600_000, true, 'ONAIR', 2);
        await make('private-1d', now + DAY, false, 'READY');
        await make('next-2d', now + 2 * DAY, true, 'READY', 1);
        await make('later-5d', now + 5 * DAY, true, 'READY');
      });

      it('lists only collection-visible campaigns, ordered by scheduledAt, summary form, with a Cache-Control header', async () => {
        const res = await pub('');
        expectOk(res);
        expect(res.headers['cache-control']).toMatch(/max-age=\d+/);
        expect(res.body._s).toBe(0);
        expect(res.body.totalCount).toBe(5);
        expect(order(res)).toEqual(['closed-2d', 'late-ready-1d', 'onair', 'next-2d', 'later-5d']);
        for (const c of res.body.results) {
          expect(keys(c)).toEqual(CAMPAIGN_KEYS);
          expect(c.collectionVisible).toBe(true);
        }
        const nobody = await http().get('/v1/campaigns/NoSuchAccessKey000000');
        expectOk(nobody);
        expect(nobody.body).toEqual({ results: [], totalCount: 0, _s: 0 });
      });

      it('filters by status (comma list) and by scheduledAt from/to, in epoch ms or ISO-8601', async () => {
        expect(order(await pub('', { status: 'READY,ONAIR' }))).toEqual(['late-ready-1d', 'onair', 'next-2d', 'later-5d']);
        expect(order(await pub('', { status: 'CLOSED' }))).toEqual(['closed-2d']);
        expect(order(await pub('', { status: 'onair' }))).toEqual(['onair']);
        expectError(await pub('', { status: 'READY,LIVE' }), 400, -510);
        const from = now - 1.5 * DAY;
        const to = now + 3 * DAY;
        expect(order(await pub('', { from, to }))).toEqual(['late-ready-1d', 'onair', 'next-2d']);
        expect(order(await pub('', { from: new Date(from).toISOString(), to: new Date(to).toISOString() }))).toEqual(['late-ready-1d', 'onair', 'next-2d']);
        expect(order(await pub('', { from: now }))).toEqual(['next-2d', 'later-5d']);
        expect(order(await pub('', { to: new Date(now).toISOString() }))).toEqual(['closed-2d', 'late-ready-1d', 'onair']);
        const counted = await pub('', { from, to, status: 'READY' });
        expect(order(counted)).toEqual(['late-ready-1d', 'next-2d']);
        expect(counted.body.totalCount).toBe(2);
        expectError(await pub('', { from: 'yesterday' }), 400, -510);
      });

      it('pages with page/count (count above 100 is served as 100)', async () => {
        const res = await pub('', { page: 2, count: 2 });
        expectOk(res);
        expect(order(res)).toEqual(['onair', 'next-2d']);
        expect(res.body.totalCount).toBe(5);
        expect(order(await pub('', { page: 3, count: 2 }))).toEqual(['later-5d']);
        expectOk(await pub('', { count: 100 }));
        expectOk(await pub('', { count: 101 }));
        expectError(await pub('', { count: 0 }), 400, -510);
        expectError(await pub('', { page: 0 }), 400, -510);
      });

      it('detail=true adds description and the goods with their statuses', async () => {
        const res = await pub('', { detail: true, status: 'ONAIR' });
        expectOk(res);
        const [c] = res.body.results;
        expect(keys(c)).toEqual([...CAMPAIGN_KEYS, 'description', 'goods'].sort());
        expect(c.description).toBe('onair description');
        expect(c.goods.map((g: Payload) => [g.goodsId, g.salesStatus])).toEqual(at.onair.goods.map((g: Payload) => [String(g.id), 'ON_SALE']));
        for (const g of c.goods) expect(keys(g)).toEqual(SUMMARY_KEYS);
      });

      it('one campaign: detail form, also for a private known key; an unknown key is 200 NOT_EXIST', async () => {
        const res = await pub(`/${at['private-1d'].campaignKey}`);
        expectOk(res);
        expect(res.headers['cache-control']).toMatch(/max-age=\d+/);
        expect(keys(res.body)).toEqual([...CAMPAIGN_KEYS, 'description', 'goods'].sort());
        expect(res.body).toMatchObject({ title: 'private-1d', collectionVisible: false, description: 'private-1d description', goods: [] });
        const unknown = await pub('/NoSuchCampaign1');
        expectOk(unknown);
        expect(unknown.body).toEqual({ campaignKey: 'NoSuchCampaign1', campaignStatus: 'NOT_EXIST' });
        const otherTenant = await http().get(`/v1/campaigns/${A.accessKey}/${at['next-2d'].campaignKey}`);
        expect(otherTenant.body).toEqual({ campaignKey: at['next-2d'].campaignKey, campaignStatus: 'NOT_EXIST' });
      });

      it('upcoming: the ONAIR one when includeOnAir (default), else the soonest READY after now; collection-visible only', async () => {
        const onair = await pub('/upcoming');
        expectOk(onair);
        expect(onair.headers['cache-control']).toMatch(/max-age=\d+/);
        expect(onair.body).toMatchObject({ title: 'onair', campaignStatus: 'ONAIR', description: 'onair description' });
        expect(onair.body.goods).toHaveLength(2);
        expect((await pub('/upcoming', { includeOnAir: true })).body.title).toBe('onair');
        expect((await pub('/upcoming', { includeOnAir: false })).body.title).toBe('next-2d');
        expectError(await pub('/upcoming', { includeOnAir: 'sometimes' }), 400, -510);

        // No parameter exposes a private campaign on this unauthenticated endpoint: the former
        // includePrivate is an unknown parameter now, ignored (the answer is the one without it).
        expect((await pub('/upcoming', { includeOnAir: false, includePrivate: true })).body.title).toBe('next-2d');
        expect((await pub('/upcoming', { includePrivate: true })).body.title).toBe('onair');
        expect((await pub('/upcoming', { includeOnAir: false, includePrivate: 'yes please' })).body.title).toBe('next-2d');

        // A private ONAIR campaign is never the answer; none visible at all → NOT_EXIST.
        const Q = await ctx().createCustomer('Quiet');
        const q = await createCampaign(Q, { title: 'secret live', collectionVisible: false });
        expectOk(await con(Q).status(q.campaignKey, 'ONAIR'));
        await createCampaign(Q, { title: 'secret next', collectionVisible: false, scheduledAt: Date.now() + DAY });
        for (const query of [{}, { includePrivate: true }, { includePrivate: 1 }, { includeOnAir: false, includePrivate: true }]) {
          const none = await http().get(`/v1/campaigns/${Q.accessKey}/upcoming`).query(query);
          expectOk(none);
          expect(none.body).toEqual({ campaignStatus: 'NOT_EXIST' });
        }
        for (const query of [{}, { includePrivate: true }, { detail: true, includePrivate: true }]) {
          const listed = await http().get(`/v1/campaigns/${Q.accessKey}`).query(query);
          expectOk(listed);
          expect(listed.body).toEqual({ results: [], totalCount: 0, _s: 0 });
        }
        // The key itself still opens the private campaign (known keys answer even when private).
        expect((await http().get(`/v1/campaigns/${Q.accessKey}/${q.campaignKey}`)).body.title).toBe('secret live');
        const nobody = await http().get('/v1/campaigns/NoSuchAccessKey000000/upcoming');
        expect(nobody.body.campaignStatus).toBe('NOT_EXIST');
      });

      it('upcoming after the running one closes: the soonest READY scheduled after now', async () => {
        const R = await ctx().createCustomer('Rotation');
        const live = await createCampaign(R, { title: 'live', collectionVisible: true, scheduledAt: now - 1000 });
        await createCampaign(R, { title: 'past-ready', collectionVisible: true, scheduledAt: now - DAY });
        await createCampaign(R, { title: 'soon', collectionVisible: true, scheduledAt: now + 3600_000 });
        await createCampaign(R, { title: 'later', collectionVisible: true, scheduledAt: now + 7200_000 });
        expectOk(await con(R).status(live.campaignKey, 'ONAIR'));
        const up = () => http().get(`/v1/campaigns/${R.accessKey}/upcoming`);
        expect((await up()).body.title).toBe('live');
        expectOk(await con(R).status(live.campaignKey, 'CLOSED'));
        expect((await up()).body.title).toBe('soon');
      });

      it('userCount is the number of viewers connected right now', async () => {
        const key = at['next-2d'].campaignKey;
        const count = async () => (await pub(`/${key}`)).body.userCount as number;
        expect(await count()).toBe(0);
        const viewers = [await viewer(P, key), await viewer(P, key), await viewer(P, key)];
        expect(await eventually(count, (n) => n === 3)).toBe(3);
        const listed = (await pub('', { status: 'READY', from: now })).body.results.find((c: Payload) => c.campaignKey === key);
        expect(listed.userCount).toBe(3);
        expect((await con(P).get(key)).body.userCount).toBe(3);
        viewers[0].close();
        expect(await eventually(count, (n) => n === 2)).toBe(2);
        viewers[1].close();
        viewers[2].close();
        expect(await eventually(count, (n) => n === 0)).toBe(0);
      });

      it("an operator's console connection (auth.role 'operator' with the customer's token) gets the events but is not a viewer in userCount", async () => {
        const key = at['later-5d'].campaignKey;
        const count = async () => (await pub(`/${key}`)).body.userCount as number;
        const operator = await Viewer.connect(base, { accessKey: P.accessKey, campaignKey: key, role: 'operator', token: P.token() });
        const snap = await operator.next('campaign.snapshot');
        const audience = await viewer(P, key);
        expect(await eventually(count, (n) => n === 1)).toBe(1);
        expectOk(await con(P).chat(key, { message: 'to everyone' }));
        expect(await operator.next('chat.message')).toMatchObject({ seq: snap.seq + 1, message: 'to everyone' });
        operator.close();
        audience.close();
        expect(await eventually(count, (n) => n === 0)).toBe(0);
      });

      it("claiming role 'operator' without the customer's valid token is refused (viewer counts cannot be faked)", async () => {
        const key = at['later-5d'].campaignKey;
        const other = await ctx().createCustomer('Someone else');
        const auth = { accessKey: P.accessKey, campaignKey: key, role: 'operator' };
        expect(await Viewer.refused(base, auth)).toMatch(/token/);
        expect(await Viewer.refused(base, { ...auth, token: 'not-a-jwt' })).toMatch(/operator/);
        expect(await Viewer.refused(base, { ...auth, token: other.token() })).toMatch(/operator/);
        expect(await Viewer.refused(base, { ...auth, token: P.token({}, { expiresIn: -3600 }) })).toMatch(/operator/);
      });
    });

    // -------------------------------------------------------------------------------------------
    describe('OpenAPI', () => {
      it('documents the console, sales-status and public endpoints', async () => {
        const res = await http().get('/docs-json');
        expectOk(res);
        const paths = Object.keys(res.body.paths);
        for (const p of [
          '/v1/console/{accessKey}/campaigns',
          '/v1/console/{accessKey}/campaigns/{campaignKey}',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/status',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods/order',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods/{goodsId}/showing',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods/{goodsId}',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/chat',
          '/v1/goods/{accessKey}/campaign/{campaignKey}/salesStatus/id',
          '/v1/goods/{accessKey}/campaign/{campaignKey}/salesStatus/url',
          '/v1/goods/{accessKey}/campaign/{campaignKey}/salesStatus/sku',
          '/v1/campaigns/{accessKey}',
          '/v1/campaigns/{accessKey}/upcoming',
          '/v1/campaigns/{accessKey}/{campaignKey}',
        ]) {
          expect(paths).toContain(p);
        }
        expect(res.body.components.schemas.CampaignGoodsResponse).toBeDefined();
        const upcomingParams = res.body.paths['/v1/campaigns/{accessKey}/upcoming'].get.parameters.map((p: { name: string }) => p.name);
        expect(upcomingParams).toContain('includeOnAir');
        expect(upcomingParams).not.toContain('includePrivate');
      });
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);
