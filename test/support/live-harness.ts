import type { Response } from 'supertest';
import { closeAllViewers, listenOn, Payload, Viewer } from './live-client';
import type { TestApp, TestCustomer } from './test-app';

/**
 * What the campaign specs share (campaigns-console, sales-status, live-viewers, public-campaigns): the
 * exact field lists of every answer and event, the answer checks, and a harness that listens on the
 * test app for Socket.IO viewers, creates two tenants and offers the console, sales-status and
 * registration calls.
 */

export type Body = Record<string, unknown>;
export type Style = 'query' | 'form' | 'json';

export const JSON_UTF8 = 'application/json; charset=utf-8';
export const SNAPSHOT_KEYS = ['campaign', 'chat', 'goods', 'notice', 'seq'];
export const SUMMARY_KEYS = [
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
export const CAMPAIGN_KEYS = [
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
  'showStock',
  'startedAt',
  'title',
  'updatedAt',
  'userCount',
];
export const CAMPAIGN_GOODS_KEYS = [
  'adminId',
  'adminName',
  'almostSoldOutAt',
  'campaignId',
  'createdAt',
  'goods',
  'goodsId',
  'salesStatus',
  'showingNow',
  'sortOrder',
  'stock',
  'updatedAt',
];
export const CAMPAIGN_GOODS_ITEM_KEYS = [
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
export const CAMPAIGN_GOODS_MEDIA_KEYS = [
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
export const EVENT_KEYS: Record<string, string[]> = {
  'goods.salesStatus': ['adminName', 'campaignKey', 'goodsId', 'salesStatus', 'seq', 'updatedAt'],
  'goods.stock': ['campaignKey', 'goodsId', 'seq', 'stock', 'updatedAt'],
  'goods.list': ['goods', 'seq'],
  'goods.update': ['goods', 'seq'],
  'campaign.update': ['campaign', 'seq'],
  'chat.notice': ['adminName', 'createdAt', 'message', 'seq'],
  'chat.message': ['adminName', 'createdAt', 'id', 'message', 'seq'],
  'campaign.status': ['campaignStatus', 'endedAt', 'seq', 'startedAt'],
};
export const DAY = 24 * 3600 * 1000;

export const keys = (o: unknown): string[] => Object.keys(o as object).sort();
export const isEpochMs = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v > 1.6e12 && v < 4.1e12;

export function expectError(res: Response, status: number, code: number): void {
  expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
  expect(typeof res.body._e).toBe('string');
  expect(res.headers['content-type']).toBe(JSON_UTF8);
}

export function expectOk(res: Response): void {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status} ${JSON.stringify(res.body)}`);
  expect(res.headers['content-type']).toBe(JSON_UTF8);
}

/** Every logged event carries exactly the fields of live-events.ts. */
export function expectEventShape(type: string, payload: Payload): void {
  expect(EVENT_KEYS[type]).toBeDefined();
  expect(keys(payload)).toEqual(EVENT_KEYS[type]);
  expect(Number.isInteger(payload.seq)).toBe(true);
  // Summaries carry stock only in campaigns that show it (showStock).
  if (type === 'goods.list' || type === 'goods.update') for (const g of payload.goods) expect(keys(g).filter((k) => k !== 'stock')).toEqual(SUMMARY_KEYS);
  if (type === 'campaign.update') expect(keys(payload.campaign)).toEqual([...CAMPAIGN_KEYS, 'description'].sort());
}

/** Registers the hooks (listen, two tenants, viewers closed after each test) and returns the calls. */
export function liveHarness(ctx: () => TestApp) {
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
    get: (key: string) =>
      http()
        .get(cpath(c, `/${key}`))
        .set('Authorization', auth),
    patch: (key: string, body: Body) =>
      http()
        .patch(cpath(c, `/${key}`))
        .set('Authorization', auth)
        .send(body),
    status: (key: string, campaignStatus: string) =>
      http()
        .put(cpath(c, `/${key}/status`))
        .set('Authorization', auth)
        .send({ campaignStatus }),
    remove: (key: string) =>
      http()
        .delete(cpath(c, `/${key}`))
        .set('Authorization', auth),
    addGoods: (key: string, body: Body) =>
      http()
        .post(cpath(c, `/${key}/goods`))
        .set('Authorization', auth)
        .send(body),
    goods: (key: string) =>
      http()
        .get(cpath(c, `/${key}/goods`))
        .set('Authorization', auth),
    order: (key: string, goodsIds: unknown[]) =>
      http()
        .put(cpath(c, `/${key}/goods/order`))
        .set('Authorization', auth)
        .send({ goodsIds }),
    showing: (key: string, goodsId: unknown, showingNow: unknown) =>
      http()
        .put(cpath(c, `/${key}/goods/${goodsId}/showing`))
        .set('Authorization', auth)
        .send({ showingNow }),
    removeGoods: (key: string, goodsId: unknown) =>
      http()
        .delete(cpath(c, `/${key}/goods/${goodsId}`))
        .set('Authorization', auth),
    chat: (key: string, body: Body) =>
      http()
        .post(cpath(c, `/${key}/chat`))
        .set('Authorization', auth)
        .send(body),
  });

  const salesStatus = (c: TestCustomer, key: string, by: 'id' | 'url' | 'sku', params: Body, style: Style = 'json', auth = c.auth()) => {
    const req = http().put(`/v1/goods/${c.accessKey}/campaign/${key}/salesStatus/${by}`).set('Authorization', auth);
    if (style === 'query') return req.query(params);
    if (style === 'form') return req.type('form').send(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])));
    return req.send(params);
  };

  /** The stock operations: `op` set (PUT …/stock/{by}), decrement or increment (POST …/stock/{by}/{op}). */
  const stock = (c: TestCustomer, key: string, by: 'id' | 'url' | 'sku', op: 'set' | 'decrement' | 'increment', params: Body, style: Style = 'json') => {
    const path = `/v1/goods/${c.accessKey}/campaign/${key}/stock/${by}`;
    const req = (op === 'set' ? http().put(path) : http().post(`${path}/${op}`)).set('Authorization', c.auth());
    if (style === 'query') return req.query(params);
    if (style === 'form')
      return req.type('form').send(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, v === null ? '' : String(v as string | number | boolean)])));
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

  return {
    get base() {
      return base;
    },
    get A() {
      return A;
    },
    get B() {
      return B;
    },
    http,
    cpath,
    con,
    salesStatus,
    stock,
    createCampaign,
    register,
    liveCampaign,
    viewer,
    campaignRow,
  };
}
