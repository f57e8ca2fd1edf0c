import type { Response } from 'supertest';
import { describeEngines, TestCustomer } from './support/test-app';

/** Goods endpoints (docs/api-reference.md): success shapes and every applicable error row. */

const GOODS_KEYS = [
  'brand',
  'currency',
  'description',
  'discountPercentage',
  'discountedPrice',
  'id',
  'mediaUrl',
  'medias',
  'name',
  'originalPrice',
  'sku',
  'url',
];
const LIST_ITEM_KEYS = GOODS_KEYS.filter((k) => k !== 'mediaUrl');
const JSON_UTF8 = 'application/json; charset=utf-8';

type Body = Record<string, unknown>;

function expectError(res: Response, status: number, code: number): void {
  expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
  expect(typeof res.body._e).toBe('string');
  expect(res.body._e.length).toBeGreaterThan(0);
  expect(res.headers['content-type']).toBe(JSON_UTF8);
  for (const key of Object.keys(res.body)) expect(['_s', '_e', 'errors']).toContain(key);
}

/** 400 -510; when `field` is given, a validation failure naming it in errors[]. */
function expectInvalid(res: Response, field?: string): void {
  expectError(res, 400, -510);
  if (field !== undefined) {
    expect(Array.isArray(res.body.errors)).toBe(true);
    for (const e of res.body.errors) {
      expect(Object.keys(e).sort()).toEqual(['field', 'message']);
      expect(typeof e.message).toBe('string');
    }
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  }
}

function expectNotFound(res: Response): void {
  expectError(res, 404, -404);
  expect(Object.keys(res.body).sort()).toEqual(['_e', '_s']);
}

function expectGoodsShape(body: Body, currency: string): void {
  expect(Object.keys(body).sort()).toEqual(GOODS_KEYS);
  expect(typeof body.id).toBe('number');
  expect(Number.isSafeInteger(body.id)).toBe(true);
  expect(body.medias).toEqual([]);
  expect(body.currency).toBe(currency);
}

