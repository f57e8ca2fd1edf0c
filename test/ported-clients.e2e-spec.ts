import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sign } from 'jsonwebtoken';
import type { Response } from 'supertest';
import { closeAllViewers, listenOn, Viewer } from './support/live-client';
import { describeEngines, TestCustomer } from './support/test-app';

/**
 * A client ported from another implementation of the same API spells parameters its own way and sends
 * edge values: every documented spelling works, and the answers are what such a client expects.
 */

type Body = Record<string, unknown>;

function expectInvalid(res: Response, pattern: RegExp): void {
  expect({ status: res.status, _s: res.body?._s }).toEqual({ status: 400, _s: -510 });
  expect(res.body._e).toMatch(pattern);
}

describeEngines('clients ported from another implementation', __filename, (ctx) => {
  let C: TestCustomer;
  let base = '';
  const goods = () => `/v1/goods/${C.accessKey}`;
  const console = (rest = '') => `/v1/console/${C.accessKey}/campaigns${rest}`;

  beforeAll(async () => {
    C = await ctx().createCustomer('Ported');
    base = await listenOn(ctx().app);
    const items = Array.from({ length: 105 }, (_, i) => ({ name: `Ported ${i}`, sku: `PT-${i}`, url: `https://shop.example.com/pt/${i}` }));
    const res = await ctx().http.post(`${goods()}/sync`).set('Authorization', C.auth()).send(items);
    expect(res.body.createCount).toBe(105);
  });
  afterEach(() => closeAllViewers());

  describe('look-ups and deletes by sku or url', () => {
    it('GET …/sku?sku= and …/url?url= work like ?value=', async () => {
      const bySku = await ctx().http.get(`${goods()}/sku`).query({ sku: 'PT-1' }).set('Authorization', C.auth());
      expect([bySku.status, bySku.body.sku]).toEqual([200, 'PT-1']);
      const byUrl = await ctx().http.get(`${goods()}/url`).query({ url: 'https://shop.example.com/pt/2' }).set('Authorization', C.auth());
      expect([byUrl.status, byUrl.body.sku]).toEqual([200, 'PT-2']);
      const byValue = await ctx().http.get(`${goods()}/sku`).query({ value: 'PT-3', sku: 'PT-4' }).set('Authorization', C.auth());
      expect(byValue.body.sku).toBe('PT-3'); // value wins
      expectInvalid(await ctx().http.get(`${goods()}/sku`).set('Authorization', C.auth()), /value \(or sku\) is required/);
      expectInvalid(await ctx().http.get(`${goods()}/url`).set('Authorization', C.auth()), /value \(or url\) is required/);
    });

    it('DELETE …/sku?sku=, …/url?url= and …/{goodsId}/sku?sku= delete the item', async () => {
      const id = (await ctx().http.get(`${goods()}/sku`).query({ sku: 'PT-100' }).set('Authorization', C.auth())).body.id as number;
      expect((await ctx().http.delete(`${goods()}/${id}/sku`).query({ sku: 'PT-100' }).set('Authorization', C.auth())).body).toEqual({ _s: 0 });
      expect((await ctx().http.delete(`${goods()}/sku`).query({ sku: 'PT-101' }).set('Authorization', C.auth())).body).toEqual({ _s: 0 });
      expect((await ctx().http.delete(`${goods()}/url`).query({ url: 'https://shop.example.com/pt/102' }).set('Authorization', C.auth())).body).toEqual({
        _s: 0,
      });
      for (const sku of ['PT-100', 'PT-101', 'PT-102']) {
        expect((await ctx().http.get(`${goods()}/sku`).query({ sku }).set('Authorization', C.auth())).status).toBe(404);
      }
    });
  });

  describe('paging', () => {
    it('count above 100 is served as 100; empty page and count are the defaults', async () => {
      const big = await ctx().http.get(goods()).query({ count: 101 }).set('Authorization', C.auth());
      expect([big.status, big.body.results.length]).toEqual([200, 100]);
      const huge = await ctx().http.get(goods()).query({ count: 100000, page: 2 }).set('Authorization', C.auth());
      expect([huge.status, huge.body.results.length]).toEqual([200, huge.body.totalCount - 100]);
      const empty = await ctx().http.get(`${goods()}?page=&count=`).set('Authorization', C.auth());
      expect([empty.status, empty.body.results.length]).toEqual([200, 30]);
      expectInvalid(await ctx().http.get(goods()).query({ count: 'x' }).set('Authorization', C.auth()), /count must be an integer; got 'x'/);
      expectInvalid(await ctx().http.get(goods()).query({ count: 0 }).set('Authorization', C.auth()), /count must be at least 1; got 0/);
    });

    it('the same on the public list and the console list; Swagger says so', async () => {
      for (let i = 0; i < 3; i += 1)
        expect(
          (
            await ctx()
              .http.post(console())
              .set('Authorization', C.auth())
              .send({ title: `Paged ${i}`, collectionVisible: true })
          ).status,
        ).toBe(200);
      const pub = await ctx().http.get(`/v1/campaigns/${C.accessKey}?count=101&page=`);
      expect([pub.status, pub.body.results.length >= 3]).toEqual([200, true]);
      expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}?count=`)).status).toBe(200);
      expect((await ctx().http.get(console()).query({ count: 500 }).set('Authorization', C.auth())).status).toBe(200);
      const docs = await ctx().http.get('/docs-json');
      const count = (docs.body.paths['/v1/goods/{accessKey}'].get.parameters as Body[]).find((p) => p.name === 'count') as Body;
      expect(String(count.description)).toMatch(/above 100 are served as 100/);
      expect((count.schema as Body).maximum).toBeUndefined();
    });
  });

  describe('sales status as form handlers send it', () => {
    let key = '';
    let goodsId = 0;
    beforeAll(async () => {
      const created = await ctx().http.post(console()).set('Authorization', C.auth()).send({ title: 'Forms', operatorName: 'Campaign Op' });
      key = created.body.campaignKey;
      goodsId = (await ctx().http.get(`${goods()}/sku`).query({ sku: 'PT-5' }).set('Authorization', C.auth())).body.id;
      expect(
        (
          await ctx()
            .http.post(console(`/${key}/goods`))
            .set('Authorization', C.auth())
            .send({ goodsIds: [goodsId] })
        ).status,
      ).toBe(200);
    });
    const path = () => `${goods()}/campaign/${key}/salesStatus/id`;

    it('multipart/form-data fields are read like urlencoded ones', async () => {
      const res = await ctx().http.put(path()).set('Authorization', C.auth()).field('goodsId', String(goodsId)).field('salesStatus', 'SOLD_OUT');
      expect([res.status, res.body.salesStatus]).toEqual([200, 'SOLD_OUT']);
    });

    it.each([
      ['yes', true],
      ['on', true],
      ['1', true],
      ['TRUE', true],
      ['', true],
      ['no', false],
      ['off', false],
      ['0', false],
      ['False', false],
    ])('notify=%p pushes the change: %p', async (notify, pushed) => {
      const v = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
      await v.next('campaign.snapshot');
      const res = await ctx()
        .http.put(path())
        .set('Authorization', C.auth())
        .type('form')
        .send(`goodsId=${goodsId}&salesStatus=ALMOST_SOLD_OUT&notify=${notify}`);
      expect(res.status).toBe(200);
      await v.settle(250);
      expect(v.unread.some((e) => e.type === 'goods.salesStatus')).toBe(pushed);
    });

    it.each([
      [1, true],
      [0, false],
      [true, true],
      [false, false],
    ])('a JSON body notify of %p pushes the change: %p (the numbers 1 and 0 too, as the refusal message says)', async (notify, pushed) => {
      const v = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
      await v.next('campaign.snapshot');
      const res = await ctx().http.put(path()).set('Authorization', C.auth()).send({ goodsId, salesStatus: 'SOLD_OUT', notify });
      expect(res.status).toBe(200);
      await v.settle(250);
      expect(v.unread.some((e) => e.type === 'goods.salesStatus')).toBe(pushed);
      expectInvalid(
        await ctx().http.put(path()).set('Authorization', C.auth()).send({ goodsId, salesStatus: 'SOLD_OUT', notify: 2 }),
        /notify must be true or false \(also 1\/0, yes\/no, on\/off\); got 2/,
      );
    });

    it('plain messages: a repeated parameter, a goodsId that is not a number, an unknown status', async () => {
      expectInvalid(
        await ctx().http.put(`${path()}?salesStatus=SOLD_OUT&salesStatus=ON_SALE&goodsId=${goodsId}`).set('Authorization', C.auth()),
        /salesStatus was given 2 times; give it once/,
      );
      expectInvalid(
        await ctx().http.put(path()).set('Authorization', C.auth()).type('form').send('goodsId=abc&salesStatus=SOLD_OUT'),
        /goodsId must be a positive integer; got 'abc'/,
      );
      expectInvalid(await ctx().http.put(path()).set('Authorization', C.auth()).type('form').send(`goodsId=${goodsId}&salesStatus=GONE`), /got 'GONE'/);
      expectInvalid(
        await ctx().http.put(path()).set('Authorization', C.auth()).type('form').send(`goodsId=${goodsId}&salesStatus=SOLD_OUT&notify=maybe`),
        /notify must be true or false .*got 'maybe'/,
      );
    });

    it("adminName: name, else the campaign's operator name, else the token's name claim", async () => {
      const withClaim = C.auth({ name: 'Token Op' });
      const named = await ctx().http.put(path()).set('Authorization', withClaim).send({ goodsId, salesStatus: 'ON_SALE', name: 'Given' });
      expect(named.body.adminName).toBe('Given');
      const campaignOp = await ctx().http.put(path()).set('Authorization', withClaim).send({ goodsId, salesStatus: 'ON_SALE' });
      expect(campaignOp.body.adminName).toBe('Campaign Op');
      expect(
        (
          await ctx()
            .http.patch(console(`/${key}`))
            .set('Authorization', C.auth())
            .send({ operatorName: null })
        ).status,
      ).toBe(200);
      const claim = await ctx().http.put(path()).set('Authorization', withClaim).send({ goodsId, salesStatus: 'ON_SALE' });
      expect(claim.body.adminName).toBe('Token Op');
      const none = await ctx().http.put(path()).set('Authorization', C.auth()).send({ goodsId, salesStatus: 'ON_SALE' });
      expect(none.body.adminName).toBeNull();
    });
  });

  it('a FAIL row carries every Goods field (null where unknown, medias [], the currency)', async () => {
    const res = await ctx()
      .http.post(`${goods()}/sync`)
      .set('Authorization', C.auth())
      .send([{ sku: 'FAIL-1', originalPrice: 'cheap' }, { id: 999999999 }, 'not an object']);
    const ok = (await ctx().http.get(`${goods()}/sku`).query({ sku: 'PT-1' }).set('Authorization', C.auth())).body as Body;
    const keys = [...Object.keys(ok), 'row', 'status', 'message'].sort();
    for (const row of res.body.results as Body[]) {
      expect(Object.keys(row).sort()).toEqual(keys);
      expect(row).toMatchObject({ status: 'FAIL', medias: [], currency: 'KRW' });
      expect(typeof row.message).toBe('string');
    }
    expect(res.body.results[0]).toMatchObject({ id: null, sku: 'FAIL-1', originalPrice: 'cheap', name: null, url: null });
    expect(res.body.results[1]).toMatchObject({ id: 999999999, sku: null });
    expect(res.body.failCount).toBe(3);
  });

  it('a repeated query parameter is named as such (searchKeyword, count, page, format…); collectionVisible null leaves it as it is (never a 500)', async () => {
    expectInvalid(
      await ctx().http.get(`${goods()}?searchKeyword=a&searchKeyword=b`).set('Authorization', C.auth()),
      /searchKeyword was given 2 times; give it once; got \["a","b"\]/,
    );
    // A parameter in a bracketed form (qs, PHP) is no parameter the route reads: refused, not dropped.
    for (const [query, name] of [
      ['searchKeyword[]=zzqq', 'searchKeyword'],
      ['searchKeyword[a]=zzqq', 'searchKeyword'],
      ['count[]=5', 'count'],
      [`${encodeURIComponent('page[]')}=2`, 'page'],
    ]) {
      const res = await ctx().http.get(`${goods()}?${query}`).set('Authorization', C.auth());
      expect([res.status, res.body._s, res.body._e]).toEqual([
        400,
        -510,
        expect.stringMatching(new RegExp(`^Invalid argument: ${name} was given as ${name}\\[`)),
      ]);
    }
    // Bracketed names the route does not take are ignored, like any unknown parameter.
    expect((await ctx().http.get(`${goods()}?utm[source]=mail`).set('Authorization', C.auth())).status).toBe(200);
    // Every query parameter given twice is told the same way, whatever its type.
    for (const [query, name] of [
      ['count=2&count=3', 'count'],
      ['page=1&page=2', 'page'],
      ['searchKeyword=a&count=5&count=6', 'count'],
    ]) {
      const res = await ctx().http.get(`${goods()}?${query}`).set('Authorization', C.auth());
      expect([res.status, res.body._s, res.body._e]).toEqual([400, -510, expect.stringContaining(`${name} was given 2 times; give it once`)]);
    }
    const exported = await ctx().http.get(`${goods()}/excel/export?format=csv&format=xlsx`).set('Authorization', C.auth());
    expect([exported.status, exported.body._e]).toEqual([400, expect.stringContaining('format was given 2 times; give it once')]);
    const listed = await ctx().http.get(`/v1/campaigns/${C.accessKey}?count=1&count=2`);
    expect([listed.status, listed.body._e]).toEqual([400, expect.stringContaining('count was given 2 times; give it once')]);
    // null for a boolean (a NOT NULL column) is the same as leaving it out: the default on create, the
    // stored value on a change; never written as null, never a 500.
    const created = await ctx().http.post(console()).set('Authorization', C.auth()).send({ title: 'Nullable?', collectionVisible: null, showStock: null });
    expect([created.status, created.body.collectionVisible, created.body.showStock]).toEqual([200, false, false]);
    await ctx()
      .http.patch(console(`/${created.body.campaignKey}`))
      .set('Authorization', C.auth())
      .send({ collectionVisible: true })
      .expect(200);
    const patched = await ctx()
      .http.patch(console(`/${created.body.campaignKey}`))
      .set('Authorization', C.auth())
      .send({ collectionVisible: null });
    expect([patched.status, patched.body.collectionVisible]).toEqual([200, true]);
    expectInvalid(
      await ctx()
        .http.patch(console(`/${created.body.campaignKey}`))
        .set('Authorization', C.auth())
        .send({ collectionVisible: 'maybe' }),
      /collectionVisible must be true or false/,
    );
  });

  it('a goods id in the path that is not a number is named, with the text sent', async () => {
    // Worded as every other invalid argument.
    expectInvalid(
      await ctx().http.delete(`${goods()}/abc`).set('Authorization', C.auth()),
      /^Invalid argument: goodsId must be a positive integer; got 'abc'$/,
    );
    expectInvalid(
      await ctx().http.get(`/v1/campaigns/${C.accessKey}/upcoming`).query({ includeOnAir: 'maybe' }),
      /includeOnAir must be true or false \(also 1\/0, yes\/no, on\/off\); got 'maybe'/,
    );
    expectInvalid(
      await ctx().http.delete(`${goods()}/12.5/sku`).query({ sku: 'x' }).set('Authorization', C.auth()),
      /goodsId must be a positive integer; got '12.5'/,
    );
    // Any int64 is an id the path takes: one beyond the ids this service gives is simply not found.
    for (const id of ['9007199254740992', '9007199254740993', '9223372036854775807']) {
      const res = await ctx().http.delete(`${goods()}/${id}`).set('Authorization', C.auth());
      // Named as sent (as a number, 9007199254740993 would read as …992).
      expect([res.status, res.body._s, res.body._e]).toEqual([404, -404, `Goods not found: id ${id} (ids go up to 9007199254740991)`]);
    }
    expectInvalid(
      await ctx().http.delete(`${goods()}/9223372036854775808`).set('Authorization', C.auth()),
      /goodsId must be a positive integer; got '9223372036854775808'/,
    );
    // A body id beyond them is named as sent, not as the float a JSON reader would make of it.
    const tooLarge = await ctx().http.put(goods()).set('Authorization', C.auth()).send({ id: '9223372036854775807', name: 'x' });
    expect([tooLarge.status, tooLarge.body._e]).toEqual([400, "Invalid argument: id is too large: ids go up to 9007199254740991; got '9223372036854775807'"]);
  });

  it('public list: campaigns without a schedule come after the scheduled ones', async () => {
    const D = await ctx().createCustomer('Ordering');
    const make = async (title: string, scheduledAt?: number) =>
      expect(
        (await ctx().http.post(`/v1/console/${D.accessKey}/campaigns`).set('Authorization', D.auth()).send({ title, collectionVisible: true, scheduledAt }))
          .status,
      ).toBe(200);
    await make('unscheduled first-created');
    await make('later', Date.UTC(2031, 0, 2));
    await make('sooner', Date.UTC(2031, 0, 1));
    await make('unscheduled second-created');
    const res = await ctx().http.get(`/v1/campaigns/${D.accessKey}`);
    expect(res.body.results.map((c: Body) => c.title)).toEqual(['sooner', 'later', 'unscheduled first-created', 'unscheduled second-created']);
  });

  it('tokens: the documented claims are exactly what is needed (docs/authentication.md)', async () => {
    const doc = readFileSync(join(__dirname, '..', 'docs', 'authentication.md'), 'utf8');
    for (const needle of ['HS256', 'accessKey', 'exp', 'TOKEN_MAX_TTL', 'Node.js', 'Python', 'Java', 'base64']) expect(doc).toContain(needle);
    const key = Buffer.from(C.secretKey, 'base64');
    const now = Math.floor(Date.now() / 1000);
    const call = (token: string) => ctx().http.get(goods()).query({ count: 1 }).set('Authorization', `Bearer ${token}`);
    // As the Python and Java examples sign it: accessKey, iat, exp.
    expect((await call(sign({ accessKey: C.accessKey, iat: now, exp: now + 3600 }, key, { algorithm: 'HS256' }))).status).toBe(200);
    const noExp = await call(sign({ accessKey: C.accessKey }, key, { algorithm: 'HS256' }));
    expect([noExp.status, noExp.body._s]).toEqual([401, -102]);
    expect(noExp.body._e).toMatch(/exp/);
  });
});
