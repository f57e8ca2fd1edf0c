import { sign } from 'jsonwebtoken';
import type { Response } from 'supertest';
import { BAD_SIGNATURE } from '../src/auth/token-verifier';
import { closeAllViewers, listenOn, Viewer } from './support/live-client';
import { describeEngines, TestCustomer } from './support/test-app';

/**
 * What the campaign endpoints accept, on every engine: schedule dates (range and calendar), keys that
 * match exactly (MariaDB's collation ignores case and trailing spaces), and the same answer on SQLite
 * and MariaDB for what is stored.
 */

type Body = Record<string, unknown>;

const MAX_EPOCH_MS = 253402300799999; // 9999-12-31T23:59:59.999Z

function expectInvalid(res: Response, field: string, message?: RegExp): void {
  if (res.status !== 400) throw new Error(`expected 400, got ${res.status} ${JSON.stringify(res.body)}`);
  expect(res.body._s).toBe(-510);
  expect(typeof res.body._e).toBe('string');
  expect(res.body.errors).toEqual([{ field, message: expect.any(String) }]);
  if (message) expect(res.body.errors[0].message).toMatch(message);
}

/** The same key with the case of every letter swapped. */
const swapCase = (key: string): string => [...key].map((ch) => (ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase())).join('');

function expectOk(res: Response): void {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status} ${JSON.stringify(res.body)}`);
}

describeEngines('campaign inputs', __filename, (ctx) => {
  let A: TestCustomer;
  const http = () => ctx().http;
  const cpath = (c: TestCustomer, rest = '') => `/v1/console/${c.accessKey}/campaigns${rest}`;
  const create = (body: Body, c = A) =>
    http()
      .post(cpath(c))
      .set('Authorization', c.auth())
      .send({ title: 'Inputs', ...body });
  /** A campaign of A's holding one new goods item. */
  async function campaignWithItem(campaign: Body, item: Body): Promise<{ key: string; goodsId: number }> {
    const created = await create(campaign);
    expectOk(created);
    const key = created.body.campaignKey as string;
    const goods = await http().post(`/v1/goods/${A.accessKey}`).set('Authorization', A.auth()).send(item);
    expectOk(goods);
    const goodsId = goods.body.id as number;
    expectOk(
      await http()
        .post(cpath(A, `/${key}/goods`))
        .set('Authorization', A.auth())
        .send({ goodsIds: [goodsId] }),
    );
    return { key, goodsId };
  }
  const patch = (key: string, body: Body, c = A) =>
    http()
      .patch(cpath(c, `/${key}`))
      .set('Authorization', c.auth())
      .send(body);
  const get = (key: string, c = A) =>
    http()
      .get(cpath(c, `/${key}`))
      .set('Authorization', c.auth());

  beforeAll(async () => {
    A = await ctx().createCustomer('Inputs A');
  });

  describe('schedule dates', () => {
    it('an epoch ms beyond 9999-12-31 is 400 -510 naming the field (was 500 on MariaDB, another value on SQLite)', async () => {
      expectInvalid(await create({ scheduledAt: 999999999999999 }), 'scheduledAt', /between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z/);
      expectInvalid(await create({ scheduledAt: String(MAX_EPOCH_MS + 1) }), 'scheduledAt');
      expectInvalid(await create({ scheduledEndAt: 1e308 }), 'scheduledEndAt');
      expectInvalid(await create({ scheduledAt: -1 }), 'scheduledAt');
      expectInvalid(await create({ scheduledAt: 1763712000000.5 }), 'scheduledAt', /whole number/);
    });

    it('a date that is not in the calendar is 400 -510 (2026-02-30 is not 2 March)', async () => {
      expectInvalid(await create({ scheduledAt: '2026-02-30' }), 'scheduledAt', /2026-02 has no day 30/);
      expectInvalid(await create({ scheduledAt: '2026-02-29T10:00:00Z' }), 'scheduledAt', /has no day 29/);
      expectInvalid(await create({ scheduledEndAt: '2026-04-31T10:00:00Z' }), 'scheduledEndAt');
      expectInvalid(await create({ scheduledAt: '2026-03-01T24:00:00Z' }), 'scheduledAt', /hour 24/);
      expectInvalid(await create({ scheduledAt: '2026-03-01T20:61:00Z' }), 'scheduledAt', /minute 61/);
      expectInvalid(await create({ scheduledAt: '2026-13-01T00:00:00Z' }), 'scheduledAt', /month 13/);
      expectInvalid(await create({ scheduledAt: '2026-03-01T20:00:00+0900' }), 'scheduledAt');
      expectInvalid(await create({ scheduledAt: 'next friday' }), 'scheduledAt');
    });

    it('the first and the last instant of the range are stored and read back exactly', async () => {
      for (const scheduledAt of [0, MAX_EPOCH_MS]) {
        const res = await create({ scheduledAt, scheduledEndAt: scheduledAt });
        expectOk(res);
        expect(res.body).toMatchObject({ scheduledAt, scheduledEndAt: scheduledAt });
        const again = await get(res.body.campaignKey);
        expect(again.body).toMatchObject({ scheduledAt, scheduledEndAt: scheduledAt });
      }
      const iso = await create({ scheduledAt: '9999-12-31T23:59:59.999Z' });
      expectOk(iso);
      expect((await get(iso.body.campaignKey)).body.scheduledAt).toBe(MAX_EPOCH_MS);
    });

    it('ISO-8601 with an offset is that instant; without an offset it is UTC; leap days exist in leap years', async () => {
      const cases: Array<[string, number]> = [
        ['2026-03-01T20:00:00+09:00', Date.UTC(2026, 2, 1, 11)],
        ['2026-03-01T20:00', Date.UTC(2026, 2, 1, 20)],
        ['2026-03-01T20:00:30.250', Date.UTC(2026, 2, 1, 20, 0, 30, 250)],
        ['2026-03-01', Date.UTC(2026, 2, 1)],
        ['2028-02-29T12:00:00Z', Date.UTC(2028, 1, 29, 12)],
      ];
      for (const [text, expected] of cases) {
        const res = await create({ scheduledAt: text });
        expectOk(res);
        expect(res.body.scheduledAt).toBe(expected);
        expect((await get(res.body.campaignKey)).body.scheduledAt).toBe(expected);
      }
    });

    it('PATCH refuses the same values and leaves the stored schedule alone', async () => {
      const start = Date.UTC(2026, 5, 1, 18);
      const created = await create({ scheduledAt: start });
      expectOk(created);
      const key = created.body.campaignKey;
      expectInvalid(await patch(key, { scheduledAt: 999999999999999 }), 'scheduledAt');
      expectInvalid(await patch(key, { scheduledAt: '2026-02-30T10:00:00Z' }), 'scheduledAt');
      expectInvalid(await patch(key, { scheduledEndAt: '2026-06-31' }), 'scheduledEndAt');
      expect((await get(key)).body).toMatchObject({ scheduledAt: start, scheduledEndAt: null });
      const cleared = await patch(key, { scheduledAt: null });
      expectOk(cleared);
      expect(cleared.body.scheduledAt).toBeNull();
    });

    it('a schedule that ends before it starts is 400 -510 on scheduledEndAt (create and patch); equal is fine', async () => {
      const start = Date.UTC(2026, 5, 1, 18);
      expectInvalid(await create({ scheduledAt: start, scheduledEndAt: start - 1 }), 'scheduledEndAt', /not be before scheduledAt/);
      const created = await create({ scheduledAt: start, scheduledEndAt: start + 3600_000 });
      expectOk(created);
      const key = created.body.campaignKey;
      expectInvalid(await patch(key, { scheduledAt: start + 7200_000 }), 'scheduledEndAt');
      expectInvalid(await patch(key, { scheduledEndAt: start - 60_000 }), 'scheduledEndAt');
      expect((await get(key)).body).toMatchObject({ scheduledAt: start, scheduledEndAt: start + 3600_000 });
      // Moving both at once, or clearing one end, is fine.
      const moved = await patch(key, { scheduledAt: start + 7200_000, scheduledEndAt: start + 7200_000 });
      expectOk(moved);
      expect(moved.body).toMatchObject({ scheduledAt: start + 7200_000, scheduledEndAt: start + 7200_000 });
      expectOk(await patch(key, { scheduledEndAt: null }));
      expectOk(await patch(key, { scheduledAt: start + 9 * 3600_000 }));
    });

    it('the public list refuses the same from/to values with 400 -510 naming the parameter', async () => {
      const pub = (query: Body) => http().get(`/v1/campaigns/${A.accessKey}`).query(query);
      expectInvalid(await pub({ from: '999999999999999' }), 'from');
      expectInvalid(await pub({ to: '2026-02-30' }), 'to', /has no day 30/);
      expectInvalid(await pub({ from: '2026-03-01T25:00:00Z' }), 'from');
      expectOk(await pub({ from: '0', to: String(MAX_EPOCH_MS) }));
      expectOk(await pub({ from: '2026-03-01T00:00:00+09:00', to: '2026-03-31' }));
    });
  });

  describe('access keys and campaign keys match exactly (case and trailing spaces), on both engines', () => {
    let base = '';
    let key = '';
    let goodsId = 0;

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      ({ key, goodsId } = await campaignWithItem(
        { title: 'Exact keys', collectionVisible: true, scheduledAt: Date.now() + 86400_000 },
        { name: 'Exact', sku: 'EXACT-1', url: 'https://shop.example.com/exact-1' },
      ));
      expect(swapCase(key)).not.toBe(key);
    });
    afterEach(() => closeAllViewers());

    const variantsOf = (k: string) => [swapCase(k), k.toUpperCase(), k.toLowerCase(), `${k} `, `${k}  `].filter((v) => v !== k);

    it('a wrong-case or padded campaignKey is an unknown campaign: console 404 -710, sales status 404 -710', async () => {
      for (const variant of variantsOf(key)) {
        const path = encodeURIComponent(variant);
        const got = await get(path);
        expect({ status: got.status, _s: got.body._s }).toEqual({ status: 404, _s: -710 });
        const patched = await patch(path, { title: 'renamed through a variant' });
        expect({ status: patched.status, _s: patched.body._s }).toEqual({ status: 404, _s: -710 });
        const status = await http()
          .put(`/v1/goods/${A.accessKey}/campaign/${path}/salesStatus/id`)
          .set('Authorization', A.auth())
          .send({ goodsId, salesStatus: 'SOLD_OUT' });
        expect({ status: status.status, _s: status.body._s }).toEqual({ status: 404, _s: -710 });
      }
      const exact = await get(key);
      expectOk(exact);
      expect(exact.body.title).toBe('Exact keys');
      expect(exact.body.goods[0].salesStatus).toBe('ON_SALE');
    });

    it('public: a wrong-case or padded campaignKey reads NOT_EXIST, exactly like an unknown one', async () => {
      for (const variant of variantsOf(key)) {
        const res = await http().get(`/v1/campaigns/${A.accessKey}/${encodeURIComponent(variant)}`);
        expectOk(res);
        expect(res.body).toEqual({ campaignKey: variant, campaignStatus: 'NOT_EXIST' });
      }
      expect((await http().get(`/v1/campaigns/${A.accessKey}/${key}`)).body.title).toBe('Exact keys');
    });

    it('/live: a wrong-case or padded campaignKey or accessKey is a connect_error, like an unknown one', async () => {
      const unknown = await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: 'NoSuchCampaign1' });
      for (const variant of variantsOf(key)) {
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: variant })).toBe(unknown.replace('NoSuchCampaign1', variant));
      }
      for (const variant of variantsOf(A.accessKey)) {
        expect(await Viewer.refused(base, { accessKey: variant, campaignKey: key })).toBe(unknown.replace('NoSuchCampaign1', key));
      }
      const viewer = await Viewer.connect(base, { accessKey: A.accessKey, campaignKey: key });
      expect(viewer.snapshot.campaign.campaignKey).toBe(key);
    });

    it('a wrong-case or padded accessKey is an unknown customer: 401 -102 even with a token claiming it', async () => {
      for (const variant of variantsOf(A.accessKey)) {
        const token = sign({ accessKey: variant }, Buffer.from(A.secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 600 });
        for (const res of [
          await http()
            .get(`/v1/goods/${encodeURIComponent(variant)}`)
            .set('Authorization', `Bearer ${token}`),
          await http()
            .get(`/v1/console/${encodeURIComponent(variant)}/campaigns`)
            .set('Authorization', `Bearer ${token}`),
        ]) {
          expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { _s: -102, _e: BAD_SIGNATURE } });
        }
      }
    });

    it('public: a wrong-case or padded accessKey reads like an unknown one (empty list, NOT_EXIST)', async () => {
      for (const variant of variantsOf(A.accessKey)) {
        const ak = encodeURIComponent(variant);
        expect((await http().get(`/v1/campaigns/${ak}`)).body).toEqual({ results: [], totalCount: 0, _s: 0 });
        expect((await http().get(`/v1/campaigns/${ak}/upcoming`)).body).toEqual({ campaignStatus: 'NOT_EXIST' });
        expect((await http().get(`/v1/campaigns/${ak}/${key}`)).body).toEqual({ campaignKey: key, campaignStatus: 'NOT_EXIST' });
      }
      expect((await http().get(`/v1/campaigns/${A.accessKey}`)).body.totalCount).toBeGreaterThan(0);
    });
  });

  describe('liveUrl: free text, but never a dangerous link', () => {
    it.each([
      'javascript:alert(document.cookie)',
      'JavaScript:alert(1)',
      'JAVASCRIPT:alert(1)',
      '  javascript:alert(1)',
      '\u0001\u001fjavascript:alert(1)',
      '\u00a0\u200bjavascript:alert(1)',
      'java\tscript:alert(1)',
      'java\nscript:alert(1)',
      'vbscript:msgbox(1)',
      'data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==',
      'DATA:image/svg+xml,<svg onload=alert(1)>',
      'file:///etc/passwd',
      'blob:https://live.example.com/550e8400-e29b-41d4-a716-446655440000',
    ])('refuses %p with 400 -510 on create and patch', async (liveUrl) => {
      expectInvalid(await create({ liveUrl }), 'liveUrl', /must not be a javascript:, vbscript:, data:, file: or blob: link/);
      const created = await create({ liveUrl: 'rtmp://live.example.com/keep' });
      expectOk(created);
      expectInvalid(await patch(created.body.campaignKey, { liveUrl }), 'liveUrl');
      expect((await get(created.body.campaignKey)).body.liveUrl).toBe('rtmp://live.example.com/keep');
    });

    it.each([
      'rtmp://live.example.com/abc',
      'https://www.youtube.com/watch?v=abc123',
      'stream-7f3a9c',
      'x',
      'javascript',
      'my javascript: talk',
      'https://live.example.com/?next=javascript:alert(1)',
      'srt://ingest.example.com:9000?streamid=#!::r=live/abc',
    ])('keeps free text such as %p', async (liveUrl) => {
      const created = await create({ liveUrl });
      expectOk(created);
      expect(created.body.liveUrl).toBe(liveUrl);
      expect((await get(created.body.campaignKey)).body.liveUrl).toBe(liveUrl);
    });
  });

  describe('text that is not well-formed Unicode (a lone UTF-16 surrogate)', () => {
    const lone = 'Friday \ud800 deals';
    let key = '';
    let goodsId = 0;

    beforeAll(async () => {
      ({ key, goodsId } = await campaignWithItem(
        { title: 'Unicode', operatorName: 'Mina' },
        { name: 'Unicode item', sku: 'UNI-1', url: 'https://shop.example.com/uni-1' },
      ));
    });

    it.each(['title', 'description', 'liveUrl', 'operatorName', 'posterUrl'])('campaign %s: 400 -510 on create and patch', async (field) => {
      const value = field === 'posterUrl' ? 'https://cdn.example.com/\udc00.jpg' : lone;
      const refused = await create({ [field]: value });
      expectInvalid(refused, field, /well-formed Unicode/);
      expectInvalid(await patch(key, { [field]: value }), field);
      expect((await get(key)).body).toMatchObject({ title: 'Unicode', operatorName: 'Mina', description: null, liveUrl: null });
    });

    it('chat message and name: 400 -510, nothing posted', async () => {
      const chat = (body: Body) =>
        http()
          .post(cpath(A, `/${key}/chat`))
          .set('Authorization', A.auth())
          .send(body);
      expectInvalid(await chat({ message: lone }), 'message', /well-formed Unicode/);
      expectInvalid(await chat({ message: 'fine', name: '\udfff' }), 'name');
      expectInvalid(await chat({ message: lone, pinned: true }), 'message');
      expect((await get(key)).body.notice).toBeNull();
      const ok = await chat({ message: 'Whole 😀 emoji' });
      expectOk(ok);
      expect(ok.body.chat.message).toBe('Whole 😀 emoji');
    });

    it('sales status name, adminChatNotice and chatMessage: 400 -510, the status unchanged', async () => {
      const put = (body: Body) => http().put(`/v1/goods/${A.accessKey}/campaign/${key}/salesStatus/id`).set('Authorization', A.auth()).send(body);
      for (const field of ['name', 'adminChatNotice', 'chatMessage']) {
        expectInvalid(await put({ goodsId, salesStatus: 'SOLD_OUT', [field]: lone }), field, /well-formed Unicode/);
      }
      expect((await get(key)).body.goods[0].salesStatus).toBe('ON_SALE');
      expectOk(await put({ goodsId, salesStatus: 'SOLD_OUT', chatMessage: 'Sold out 🎉' }));
      expect((await get(key)).body.goods[0].salesStatus).toBe('SOLD_OUT');
    });
  });
});