describeEngines('goods API', __filename, (ctx) => {
  const path = (c: TestCustomer) => `/v1/goods/${c.accessKey}`;
  const api = (c: TestCustomer) => ({
    list: (query: Record<string, unknown> = {}) => ctx().http.get(path(c)).query(query).set('Authorization', c.auth()),
    bySku: (value?: string) =>
      ctx()
        .http.get(`${path(c)}/sku`)
        .query(value === undefined ? {} : { value })
        .set('Authorization', c.auth()),
    byUrl: (value?: string) =>
      ctx()
        .http.get(`${path(c)}/url`)
        .query(value === undefined ? {} : { value })
        .set('Authorization', c.auth()),
    register: (body: unknown) =>
      ctx()
        .http.post(path(c))
        .set('Authorization', c.auth())
        .send(body as object),
    update: (body: unknown, by: '' | '/sku' | '/url' = '') =>
      ctx()
        .http.put(`${path(c)}${by}`)
        .set('Authorization', c.auth())
        .send(body as object),
    del: (suffix: string, value?: string) =>
      ctx()
        .http.delete(`${path(c)}${suffix}`)
        .query(value === undefined ? {} : { value })
        .set('Authorization', c.auth()),
  });
  /** The item as stored, looked up by sku (200 expected). */
  const storedBySku = async (c: TestCustomer, sku: string): Promise<Body> => (await api(c).bySku(sku).expect(200)).body as Body;

  /** Registers sequentially (ids ascend with creation order) and returns the created items. */
  async function registerAll(c: TestCustomer, items: Body[]): Promise<Body[]> {
    const out: Body[] = [];
    for (const item of items) {
      const res = await api(c).register(item);
      expect(res.status).toBe(200);
      out.push(res.body);
    }
    return out;
  }

  describe('POST /v1/goods/{accessKey} (register)', () => {
    let c: TestCustomer;
    beforeAll(async () => {
      c = await ctx().createCustomer('Register USD', 'USD');
    });

    it('answers 200 (not 201) with the bare Goods, currency of the customer', async () => {
      const body = {
        name: 'Smart watch 7',
        brand: 'Sampletech',
        description: '45 mm case, GPS',
        url: 'https://shop.example.com/goods/SW-7',
        sku: 'SW-7',
        mediaUrl: 'https://cdn.example.com/sw7.jpg',
        originalPrice: 399,
        discountedPrice: 359.1,
        discountPercentage: 10,
      };
      const res = await api(c).register(body);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_UTF8);
      expectGoodsShape(res.body, 'USD');
      expect(res.body).toEqual({ ...body, id: res.body.id, medias: [], currency: 'USD' });
      expect(res.body.id).toBeGreaterThan(0);

      const stored = await api(c).bySku('SW-7').expect(200);
      expect(stored.body).toEqual(res.body);
    });

    it('registers without mediaUrl and the optional fields (brand, description and mediaUrl read as null; prices and the percentage as 0, numbers as the interface types them)', async () => {
      const res = await api(c).register({ name: 'Minimal', sku: 'MIN-1', url: 'http://shop.example.com/min-1' });
      expect(res.status).toBe(200);
      expectGoodsShape(res.body, 'USD');
      expect(res.body).toMatchObject({
        name: 'Minimal',
        sku: 'MIN-1',
        url: 'http://shop.example.com/min-1',
        brand: null,
        description: null,
        mediaUrl: null,
        originalPrice: 0,
        discountedPrice: 0,
        discountPercentage: 0,
      });
    });

    it('a KRW customer gets KRW', async () => {
      const krw = await ctx().createCustomer('Register KRW');
      const res = await api(krw).register({ name: 'n', sku: 'K-1', url: 'https://k.example.com/1' }).expect(200);
      expect(res.body.currency).toBe('KRW');
    });

    it('ignores unknown request fields (currency, medias, foo): never stored, never echoed', async () => {
      const res = await api(c).register({
        name: 'Echoed back',
        sku: 'ECHO-1',
        url: 'https://shop.example.com/echo-1',
        currency: 'EUR',
        medias: [{ id: 5, mediaType: 'IMAGE', url: 'https://evil.example.com/x.jpg', thumbnails: [] }],
        foo: 'bar',
        customerId: 999,
      });
      expect(res.status).toBe(200);
      expectGoodsShape(res.body, 'USD');
      expect(res.body).not.toHaveProperty('foo');
      expect(res.body).not.toHaveProperty('customerId');

      for (const read of [await api(c).bySku('ECHO-1'), await api(c).byUrl('https://shop.example.com/echo-1')]) {
        expect(read.status).toBe(200);
        expectGoodsShape(read.body, 'USD');
        expect(read.body.medias).toEqual([]);
        expect(read.text).not.toContain('bar');
        expect(read.text).not.toContain('EUR');
      }
    });

    it.each(['name', 'sku', 'url'])('missing %s → 400 -510 with errors[{field, message}]', async (field) => {
      const body: Body = { name: 'x', sku: `MISS-${field}`, url: `https://shop.example.com/miss-${field}` };
      delete body[field];
      const res = await api(c).register(body);
      expectInvalid(res, field);
      expect(res.body.errors.every((e: { field: string }) => e.field === field)).toBe(true);
    });

    it('missing name, sku and url at once → one error per field', async () => {
      const res = await api(c).register({ brand: 'only brand' });
      expectInvalid(res);
      expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['name', 'sku', 'url']);
    });

    it('duplicate sku → 409 -409 naming the key and the holder’s id; nothing stored', async () => {
      const first = await api(c).register({ name: 'first', sku: 'DUP-SKU', url: 'https://shop.example.com/dup-1' }).expect(200);
      const res = await api(c).register({ name: 'second', sku: 'DUP-SKU', url: 'https://shop.example.com/dup-2' });
      expectError(res, 409, -409);
      expect(res.body._e).toContain('sku');
      expect(res.body._e).toContain('DUP-SKU');
      expect(res.body._e).toMatch(new RegExp(`\\b${first.body.id}\\b`));
      expectNotFound(await api(c).byUrl('https://shop.example.com/dup-2'));
    });

    it('duplicate url → 409 -409 naming the key and the holder’s id; nothing stored', async () => {
      const first = await api(c).register({ name: 'first', sku: 'DUPU-1', url: 'https://shop.example.com/dup-url' }).expect(200);
      const res = await api(c).register({ name: 'second', sku: 'DUPU-2', url: 'https://shop.example.com/dup-url' });
      expectError(res, 409, -409);
      expect(res.body._e).toContain('url');
      expect(res.body._e).toContain('https://shop.example.com/dup-url');
      expect(res.body._e).toMatch(new RegExp(`\\b${first.body.id}\\b`));
      expectNotFound(await api(c).bySku('DUPU-2'));
    });

    it('skus are case-sensitive keys: "dup-sku" is not "DUP-SKU"', async () => {
      await api(c).register({ name: 'lower', sku: 'dup-sku', url: 'https://shop.example.com/dup-lower' }).expect(200);
    });

    const long = (n: number) => 'a'.repeat(n);
    it.each<[string, string, unknown]>([
      ['url', 'ftp: url', 'ftp://shop.example.com/x'],
      ['url', 'relative url', '/goods/1'],
      ['url', 'url without scheme', 'shop.example.com/goods/1'],
      ['url', 'url of 2049 characters', `https://shop.example.com/${long(2049 - 25)}`],
      ['mediaUrl', 'ftp: mediaUrl', 'ftp://cdn.example.com/a.jpg'],
      ['mediaUrl', 'relative mediaUrl', 'img/a.jpg'],
      ['name', 'name of 256 characters', long(256)],
      ['name', 'blank name', '   '],
      ['name', 'numeric name', 123],
      ['brand', 'brand of 256 characters', long(256)],
      ['sku', 'sku of 129 characters', long(129)],
      ['sku', 'empty sku', ''],
      ['description', 'description of 10001 characters', long(10_001)],
      ['originalPrice', 'negative price', -1],
      ['originalPrice', 'price over 1e12', 1e12 + 1],
      ['discountedPrice', 'non-numeric text price', 'abc'],
      ['discountedPrice', 'boolean price', true],
      ['discountPercentage', 'discountPercentage 101', 101],
      ['discountPercentage', 'negative discountPercentage', -0.5],
    ])('%s: %s → 400 -510', async (field, _label, value) => {
      const sku = `BAD-${field}-${String(_label).replace(/\W+/g, '-')}`.slice(0, 100);
      const body: Body = { name: 'bad', sku, url: `https://shop.example.com/${sku}`, [field]: value };
      const res = await api(c).register(body);
      expectInvalid(res, field);
      if (field !== 'sku') expectNotFound(await api(c).bySku(sku));
    });

    it('accepts the boundaries: name 255, brand 255, sku 128, description 10000, url 2048, prices 0 and 1e12, discount 100', async () => {
      const sku = `B${long(127)}`;
      const url = `https://shop.example.com/${long(2048 - 25)}`;
      expect(url).toHaveLength(2048);
      const body = {
        name: long(255),
        brand: long(255),
        sku,
        url,
        description: long(10_000),
        originalPrice: 1e12,
        discountedPrice: 0,
        discountPercentage: 100,
      };
      const res = await api(c).register(body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject(body);
      const stored = await api(c).bySku(sku).expect(200);
      expect(stored.body).toMatchObject(body);
    });

    it('numeric text price "19.99" is accepted as the number 19.99', async () => {
      const res = await api(c).register({
        name: 'text price',
        sku: 'TEXT-PRICE',
        url: 'https://shop.example.com/text-price',
        originalPrice: '19.99',
        discountPercentage: '5',
      });
      expect(res.status).toBe(200);
      expect(res.body.originalPrice).toBe(19.99);
      expect(res.body.discountPercentage).toBe(5);
      const stored = await api(c).bySku('TEXT-PRICE').expect(200);
      expect(stored.body.originalPrice).toBe(19.99);
      expect(stored.body.discountPercentage).toBe(5);
    });

    it('a name and brand at their 255-character limit that grow under NFKC (e.g. "㈜") are accepted and searchable', async () => {
      // '㈜' (U+321C) is one character, as in Korean company names; NFKC turns it into "(주)".
      const body = {
        name: `㈜${long(254)}`,
        brand: `㈜${'b'.repeat(254)}`,
        sku: `N${long(127)}`,
        url: 'https://shop.example.com/nfkc-limit',
      };
      const res = await api(c).register(body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject(body);
      const found = await api(c).list({ searchKeyword: '(주)aaa' }).expect(200);
      expect(found.body.results.map((g: Body) => g.id)).toEqual([res.body.id]);
    });

    it('malformed JSON → 400 -510', async () => {
      const res = await ctx().http.post(path(c)).set('Authorization', c.auth()).set('Content-Type', 'application/json').send('{"name": "x", "sku": ');
      expectError(res, 400, -510);
    });

    it('a JSON array or a string instead of an object → 400 -510', async () => {
      const list = await api(c).register([{ name: 'x', sku: 'ARR', url: 'https://shop.example.com/arr' }]);
      expectInvalid(list);
      // Told as a list, not as every required field missing.
      expect(list.body._e).toBe('Invalid argument: the body must be a JSON object, not a list');
      const res = await ctx().http.post(path(c)).set('Authorization', c.auth()).set('Content-Type', 'application/json').send('"just a string"');
      expectError(res, 400, -510);
    });

    it('text that is not well-formed Unicode (a lone UTF-16 surrogate) → 400 -510 naming the field, nothing stored', async () => {
      const lone = 'Watch \ud800 7';
      const valid = { name: 'Surrogates', sku: 'SUR-1', url: 'https://shop.example.com/sur-1' };
      for (const [field, value] of [
        ['name', lone],
        ['brand', lone],
        ['description', `${lone}\n`],
        ['sku', 'SUR-\udfff'],
        ['url', 'https://shop.example.com/\ud83d'],
        ['mediaUrl', 'https://cdn.example.com/\udc00.jpg'],
      ] as const) {
        const res = await api(c).register({ ...valid, [field]: value });
        expectInvalid(res, field);
        expect(res.body.errors[0].message).toMatch(/well-formed Unicode/);
      }
      expectError(await api(c).bySku('SUR-1'), 404, -404);
      // A whole pair (an emoji) is fine, and is stored exactly.
      const ok = await api(c).register({ ...valid, name: 'Watch 😀 7', description: '\u{1F600}' });
      expect(ok.status).toBe(200);
      expect((await api(c).bySku('SUR-1')).body).toMatchObject({ name: 'Watch 😀 7', description: '😀' });
      // Updates refuse it too and leave the item alone.
      expectInvalid(await api(c).update({ sku: 'SUR-1', name: lone }, '/sku'), 'name');
      expectInvalid(await api(c).update({ id: ok.body.id, brand: '\udbff' }), 'brand');
      expect((await api(c).bySku('SUR-1')).body).toMatchObject({ name: 'Watch 😀 7', brand: null });
    });

    it('text holding U+0000 → 400 -510 naming the field and the character, nothing stored', async () => {
      for (const field of ['name', 'brand', 'description', 'sku']) {
        const res = await api(c).register({ name: 'Nul', sku: 'NUL-1', url: 'https://shop.example.com/nul-1', [field]: 'x\u0000y' });
        expectInvalid(res, field);
        expect(res.body.errors[0].message).toMatch(/U\+0000/);
      }
      expectError(await api(c).bySku('NUL-1'), 404, -404);
    });

    it('null for a field that cannot be cleared is left out; blank text clears a nullable one', async () => {
      const created = await api(c).register({ id: null, name: 'Blank', sku: 'BLANK-1', url: 'https://shop.example.com/blank-1', brand: '', originalPrice: '' });
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({ name: 'Blank', brand: null, originalPrice: 0 });
      expectInvalid(await api(c).register({ name: null, sku: 'BLANK-2', url: 'https://shop.example.com/blank-2' }), 'name');
      const updated = await api(c).update({ sku: 'BLANK-1', name: null, url: null, brand: 'B', description: '' }, '/sku');
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ name: 'Blank', url: 'https://shop.example.com/blank-1', brand: 'B', description: '' });
      const cleared = await api(c).update({ id: created.body.id, brand: '  ', mediaUrl: '', discountPercentage: ' ' });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({ brand: null, mediaUrl: null, discountPercentage: 0, description: '' });
      expectInvalid(await api(c).update({ sku: 'BLANK-1', name: ' ' }, '/sku'), 'name');
    });
  });

  describe('decimal prices', () => {
    let c: TestCustomer;
    let id: number;
    beforeAll(async () => {
      c = await ctx().createCustomer('Decimals');
    });

    it('19.99 and 1234567.8901 come back exactly from register, list and lookups', async () => {
      const res = await api(c).register({
        name: 'Decimal item',
        sku: 'DEC-1',
        url: 'https://shop.example.com/dec-1',
        originalPrice: 1234567.8901,
        discountedPrice: 19.99,
        discountPercentage: 12.3456,
      });
      expect(res.status).toBe(200);
      id = res.body.id;
      const expected = { originalPrice: 1234567.8901, discountedPrice: 19.99, discountPercentage: 12.3456 };
      expect(res.body).toMatchObject(expected);
      // The JSON text itself carries the exact decimals (no 19.990000000000002).
      expect(res.text).toContain('"originalPrice":1234567.8901');
      expect(res.text).toContain('"discountedPrice":19.99');

      const list = await api(c).list().expect(200);
      expect(list.body.results[0]).toMatchObject({ id, ...expected });
      expect(list.text).toContain('1234567.8901');
      expect((await api(c).bySku('DEC-1').expect(200)).body).toMatchObject(expected);
      expect((await api(c).byUrl('https://shop.example.com/dec-1').expect(200)).body).toMatchObject(expected);
    });

    it('after an update the swapped prices come back exactly', async () => {
      const res = await api(c).update({ id, originalPrice: 19.99, discountedPrice: 1234567.8901, discountPercentage: 0.0001 });
      expect(res.status).toBe(200);
      const expected = { originalPrice: 19.99, discountedPrice: 1234567.8901, discountPercentage: 0.0001 };
      expect(res.body).toMatchObject(expected);
      expect((await api(c).bySku('DEC-1').expect(200)).body).toMatchObject(expected);
      expect((await api(c).list().expect(200)).body.results[0]).toMatchObject(expected);
    });

    it('numeric text is rounded on its decimal digits, then checked against the limits; a power of ten is read', async () => {
      const res = await api(c).register({
        name: 'Text decimals',
        sku: 'DEC-TEXT',
        url: 'https://shop.example.com/dec-text',
        // As a double, 123456789012.12345 is 123456789012.123443…, which would round to .1234.
        originalPrice: '123456789012.12345',
        discountedPrice: '1.5E+3',
        discountPercentage: '100.00004',
      });
      expect(res.status).toBe(200);
      const expected = { originalPrice: 123456789012.1235, discountedPrice: 1500, discountPercentage: 100 };
      expect(res.body).toMatchObject(expected);
      expect(res.text).toContain('"originalPrice":123456789012.1235');
      expect((await api(c).bySku('DEC-TEXT').expect(200)).body).toMatchObject(expected);
      // Rounded, 1000000000000.00005 is 1000000000000.0001: over the limit, refused rather than stored as 1e12.
      expectInvalid(await api(c).update({ sku: 'DEC-TEXT', originalPrice: '1000000000000.00005' }, '/sku'), 'originalPrice');
      expect((await api(c).update({ sku: 'DEC-TEXT', originalPrice: '1E+12' }, '/sku')).body.originalPrice).toBe(1e12);
    });

    it('a JSON number is rounded on the digits it was written with, as text is: never read as a double first', async () => {
      // Raw JSON: JSON.parse would read 123456789012.12345 as 123456789012.12344 (stored .1234) and
      // 1000000000000.00005 as 1e12 (under the limit).
      const raw = (text: string, method: 'post' | 'put' = 'post', by = '') =>
        ctx()
          .http[method](`${path(c)}${by}`)
          .set('Authorization', c.auth())
          .set('Content-Type', 'application/json')
          .send(text);
      const res = await raw(
        '{"name": "Number decimals", "sku": "DEC-NUM", "url": "https://shop.example.com/dec-num", "originalPrice": 123456789012.12345, "discountedPrice": 999999999999.99994}',
      );
      expect(res.status).toBe(200);
      expect(res.text).toContain('"originalPrice":123456789012.1235');
      expect(res.text).toContain('"discountedPrice":999999999999.9999');
      expect((await api(c).bySku('DEC-NUM').expect(200)).text).toContain('"originalPrice":123456789012.1235');
      expectInvalid(await raw('{"sku": "DEC-NUM", "originalPrice": 1000000000000.00005}', 'put', '/sku'), 'originalPrice');
      // The same in a sync.
      const synced = await ctx()
        .http.post(`${path(c)}/sync`)
        .set('Authorization', c.auth())
        .set('Content-Type', 'application/json')
        .send('[{"sku": "DEC-NUM", "name": "Number decimals", "url": "https://shop.example.com/dec-num", "originalPrice": 1.000049999999999999}]');
      expect(synced.status).toBe(200);
      // As a double 1.00005, which would round up to 1.0001.
      expect(synced.text).toContain('"originalPrice":1,');
    });

    it('a price with more than 4 fractional digits reads the same in the write response as in every later read', async () => {
      const res = await api(c).register({
        name: 'Fine price',
        sku: 'DEC-FINE',
        url: 'https://shop.example.com/dec-fine',
        originalPrice: 0.12345,
        discountedPrice: 1.00005,
        discountPercentage: 33.33333,
      });
      expect(res.status).toBe(200);
      const stored = await api(c).bySku('DEC-FINE').expect(200);
      // Whatever precision the service keeps (at least 4 digits), the created item it answers is the stored one.
      expect(res.body).toEqual(stored.body);
      expect(stored.body.originalPrice).toBeCloseTo(0.12345, 4);

      const updated = await api(c).update({ id: res.body.id, originalPrice: 7.77777 });
      expect(updated.status).toBe(200);
      expect(updated.body).toEqual((await api(c).bySku('DEC-FINE').expect(200)).body);
    });

    it('large prices near the limit keep their 4 fractional digits', async () => {
      const res = await api(c).register({
        name: 'Big',
        sku: 'DEC-BIG',
        url: 'https://shop.example.com/dec-big',
        originalPrice: 99999999.9999,
        discountedPrice: 123456789012,
      });
      expect(res.status).toBe(200);
      const stored = await api(c).bySku('DEC-BIG').expect(200);
      expect(stored.body.originalPrice).toBe(99999999.9999);
      expect(stored.body.discountedPrice).toBe(123456789012);
    });
  });

  describe('GET /v1/goods/{accessKey} (list)', () => {
    let c: TestCustomer;
    let created: Body[];
    beforeAll(async () => {
      c = await ctx().createCustomer('Lister');
      created = await registerAll(
        c,
        Array.from({ length: 32 }, (_, i) => ({
          name: `Item ${i + 1}`,
          sku: `L-${i + 1}`,
          url: `https://shop.example.com/l/${i + 1}`,
          mediaUrl: `https://cdn.example.com/l/${i + 1}.jpg`,
          originalPrice: i + 1,
        })),
      );
    });

    it('defaults to page 1, count 30, newest first; totalCount counts all; _s 0; items have no mediaUrl', async () => {
      const res = await api(c).list();
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_UTF8);
      expect(Object.keys(res.body).sort()).toEqual(['_s', 'results', 'totalCount']);
      expect(res.body._s).toBe(0);
      expect(res.body.totalCount).toBe(32);
      expect(res.body.results).toHaveLength(30);
      const ids = res.body.results.map((g: Body) => g.id);
      expect(ids).toEqual(
        created
          .map((g) => g.id)
          .reverse()
          .slice(0, 30),
      );
      for (const item of res.body.results) {
        expect(Object.keys(item).sort()).toEqual(LIST_ITEM_KEYS);
        expect(item).not.toHaveProperty('mediaUrl');
      }
      const { mediaUrl: _omit, ...newest } = created[31];
      expect(res.body.results[0]).toEqual(newest);
    });

    it('pages: page 2 with count 2 gives the 3rd and 4th newest', async () => {
      const res = await api(c).list({ page: 2, count: 2 }).expect(200);
      expect(res.body.totalCount).toBe(32);
      expect(res.body.results.map((g: Body) => g.sku)).toEqual(['L-30', 'L-29']);
    });

    it('page 2 with the default count holds the 2 oldest; a page past the end is empty', async () => {
      const second = await api(c).list({ page: 2 }).expect(200);
      expect(second.body.results.map((g: Body) => g.sku)).toEqual(['L-2', 'L-1']);
      expect(second.body.totalCount).toBe(32);
      const past = await api(c).list({ page: 9, count: 10 }).expect(200);
      expect(past.body).toEqual({ results: [], totalCount: 32, _s: 0 });
      // Far past the end (a page the service reads only once it knows the count).
      const far = await api(c).list({ page: 200, count: 10 }).expect(200);
      expect(far.body).toEqual({ results: [], totalCount: 32, _s: 0 });
    });

    it('count 100 (the maximum) returns everything', async () => {
      const res = await api(c).list({ count: 100 }).expect(200);
      expect(res.body.results).toHaveLength(32);
    });

    it.each<[string, Record<string, unknown>]>([
      ['count 0', { count: 0 }],
      ['count -1', { count: -1 }],
      ['page 0', { page: 0 }],
      ['page x', { page: 'x' }],
      ['count 1.5', { count: 1.5 }],
    ])('%s → 400 -510', async (_label, query) => {
      const res = await api(c).list(query);
      expectInvalid(res, Object.keys(query)[0]);
    });
  });

  describe('list pages past the first thousand items', () => {
    // The first pages of the whole catalog are read while the catalog version is, deeper ones once the
    // count is known (GoodsService.list): both kinds join up, newest first, with the same items.
    it('pages of 100 walk 1,050 goods without a gap or a repeat, across offset 1,000', async () => {
      const c = await ctx().createCustomer('Deep pager');
      const elements = Array.from({ length: 1050 }, (_, i) => ({ name: `Deep ${i}`, sku: `D-${i}`, url: `https://shop.example.com/d/${i}` }));
      const synced = await ctx()
        .http.post(`${path(c)}/sync`)
        .set('Authorization', c.auth())
        .send(elements)
        .expect(200);
      const ids = (synced.body.results as Body[]).map((r) => r.id as number).sort((a, b) => b - a);
      const seen: number[] = [];
      for (let page = 1; page <= 12; page++) {
        const res = await api(c).list({ page, count: 100 }).expect(200);
        expect(res.body.totalCount).toBe(1050);
        for (const item of res.body.results as Body[]) expect(Object.keys(item).sort()).toEqual(LIST_ITEM_KEYS);
        seen.push(...(res.body.results as Body[]).map((g) => g.id as number));
      }
      expect(seen).toEqual(ids);
      // Offset 990, read early, ends past item 1,000; offset 1,000 is the first read after the count.
      const straddling = await api(c).list({ page: 34, count: 30 }).expect(200);
      expect((straddling.body.results as Body[]).map((g) => g.id)).toEqual(ids.slice(990, 1020));
      const deep = await api(c).list({ page: 101, count: 10 }).expect(200);
      expect((deep.body.results as Body[]).map((g) => g.id)).toEqual(ids.slice(1000, 1010));
    });
  });

  describe('list search', () => {
    let c: TestCustomer;
    let items: Record<string, Body>;
    beforeAll(async () => {
      c = await ctx().createCustomer('Searcher');
      const [watch, korean, band, phoneCase, mug] = await registerAll(c, [
        { name: 'Smart watch', brand: 'Acme', sku: 'SW-1', url: 'https://shop.example.com/s/1' },
        { name: '스마트 워치 7', brand: '삼성', sku: 'KR-7', url: 'https://shop.example.com/s/2' },
        { name: 'Leather band', brand: 'Watchmakers Ltd', sku: 'LB-1', url: 'https://shop.example.com/s/3' },
        { name: 'Phone case', brand: 'Acme', sku: 'XWATCHX-9', url: 'https://shop.example.com/s/4' },
        { name: 'Coffee mug', brand: 'Kitchen', sku: 'MUG-1', url: 'https://shop.example.com/watch', description: 'watch out, hot' },
      ]);
      items = { watch, korean, band, phoneCase, mug };
    });

    const skus = (res: Response) => res.body.results.map((g: Body) => g.sku);

    it('"WATCH" finds name, brand and sku matches case-insensitively, newest first (not description or url)', async () => {
      const res = await api(c).list({ searchKeyword: 'WATCH' }).expect(200);
      expect(skus(res)).toEqual(['XWATCHX-9', 'LB-1', 'SW-1']);
      expect(res.body.totalCount).toBe(3);
      expect(res.body._s).toBe(0);
      const lower = await api(c).list({ searchKeyword: 'watch' }).expect(200);
      expect(skus(lower)).toEqual(['XWATCHX-9', 'LB-1', 'SW-1']);
    });

    it('"WATCH" finds "Smart watch" (the name)', async () => {
      const res = await api(c).list({ searchKeyword: 'SMART WATCH' }).expect(200);
      expect(res.body.results).toEqual([(({ mediaUrl: _omit, ...rest }) => rest)(items.watch)]);
      expect(res.body.totalCount).toBe(1);
    });

    it('Hangul: "워치" finds "스마트 워치 7"', async () => {
      const res = await api(c).list({ searchKeyword: '워치' }).expect(200);
      expect(skus(res)).toEqual(['KR-7']);
      expect(res.body.results[0].name).toBe('스마트 워치 7');
      expect(res.body.totalCount).toBe(1);
      const brand = await api(c).list({ searchKeyword: '삼성' }).expect(200);
      expect(skus(brand)).toEqual(['KR-7']);
    });

    it('matches the sku case-insensitively and the brand', async () => {
      expect(skus(await api(c).list({ searchKeyword: 'sw-1' }).expect(200))).toEqual(['SW-1']);
      expect(skus(await api(c).list({ searchKeyword: 'acme' }).expect(200))).toEqual(['XWATCHX-9', 'SW-1']);
    });

    it('totalCount counts all matches while paging', async () => {
      const res = await api(c).list({ searchKeyword: 'Watch', page: 2, count: 1 }).expect(200);
      expect(skus(res)).toEqual(['LB-1']);
      expect(res.body.totalCount).toBe(3);
    });

    it('ignores white space at the ends of the keyword; white space only is the same as no keyword', async () => {
      expect(skus(await api(c).list({ searchKeyword: '  sw-1 ' }).expect(200))).toEqual(['SW-1']);
      const all = (await api(c).list({}).expect(200)).body;
      expect((await api(c).list({ searchKeyword: '   ' }).expect(200)).body).toEqual(all);
    });

    it('no match → results [] and totalCount 0', async () => {
      const res = await api(c).list({ searchKeyword: 'zzz-no-such-thing' }).expect(200);
      expect(res.body).toEqual({ results: [], totalCount: 0, _s: 0 });
    });

    it('keywords with LIKE wildcards are taken literally', async () => {
      expect((await api(c).list({ searchKeyword: '%' }).expect(200)).body.totalCount).toBe(0);
      expect((await api(c).list({ searchKeyword: '_' }).expect(200)).body.totalCount).toBe(0);
    });

    it('list and search reflect every write at once (register, update, key change, delete, sync)', async () => {
      const search = async (kw: string) => api(c).list({ searchKeyword: kw }).expect(200);
      expect((await search('watch')).body.totalCount).toBe(3);
      expect((await api(c).list().expect(200)).body.totalCount).toBe(5);

      // Update the mug's name so that it matches.
      await api(c).update({ id: items.mug.id, name: 'Watch mug' }).expect(200);
      let res = await search('watch');
      expect(skus(res)).toEqual(['MUG-1', 'XWATCHX-9', 'LB-1', 'SW-1']);
      expect(res.body.totalCount).toBe(4);
      expect(res.body.results[0].name).toBe('Watch mug');

      // ...and back out of the match by a name change through PUT /sku.
      await api(c).update({ sku: 'MUG-1', name: 'Coffee mug' }, '/sku').expect(200);
      expect(skus(await search('watch'))).toEqual(['XWATCHX-9', 'LB-1', 'SW-1']);

      // A sku change moves an item out of a sku match.
      await api(c).update({ url: items.phoneCase.url, sku: 'PC-9' }, '/url').expect(200);
      expect(skus(await search('watch'))).toEqual(['LB-1', 'SW-1']);
      expect(skus(await search('pc-9'))).toEqual(['PC-9']);

      // A register shows up at once, on the first page and in the count.
      const added = await api(c).register({ name: 'Pocket WATCH', sku: 'PW-1', url: 'https://shop.example.com/s/6' }).expect(200);
      res = await search('watch');
      expect(skus(res)).toEqual(['PW-1', 'LB-1', 'SW-1']);
      expect(res.body.totalCount).toBe(3);
      expect((await api(c).list().expect(200)).body.totalCount).toBe(6);

      // A delete disappears at once.
      await api(c).del(`/${added.body.id}`).expect(200);
      await api(c).del('/sku', 'LB-1').expect(200);
      res = await search('watch');
      expect(skus(res)).toEqual(['SW-1']);
      expect(res.body.totalCount).toBe(1);
      const all = await api(c).list().expect(200);
      expect(all.body.totalCount).toBe(4);
      expect(all.body.results).toHaveLength(4);

      // A sync write too.
      const sync = await ctx()
        .http.post(`${path(c)}/sync`)
        .set('Authorization', c.auth())
        .send([{ sku: 'KR-7', name: 'Galaxy watch' }])
        .expect(200);
      expect(sync.body.updateCount).toBe(1);
      expect(skus(await search('watch'))).toEqual(['KR-7', 'SW-1']);
      expect((await search('워치')).body).toEqual({ results: [], totalCount: 0, _s: 0 });
    });
  });

  describe('GET /sku and /url (lookup)', () => {
    let c: TestCustomer;
    let item: Body;
    beforeAll(async () => {
      c = await ctx().createCustomer('Lookups', 'EUR');
      [item] = await registerAll(c, [
        {
          name: 'Lookup item',
          sku: 'LOOK 1/ä',
          url: 'https://shop.example.com/look?id=1&x=y',
          mediaUrl: 'https://cdn.example.com/look.jpg',
          brand: 'B',
        },
      ]);
    });

    it('by sku returns one Goods with mediaUrl', async () => {
      const res = await api(c).bySku('LOOK 1/ä');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_UTF8);
      expectGoodsShape(res.body, 'EUR');
      expect(res.body).toEqual(item);
      expect(res.body.mediaUrl).toBe('https://cdn.example.com/look.jpg');
    });

    it('by url returns one Goods with mediaUrl', async () => {
      const res = await api(c).byUrl('https://shop.example.com/look?id=1&x=y');
      expect(res.status).toBe(200);
      expectGoodsShape(res.body, 'EUR');
      expect(res.body).toEqual(item);
    });

    it("by id returns one Goods with mediaUrl; an unknown id, another customer's item or a bad id is refused", async () => {
      const res = await ctx()
        .http.get(`/v1/goods/${c.accessKey}/${String(item.id)}`)
        .set('Authorization', c.auth());
      expect(res.status).toBe(200);
      expectGoodsShape(res.body, 'EUR');
      expect(res.body).toEqual(item);
      expectNotFound(await ctx().http.get(`/v1/goods/${c.accessKey}/999999999`).set('Authorization', c.auth()));
      const other = await ctx().createCustomer('Lookups elsewhere');
      expectNotFound(
        await ctx()
          .http.get(`/v1/goods/${other.accessKey}/${String(item.id)}`)
          .set('Authorization', other.auth()),
      );
      expectInvalid(await ctx().http.get(`/v1/goods/${c.accessKey}/abc`).set('Authorization', c.auth()), 'goodsId');
      // The sku and url lookups keep their paths.
      expect((await api(c).bySku('LOOK 1/ä')).status).toBe(200);
    });

    it('unknown sku or url → 404 -404', async () => {
      expectNotFound(await api(c).bySku('NOPE'));
      expectNotFound(await api(c).byUrl('https://shop.example.com/nope'));
      // Keys are exact: a different case of the sku is another sku.
      expectNotFound(await api(c).bySku('look 1/ä'));
    });

    it('missing or empty value → 400 -510', async () => {
      expectInvalid(await api(c).bySku(), 'value');
      expectInvalid(await api(c).byUrl(), 'value');
      expectInvalid(await api(c).bySku(''), 'value');
    });
  });

  describe('PUT /v1/goods/{accessKey} (update by id)', () => {
    let c: TestCustomer;
    let item: Body;
    let other: Body;
    beforeAll(async () => {
      c = await ctx().createCustomer('Updater', 'USD');
      [item, other] = await registerAll(c, [
        {
          name: 'Original name',
          brand: 'Original brand',
          description: 'Original description',
          sku: 'UPD-1',
          url: 'https://shop.example.com/upd-1',
          mediaUrl: 'https://cdn.example.com/upd-1.jpg',
          originalPrice: 100,
          discountedPrice: 90,
          discountPercentage: 10,
        },
        { name: 'Other', sku: 'UPD-OTHER', url: 'https://shop.example.com/upd-other' },
      ]);
    });

    it('is partial: absent fields keep their value', async () => {
      const res = await api(c).update({ id: item.id, name: 'New name', discountedPrice: 80 });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_UTF8);
      expectGoodsShape(res.body, 'USD');
      item = { ...item, name: 'New name', discountedPrice: 80 };
      expect(res.body).toEqual(item);
      expect((await api(c).bySku('UPD-1').expect(200)).body).toEqual(item);
    });

    it('ignores unknown fields in the body (currency, medias, foo)', async () => {
      const res = await api(c).update({ ...item, currency: 'EUR', medias: [{ id: 1 }], foo: 'bar' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(item);
    });

    it('null clears description, brand and mediaUrl; other fields keep', async () => {
      const res = await api(c).update({ id: item.id, description: null, brand: null, mediaUrl: null });
      expect(res.status).toBe(200);
      item = { ...item, description: null, brand: null, mediaUrl: null };
      expect(res.body).toEqual(item);
      expect((await api(c).bySku('UPD-1').expect(200)).body).toEqual(item);
    });

    it('null clears a price (it reads 0)', async () => {
      const res = await api(c).update({ id: item.id, discountPercentage: null });
      expect(res.status).toBe(200);
      item = { ...item, discountPercentage: 0 };
      expect(res.body).toEqual(item);
    });

    it('sku and url may both change; the old ones stop resolving and become free', async () => {
      const res = await api(c).update({ id: item.id, sku: 'UPD-1-NEW', url: 'https://shop.example.com/upd-1-new' });
      expect(res.status).toBe(200);
      item = { ...item, sku: 'UPD-1-NEW', url: 'https://shop.example.com/upd-1-new' };
      expect(res.body).toEqual(item);
      expect((await api(c).bySku('UPD-1-NEW').expect(200)).body).toEqual(item);
      expect((await api(c).byUrl('https://shop.example.com/upd-1-new').expect(200)).body).toEqual(item);
      expectNotFound(await api(c).bySku('UPD-1'));
      expectNotFound(await api(c).byUrl('https://shop.example.com/upd-1'));

      const reuse = await api(c).register({ name: 'Reuses old keys', sku: 'UPD-1', url: 'https://shop.example.com/upd-1' });
      expect(reuse.status).toBe(200);
      expect(reuse.body.id).not.toBe(item.id);
    });

    it('missing id → 400 -510 (errors names id); non-integer id → 400', async () => {
      expectInvalid(await api(c).update({ name: 'no id' }), 'id');
      expectInvalid(await api(c).update({ id: 'abc', name: 'x' }), 'id');
      expectInvalid(await api(c).update({ id: 1.5, name: 'x' }), 'id');
      expectInvalid(await api(c).update({ id: 0, name: 'x' }), 'id');
    });

    it('unknown id → 404 -404', async () => {
      expectNotFound(await api(c).update({ id: 987654321, name: 'ghost' }));
    });

    it('changing sku or url to another item’s → 409 -409 naming it; the item is unchanged', async () => {
      const sku = await api(c).update({ id: item.id, sku: 'UPD-OTHER', name: 'should not stick' });
      expectError(sku, 409, -409);
      expect(sku.body._e).toContain('UPD-OTHER');
      expect(sku.body._e).toMatch(new RegExp(`\\b${other.id}\\b`));
      const url = await api(c).update({ id: item.id, url: 'https://shop.example.com/upd-other' });
      expectError(url, 409, -409);
      expect(url.body._e).toContain('url');
      expect(url.body._e).toMatch(new RegExp(`\\b${other.id}\\b`));
      expect(await storedBySku(c, item.sku as string)).toEqual(item);
      expect((await api(c).bySku('UPD-OTHER').expect(200)).body).toEqual(other);
    });

    it.each(['name', 'sku', 'url'])('%s: null is the same as leaving it out → 200 and the item is unchanged', async (field) => {
      const res = await api(c).update({ id: item.id, [field]: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(expect.objectContaining({ id: item.id, [field]: item[field] }));
      expect(await storedBySku(c, item.sku as string)).toEqual(item);
    });

    it.each<[string, unknown]>([
      ['name', ''],
      ['url', 'ftp://shop.example.com/x'],
      ['originalPrice', -5],
      ['discountPercentage', 101],
      ['description', 'a'.repeat(10_001)],
    ])('%s: %p → 400 -510 and the item is unchanged', async (field, value) => {
      expectInvalid(await api(c).update({ id: item.id, [field]: value }), field);
      expect(await storedBySku(c, item.sku as string)).toEqual(item);
    });
  });

  describe('PUT /sku and PUT /url', () => {
    let c: TestCustomer;
    let item: Body;
    let other: Body;
    beforeAll(async () => {
      c = await ctx().createCustomer('Key updater');
      [item, other] = await registerAll(c, [
        { name: 'Keyed', brand: 'K', sku: 'KEY-1', url: 'https://shop.example.com/key-1', originalPrice: 10 },
        { name: 'Keyed other', sku: 'KEY-2', url: 'https://shop.example.com/key-2' },
      ]);
    });

    it('PUT /sku finds the item by sku; url and other fields may change', async () => {
      const res = await api(c).update({ sku: 'KEY-1', name: 'Renamed by sku', url: 'https://shop.example.com/key-1-moved' }, '/sku');
      expect(res.status).toBe(200);
      expectGoodsShape(res.body, 'KRW');
      item = { ...item, name: 'Renamed by sku', url: 'https://shop.example.com/key-1-moved' };
      expect(res.body).toEqual(item);
      expect((await api(c).byUrl('https://shop.example.com/key-1-moved').expect(200)).body).toEqual(item);
      expectNotFound(await api(c).byUrl('https://shop.example.com/key-1'));
    });

    it('PUT /sku: unknown sku → 404 -404; missing sku → 400 -510; url taken → 409', async () => {
      expectNotFound(await api(c).update({ sku: 'KEY-NOPE', name: 'x' }, '/sku'));
      expectInvalid(await api(c).update({ name: 'x' }, '/sku'), 'sku');
      const clash = await api(c).update({ sku: 'KEY-1', url: 'https://shop.example.com/key-2' }, '/sku');
      expectError(clash, 409, -409);
      expect(clash.body._e).toMatch(new RegExp(`\\b${other.id}\\b`));
      expect((await api(c).bySku('KEY-1').expect(200)).body).toEqual(item);
    });

    it('PUT /url finds the item by url; sku and other fields may change', async () => {
      const res = await api(c).update({ url: item.url, sku: 'KEY-1-NEW', originalPrice: 12.5 }, '/url');
      expect(res.status).toBe(200);
      expectGoodsShape(res.body, 'KRW');
      item = { ...item, sku: 'KEY-1-NEW', originalPrice: 12.5 };
      expect(res.body).toEqual(item);
      expect((await api(c).bySku('KEY-1-NEW').expect(200)).body).toEqual(item);
      expectNotFound(await api(c).bySku('KEY-1'));
    });

    it('PUT /url: missing url → 400 -510; unknown url → 404 -404; sku taken → 409', async () => {
      expectInvalid(await api(c).update({ sku: 'KEY-1-NEW', name: 'x' }, '/url'), 'url');
      expectNotFound(await api(c).update({ url: 'https://shop.example.com/nope', name: 'x' }, '/url'));
      const clash = await api(c).update({ url: item.url, sku: 'KEY-2' }, '/url');
      expectError(clash, 409, -409);
      expect(clash.body._e).toContain('KEY-2');
      expect(
        (
          await api(c)
            .byUrl(item.url as string)
            .expect(200)
        ).body,
      ).toEqual(item);
    });

    it('old sku and url are free after a key change', async () => {
      const res = await api(c).register({ name: 'Old keys again', sku: 'KEY-1', url: 'https://shop.example.com/key-1' });
      expect(res.status).toBe(200);
      expect(res.body.id).not.toBe(item.id);
      expect((await api(c).bySku('KEY-1').expect(200)).body.id).toBe(res.body.id);
    });
  });

  describe('DELETE', () => {
    let c: TestCustomer;
    const mk = (n: string) => ({ name: `Del ${n}`, sku: `DEL-${n}`, url: `https://shop.example.com/del/${n}` });
    beforeAll(async () => {
      c = await ctx().createCustomer('Deleter');
    });

    async function expectGone(item: Body): Promise<void> {
      expectNotFound(await api(c).bySku(item.sku as string));
      expectNotFound(await api(c).byUrl(item.url as string));
    }

    async function expectPresent(item: Body): Promise<void> {
      expect(await storedBySku(c, item.sku as string)).toEqual(item);
    }

    it('DELETE /{goodsId} → 200 {_s: 0}; again → 404; sku and url are free for reuse', async () => {
      const [item, bystander] = await registerAll(c, [mk('id'), mk('id-bystander')]);
      const res = await api(c).del(`/${item.id}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe(JSON_UTF8);
      expect(res.body).toEqual({ _s: 0 });
      await expectGone(item);
      await expectPresent(bystander);
      expectNotFound(await api(c).del(`/${item.id}`));

      const again = await api(c).register(mk('id'));
      expect(again.status).toBe(200);
      expect(again.body.id).not.toBe(item.id);
    });

    it('DELETE /sku?value= → 200 {_s: 0}; again → 404; keys reusable', async () => {
      const [item] = await registerAll(c, [mk('sku')]);
      expect((await api(c).del('/sku', item.sku as string)).body).toEqual({ _s: 0 });
      await expectGone(item);
      expectNotFound(await api(c).del('/sku', item.sku as string));
      await api(c).register(mk('sku')).expect(200);
    });

    it('DELETE /url?value= → 200 {_s: 0}; again → 404; keys reusable', async () => {
      const [item] = await registerAll(c, [mk('url')]);
      const res = await api(c).del('/url', item.url as string);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ _s: 0 });
      await expectGone(item);
      expectNotFound(await api(c).del('/url', item.url as string));
      await api(c).register(mk('url')).expect(200);
    });

    it('DELETE /{goodsId}/sku?value=: segment must match the item found, else 404 and nothing deleted', async () => {
      const [item, other] = await registerAll(c, [mk('idsku'), mk('idsku-other')]);
      expectNotFound(await api(c).del(`/${other.id}/sku`, item.sku as string));
      await expectPresent(item);
      await expectPresent(other);
      const res = await api(c).del(`/${item.id}/sku`, item.sku as string);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ _s: 0 });
      await expectGone(item);
      await expectPresent(other);
    });

    it('DELETE /{goodsId}/url?value=: segment must match the item found, else 404 and nothing deleted', async () => {
      const [item, other] = await registerAll(c, [mk('idurl'), mk('idurl-other')]);
      expectNotFound(await api(c).del(`/${other.id}/url`, item.url as string));
      expectNotFound(await api(c).del(`/987654321/url`, item.url as string));
      await expectPresent(item);
      await expectPresent(other);
      const res = await api(c).del(`/${item.id}/url`, item.url as string);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ _s: 0 });
      await expectGone(item);
      await expectPresent(other);
    });

    it('unknown id, sku or url → 404 -404', async () => {
      expectNotFound(await api(c).del('/987654321'));
      expectNotFound(await api(c).del('/sku', 'DEL-NOPE'));
      expectNotFound(await api(c).del('/url', 'https://shop.example.com/del/nope'));
    });

    it.each(['abc', '0', '-1', '1.5', '12abc'])('non-numeric or non-positive goodsId %p → 400 -510', async (segment) => {
      const [item] = await registerAll(c, [mk(`bad-${segment}`)]);
      expectInvalid(await api(c).del(`/${segment}`), 'goodsId');
      expectInvalid(await api(c).del(`/${segment}/sku`, item.sku as string), 'goodsId');
      expectInvalid(await api(c).del(`/${segment}/url`, item.url as string), 'goodsId');
      await expectPresent(item);
    });

    it('missing value on DELETE /sku and /url → 400 -510', async () => {
      expectInvalid(await api(c).del('/sku'), 'value');
      expectInvalid(await api(c).del('/url'), 'value');
    });
  });

  describe('routing and content type', () => {
    it('an unknown route → 404 in the error shape', async () => {
      const c = await ctx().createCustomer('Router');
      for (const res of [
        await ctx().http.get('/v1/no-such-thing'),
        await ctx().http.post('/nope').send({}),
        await ctx().http.patch(path(c)).set('Authorization', c.auth()).send({ name: 'x' }),
        await ctx()
          .http.get(`${path(c)}/a/b/c`)
          .set('Authorization', c.auth()),
      ]) {
        expect(res.status).toBe(404);
        expect(res.headers['content-type']).toBe(JSON_UTF8);
        expect(Object.keys(res.body).sort()).toEqual(['_e', '_s']);
        expect(res.body._s).toBe(-404);
        expect(typeof res.body._e).toBe('string');
        expect(res.headers['x-request-id']).toBeTruthy();
      }
      // The message names the method and path, never the query string (it may carry a token).
      const queried = await ctx().http.get('/v1/no-such-thing').query({ token: 'secret-in-the-query' });
      expect(queried.body).toEqual({ _s: -404, _e: 'No route for GET /v1/no-such-thing' });
    });

    it('successes and errors are application/json; charset=utf-8', async () => {
      const c = await ctx().createCustomer('Content type');
      const ok = await api(c).register({ name: 'ct', sku: 'CT-1', url: 'https://shop.example.com/ct' });
      expect(ok.status).toBe(200);
      const responses = [
        ok,
        await api(c).list(),
        await api(c).bySku('CT-1'),
        await api(c).update({ sku: 'CT-1', name: 'ct2' }, '/sku'),
        await api(c).list({ count: 0 }),
        await api(c).bySku('nope'),
        await ctx().http.get(path(c)),
        await api(c).del('/sku', 'CT-1'),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 400, 404, 401, 200]);
      for (const res of responses) expect(res.headers['content-type']).toBe(JSON_UTF8);
    });
  });
});
