import { createHmac, randomBytes } from 'node:crypto';
import { sign } from 'jsonwebtoken';
import type { Response } from 'supertest';
import { CustomersService } from '../src/customers/customers.service';
import { describeEngines, TestCustomer } from './support/test-app';

/** Authentication (docs/authentication.md) and tenant isolation, on every engine. */

const now = () => Math.floor(Date.now() / 1000);
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const keyOf = (c: TestCustomer) => Buffer.from(c.secretKey, 'base64');
const goodsPath = (c: TestCustomer | string) => `/v1/goods/${typeof c === 'string' ? c : c.accessKey}`;

/** A refusal: HTTP 401, body exactly {_s: -102, _e: "..."}, nothing else (no data, no stack). */
function expectUnauthorized(res: Response, ...mustNotContain: string[]): void {
  expect(res.status).toBe(401);
  expect(Object.keys(res.body).sort()).toEqual(['_e', '_s']);
  expect(res.body._s).toBe(-102);
  expect(typeof res.body._e).toBe('string');
  expect(res.body._e.length).toBeGreaterThan(0);
  expect(res.headers['x-request-id']).toBeTruthy();
  for (const secret of mustNotContain) expect(res.text).not.toContain(secret);
}

/** Unknown goods as seen by another tenant: 404 -404, never 403, never the owner's data. */
function expectNotFound(res: Response, ...mustNotContain: string[]): void {
  expect(res.status).toBe(404);
  expect(Object.keys(res.body).sort()).toEqual(['_e', '_s']);
  expect(res.body._s).toBe(-404);
  expect(typeof res.body._e).toBe('string');
  for (const secret of mustNotContain) expect(res.text).not.toContain(secret);
}

describeEngines('authentication and tenant isolation', __filename, (ctx) => {
  describe('bearer tokens', () => {
    let a: TestCustomer;
    let b: TestCustomer;
    const itemA = {
      name: 'A confidential item',
      brand: 'A-Brand-Secret',
      sku: 'AUTH-A-1',
      url: 'https://a.example.com/goods/auth-1',
      originalPrice: 100,
    };

    beforeAll(async () => {
      a = await ctx().createCustomer('Auth A');
      b = await ctx().createCustomer('Auth B');
      await ctx().http.post(goodsPath(a)).set('Authorization', a.auth()).send(itemA).expect(200);
    });

    /** Sends a list request (read) and a register request (write) with the given Authorization header. */
    async function tryBoth(authorization: string | undefined, path = goodsPath(a)): Promise<Response[]> {
      const list = ctx().http.get(path);
      const write = ctx()
        .http.post(path)
        .send({ name: 'intruder', sku: `INTRUDER-${randomBytes(4).toString('hex')}`, url: 'https://x.example.com/i' });
      if (authorization !== undefined) {
        list.set('Authorization', authorization);
        write.set('Authorization', authorization);
      }
      return Promise.all([list, write]);
    }

    async function expectRefused(authorization: string | undefined, path = goodsPath(a)): Promise<void> {
      for (const res of await tryBoth(authorization, path)) expectUnauthorized(res, itemA.name, itemA.sku, itemA.brand);
    }

    it('a valid HS256 token (key = base64-decoded secretKey) opens the customer’s own path', async () => {
      // The scheme in any letter case, with blanks around the token.
      await ctx().http.get(goodsPath(a)).set('Authorization', `bearer   ${a.token()} `).expect(200);
      const res = await ctx().http.get(goodsPath(a)).set('Authorization', a.auth()).expect(200);
      expect(res.body._s).toBe(0);
      expect(res.body.totalCount).toBe(1);
      expect(res.body.results[0]).toMatchObject({ name: itemA.name, sku: itemA.sku });
    });

    it('no Authorization header → 401 -102', async () => {
      await expectRefused(undefined);
    });

    it.each([
      ['"Bearer" alone', 'Bearer'],
      ['"Bearer " with nothing after it', 'Bearer '],
      ['Basic scheme', 'Basic xyz'],
      ['Basic scheme carrying a valid JWT', 'BASIC_WITH_VALID_TOKEN'],
      ['garbage token', 'Bearer abc.def'],
      ['three garbage segments', 'Bearer aaa.bbb.ccc'],
      ['a bare token without scheme', 'BARE_VALID_TOKEN'],
      ['a valid token with more after it', 'VALID_TOKEN_AND_MORE'],
    ])('malformed header: %s → 401 -102', async (_label, header) => {
      const value =
        header === 'BASIC_WITH_VALID_TOKEN'
          ? `Basic ${a.token()}`
          : header === 'BARE_VALID_TOKEN'
            ? a.token()
            : header === 'VALID_TOKEN_AND_MORE'
              ? `Bearer ${a.token()} junk`
              : header;
      await expectRefused(value);
    });

    it('two Authorization headers → 401 -102 saying so, even when both carry the valid token (a proxy may read another one than the service)', async () => {
      for (const pair of [
        [a.auth(), a.auth()],
        [a.auth(), 'Bearer aaa.bbb.ccc'],
        ['Bearer aaa.bbb.ccc', a.auth()],
        [a.auth(), ''],
      ]) {
        const res = await ctx()
          .http.get(goodsPath(a))
          .set('Authorization', pair as unknown as string); // a list: one header line each;
        expectUnauthorized(res, itemA.name, itemA.sku);
        expect(res.body._e).toBe('Missing bearer token: the request carries more than one Authorization header; send one');
      }
      // One header, the same token: accepted.
      await ctx()
        .http.get(goodsPath(a))
        .set('Authorization', [a.auth()] as unknown as string)
        .expect(200);
    });

    it('a token expired beyond the 60 s skew → 401 -102', async () => {
      const expired = sign({ accessKey: a.accessKey, iat: now() - 3600, exp: now() - 120 }, keyOf(a), { algorithm: 'HS256' });
      await expectRefused(`Bearer ${expired}`);
    });

    it('a token expired only 30 s ago is still accepted (60 s clock skew)', async () => {
      const token = sign({ accessKey: a.accessKey, iat: now() - 3600, exp: now() - 30 }, keyOf(a), { algorithm: 'HS256' });
      const res = await ctx().http.get(goodsPath(a)).set('Authorization', `Bearer ${token}`).expect(200);
      expect(res.body.totalCount).toBe(1);
    });

    it('a token signed with another secret → 401 -102', async () => {
      const forged = sign({ accessKey: a.accessKey }, randomBytes(32), { algorithm: 'HS256', expiresIn: 3600 });
      await expectRefused(`Bearer ${forged}`);
    });

    it('a token signed with another customer’s secret but claiming A → 401 -102', async () => {
      const forged = sign({ accessKey: a.accessKey }, keyOf(b), { algorithm: 'HS256', expiresIn: 3600 });
      await expectRefused(`Bearer ${forged}`);
    });

    it('an alg:none token (no signature) → 401 -102', async () => {
      const header = b64url({ alg: 'none', typ: 'JWT' });
      const payload = b64url({ accessKey: a.accessKey, iat: now(), exp: now() + 3600 });
      await expectRefused(`Bearer ${header}.${payload}.`);
    });

    it('an alg:none header carrying a real HS256 signature → 401 -102', async () => {
      const [, payload, signature] = a.token().split('.');
      await expectRefused(`Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.${signature}`);
    });

    it.each(['HS512', 'HS384'] as const)('a %s token signed with the right key → 401 -102 (only HS256)', async (algorithm) => {
      const token = sign({ accessKey: a.accessKey }, keyOf(a), { algorithm, expiresIn: 3600 });
      await expectRefused(`Bearer ${token}`);
    });

    it('a token without exp → 401 -102', async () => {
      const token = sign({ accessKey: a.accessKey }, keyOf(a), { algorithm: 'HS256' });
      expect(JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())).not.toHaveProperty('exp');
      await expectRefused(`Bearer ${token}`);
    });

    it('a token living longer than TOKEN_MAX_TTL (default 30 days, + 60 s skew) → 401 -102 saying so', async () => {
      const tooLong = sign({ accessKey: a.accessKey, exp: now() + 31 * 86400 }, keyOf(a), { algorithm: 'HS256' });
      const res = await ctx().http.get(goodsPath(a)).set('Authorization', `Bearer ${tooLong}`);
      expectUnauthorized(res, itemA.name);
      expect(res.body._e).toMatch(/TOKEN_MAX_TTL/);
      await expectRefused(`Bearer ${tooLong}`);
      // Just inside the limit is fine.
      const longest = sign({ accessKey: a.accessKey, exp: now() + 30 * 86400 }, keyOf(a), { algorithm: 'HS256' });
      await ctx().http.get(goodsPath(a)).set('Authorization', `Bearer ${longest}`).expect(200);
    });

    it('exp = 1e308 or Infinity (JSON 1e999) → 401 -102 (tokens never live forever)', async () => {
      const huge = sign({ accessKey: a.accessKey, exp: 1e308 }, keyOf(a), { algorithm: 'HS256' });
      await expectRefused(`Bearer ${huge}`);
      // jsonwebtoken cannot write Infinity; sign the JSON text by hand.
      const header = b64url({ alg: 'HS256', typ: 'JWT' });
      const payload = Buffer.from(`{"accessKey":"${a.accessKey}","iat":${now()},"exp":1e999}`).toString('base64url');
      const signature = createHmac('sha256', keyOf(a)).update(`${header}.${payload}`).digest('base64url');
      const res = await ctx().http.get(goodsPath(a)).set('Authorization', `Bearer ${header}.${payload}.${signature}`);
      expectUnauthorized(res, itemA.name);
      expect(res.body._e).toMatch(/finite/);
    });

    it('a token without an accessKey claim → 401 -102', async () => {
      const token = sign({ sub: 'op-1' }, keyOf(a), { algorithm: 'HS256', expiresIn: 3600 });
      await expectRefused(`Bearer ${token}`);
    });

    it('a token whose accessKey claim differs from the path → 401 -102', async () => {
      // Signed with A's own key, but claiming B's access key.
      await expectRefused(`Bearer ${a.token({ accessKey: b.accessKey })}`);
    });

    it('B’s valid token on A’s path → 401 -102, and A’s token on B’s path → 401 -102', async () => {
      await expectRefused(b.auth(), goodsPath(a));
      for (const res of await tryBoth(a.auth(), goodsPath(b))) expectUnauthorized(res);
      // Both tokens still work on their own paths.
      await ctx().http.get(goodsPath(a)).set('Authorization', a.auth()).expect(200);
      await ctx().http.get(goodsPath(b)).set('Authorization', b.auth()).expect(200);
    });

    it('an unknown accessKey in the path → 401 -102', async () => {
      const unknown = `unknownKey${randomBytes(9).toString('hex')}`;
      await expectRefused(a.auth(), goodsPath(unknown));
      // Even with a token that claims that key and is signed with some key.
      const token = sign({ accessKey: unknown }, keyOf(a), { algorithm: 'HS256', expiresIn: 3600 });
      await expectRefused(`Bearer ${token}`, goodsPath(unknown));
      const lookup = await ctx()
        .http.get(`${goodsPath(unknown)}/sku`)
        .query({ value: itemA.sku })
        .set('Authorization', a.auth());
      expectUnauthorized(lookup, itemA.name);
    });

    it('each refusal says why, in the same words for an access key that does not exist (a 401 never tells which exist)', async () => {
      const unknown = `unknownKey${randomBytes(9).toString('hex')}`;
      const hs256 = (claims: object, key: Buffer = keyOf(a)) => sign(claims, key, { algorithm: 'HS256' });
      const cases: Array<[string, (accessKey: string) => string, RegExp]> = [
        ['two parts', () => 'abc.def', /^Malformed token: a JWT is three base64url parts/],
        ['three garbage parts', () => 'aaa.bbb.ccc', /^Malformed token/],
        [
          'alg none',
          (ak) => `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ accessKey: ak, exp: now() + 3600 })}.`,
          /^Token algorithm "none" is not accepted: sign with HS256$/,
        ],
        ['HS384', (ak) => sign({ accessKey: ak }, keyOf(a), { algorithm: 'HS384', expiresIn: 3600 }), /^Token algorithm "HS384" is not accepted/],
        ['no accessKey claim', () => hs256({ sub: 'op-1', exp: now() + 3600 }), /^Token must carry an accessKey claim$/],
        ['another access key', () => hs256({ accessKey: b.accessKey, exp: now() + 3600 }), /^Token is for another access key/],
        ['no exp', (ak) => hs256({ accessKey: ak }), /^Token must carry an exp claim$/],
        ['expired', (ak) => hs256({ accessKey: ak, exp: now() - 120 }), /^Token expired$/],
        ['not valid yet', (ak) => hs256({ accessKey: ak, exp: now() + 3600, nbf: now() + 600 }), /^Token not valid yet: nbf is \d{4}-/],
        ['too long', (ak) => hs256({ accessKey: ak, exp: now() + 31 * 86400 }), /TOKEN_MAX_TTL/],
        ['issued in the future', (ak) => hs256({ accessKey: ak, exp: now() + 3600, iat: now() + 600 }), /^Token issued in the future: iat is \d{4}-/],
        [
          'iat not a number',
          (ak) => {
            // jsonwebtoken signs no such iat: signed by hand.
            const unsigned = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ accessKey: ak, exp: now() + 3600, iat: 'yesterday' })}`;
            return `${unsigned}.${createHmac('sha256', keyOf(a)).update(unsigned).digest('base64url')}`;
          },
          /^Token iat must be a finite number/,
        ],
        [
          'a critical extension',
          (ak) => sign({ accessKey: ak, exp: now() + 3600 }, keyOf(a), { algorithm: 'HS256', header: { alg: 'HS256', crit: ['b64'], b64: true } as never }),
          /^Token header lists critical extensions \(crit\)/,
        ],
        ['another secret', (ak) => hs256({ accessKey: ak, exp: now() + 3600 }, randomBytes(32)), /^Invalid token: its signature does not match/],
      ];
      for (const [label, token, why] of cases) {
        const known = await ctx()
          .http.get(goodsPath(a))
          .set('Authorization', `Bearer ${token(a.accessKey)}`);
        const none = await ctx()
          .http.get(goodsPath(unknown))
          .set('Authorization', `Bearer ${token(unknown)}`);
        expectUnauthorized(known, itemA.name);
        expectUnauthorized(none);
        expect({ label, message: known.body._e }).toEqual({ label, message: expect.stringMatching(why) });
        expect({ label, message: none.body._e }).toEqual({ label, message: known.body._e });
      }
    });

    it('refusals apply to every goods route (lookup, updates, sync, deletes)', async () => {
      const bad = `Bearer ${b.token({ accessKey: a.accessKey })}`;
      const p = goodsPath(a);
      const responses = await Promise.all([
        ctx().http.get(`${p}/sku`).query({ value: itemA.sku }).set('Authorization', bad),
        ctx().http.get(`${p}/url`).query({ value: itemA.url }).set('Authorization', bad),
        ctx().http.put(p).send({ id: 1, name: 'x' }).set('Authorization', bad),
        ctx().http.put(`${p}/sku`).send({ sku: itemA.sku, name: 'x' }).set('Authorization', bad),
        ctx().http.put(`${p}/url`).send({ url: itemA.url, name: 'x' }).set('Authorization', bad),
        ctx()
          .http.post(`${p}/sync`)
          .send([{ sku: itemA.sku, name: 'x' }])
          .set('Authorization', bad),
        ctx().http.delete(`${p}/sku`).query({ value: itemA.sku }).set('Authorization', bad),
        ctx().http.delete(`${p}/url`).query({ value: itemA.url }).set('Authorization', bad),
        ctx().http.delete(`${p}/1`).set('Authorization', bad),
        ctx().http.delete(`${p}/1/sku`).query({ value: itemA.sku }).set('Authorization', bad),
      ]);
      for (const res of responses) expectUnauthorized(res, itemA.name);
    });

    it('a token signed with the RAW secretKey string as HMAC key is accepted', async () => {
      const token = sign({ accessKey: a.accessKey }, a.secretKey, { algorithm: 'HS256', expiresIn: 3600 });
      const res = await ctx().http.get(goodsPath(a)).set('Authorization', `Bearer ${token}`).expect(200);
      expect(res.body.results.map((g: { sku: string }) => g.sku)).toEqual([itemA.sku]);
      // ...but the raw string of another customer's secret is not.
      const foreign = sign({ accessKey: a.accessKey }, b.secretKey, { algorithm: 'HS256', expiresIn: 3600 });
      await expectRefused(`Bearer ${foreign}`);
    });

    it('no refused write stored anything', async () => {
      const res = await ctx().http.get(goodsPath(a)).set('Authorization', a.auth()).expect(200);
      expect(res.body.totalCount).toBe(1);
      expect(res.body.results[0]).toMatchObject(itemA);
      const other = await ctx().http.get(goodsPath(b)).set('Authorization', b.auth()).expect(200);
      expect(other.body.totalCount).toBe(0);
    });
  });

  describe('secret-key rotation with a grace period', () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const signWith = (c: TestCustomer, key: Buffer | string) => sign({ accessKey: c.accessKey }, key, { algorithm: 'HS256', expiresIn: 3600 });
    const list = (c: TestCustomer, token: string) => ctx().http.get(goodsPath(c)).set('Authorization', `Bearer ${token}`);

    it('old tokens keep working until previousKeyValidUntil, then 401; new tokens work at once', async () => {
      const c = await ctx().createCustomer('Rotating');
      const oldToken = c.token();
      const oldRawToken = signWith(c, c.secretKey); // the raw-string form of the old key
      await list(c, oldToken).expect(200);
      await list(c, oldRawToken).expect(200);

      const rotated = await ctx().app.get(CustomersService).rotateSecret(c.accessKey, 3);
      expect(rotated?.secretKey).toBeDefined();
      const until = rotated!.previousKeyValidUntil!.getTime();
      expect(rotated!.secretKey).not.toBe(c.secretKey);
      const newKey = Buffer.from(rotated!.secretKey, 'base64');
      await list(c, signWith(c, newKey)).expect(200);
      await list(c, signWith(c, rotated!.secretKey)).expect(200);
      // Within the grace period: the old key, in both forms, tokens made before and after the rotation.
      await list(c, oldToken).expect(200);
      await list(c, oldRawToken).expect(200);
      await list(c, signWith(c, keyOf(c))).expect(200);

      await sleep(Math.max(0, until - Date.now()) + 200);
      for (const t of [oldToken, oldRawToken, signWith(c, keyOf(c))]) {
        const res = await list(c, t);
        expectUnauthorized(res);
        expect(res.body._e).toMatch(/previous secret key/);
      }
      await list(c, signWith(c, newKey)).expect(200);
    });

    it('grace 0: the old key is refused at once; a second rotation retires the key it replaces', async () => {
      const c = await ctx().createCustomer('Rotating now');
      const oldToken = c.token();
      await list(c, oldToken).expect(200);
      const customers = ctx().app.get(CustomersService);
      const first = await customers.rotateSecret(c.accessKey, 0);
      expect(first).toMatchObject({ previousSecretKey: c.secretKey, previousKeyValidUntil: expect.any(Date) });
      const refused = await list(c, oldToken);
      expectUnauthorized(refused);
      // Told why, as after a grace period: the key is known as the one just replaced.
      expect(refused.body._e).toMatch(/^Token signed with the previous secret key, which was replaced \(not accepted since /);
      const firstToken = signWith(c, Buffer.from(first!.secretKey, 'base64'));
      await list(c, firstToken).expect(200);

      const second = await customers.rotateSecret(c.accessKey, 3600);
      await list(c, firstToken).expect(200); // the key just replaced: within its grace period
      expectUnauthorized(await list(c, oldToken)); // the one before it: never again
      await list(c, signWith(c, Buffer.from(second!.secretKey, 'base64'))).expect(200);
      const row = await ctx().dataSource.query('SELECT previousSecretKey FROM customers WHERE accessKey = ?', [c.accessKey]);
      expect(row[0].previousSecretKey).toBe(first!.secretKey);
    });

    it('rotating an unknown access key changes nothing', async () => {
      expect(
        await ctx()
          .app.get(CustomersService)
          .rotateSecret(`unknownKey${randomBytes(6).toString('hex')}`, 60),
      ).toBeNull();
    });
  });

  describe('tenant isolation', () => {
    let a: TestCustomer;
    let b: TestCustomer;
    let original: Record<string, unknown>;
    const itemA = {
      name: 'Tenant A private watch',
      brand: 'PrivateBrandA',
      description: 'only for A',
      sku: 'SHARED-SKU-1',
      url: 'https://shop.example.com/goods/shared-1',
      originalPrice: 250.5,
      discountedPrice: 200,
      discountPercentage: 20.16,
    };
    const leaks = [itemA.name, itemA.brand, itemA.description];

    const asB = () => ({
      get: (path: string) =>
        ctx()
          .http.get(`${goodsPath(b)}${path}`)
          .set('Authorization', b.auth()),
      put: (path: string, body: unknown) =>
        ctx()
          .http.put(`${goodsPath(b)}${path}`)
          .set('Authorization', b.auth())
          .send(body as object),
      post: (path: string, body: unknown) =>
        ctx()
          .http.post(`${goodsPath(b)}${path}`)
          .set('Authorization', b.auth())
          .send(body as object),
      delete: (path: string) =>
        ctx()
          .http.delete(`${goodsPath(b)}${path}`)
          .set('Authorization', b.auth()),
    });

    async function expectAUnchanged(): Promise<void> {
      const res = await ctx()
        .http.get(`${goodsPath(a)}/sku`)
        .query({ value: itemA.sku })
        .set('Authorization', a.auth())
        .expect(200);
      expect(res.body).toEqual(original);
      const list = await ctx().http.get(goodsPath(a)).set('Authorization', a.auth()).expect(200);
      expect(list.body.totalCount).toBe(1);
    }

    beforeAll(async () => {
      a = await ctx().createCustomer('Tenant A');
      b = await ctx().createCustomer('Tenant B');
      const res = await ctx().http.post(goodsPath(a)).set('Authorization', a.auth()).send(itemA).expect(200);
      original = res.body;
      expect(original).toMatchObject(itemA);
    });

    it('B’s list never shows A’s goods (plain or searched)', async () => {
      const plain = await asB().get('').expect(200);
      expect(plain.body).toEqual({ results: [], totalCount: 0, _s: 0 });
      const searched = await asB().get('').query({ searchKeyword: 'private' }).expect(200);
      expect(searched.body).toEqual({ results: [], totalCount: 0, _s: 0 });
    });

    it('B’s lookups by sku and url of A’s item → 404 -404', async () => {
      expectNotFound(await asB().get('/sku').query({ value: itemA.sku }), ...leaks);
      expectNotFound(await asB().get('/url').query({ value: itemA.url }), ...leaks);
    });

    it('B’s updates of A’s item (by id, sku, url) → 404 -404 and A’s item is unchanged', async () => {
      const id = original.id as number;
      expectNotFound(await asB().put('', { id, name: 'hacked by B', originalPrice: 1 }), ...leaks);
      expectNotFound(await asB().put('/sku', { sku: itemA.sku, name: 'hacked by B', url: 'https://evil.example.com/x' }), ...leaks);
      expectNotFound(await asB().put('/url', { url: itemA.url, name: 'hacked by B', sku: 'EVIL' }), ...leaks);
      await expectAUnchanged();
    });

    it('B’s sync naming A’s item by id fails that row as not found and leaves A’s item unchanged', async () => {
      const res = await asB()
        .post('/sync', [{ id: original.id, name: 'hacked by B' }])
        .expect(200);
      expect(res.body).toMatchObject({ totalCount: 1, createCount: 0, updateCount: 0, failCount: 1, _s: 0 });
      expect(res.body.results).toHaveLength(1);
      expect(res.body.results[0].status).toBe('FAIL');
      expect(res.body.results[0].message).toMatch(/not found/i);
      for (const secret of leaks) expect(res.text).not.toContain(secret);
      await expectAUnchanged();
    });

    it('B’s deletes of A’s item (by id, sku, url, id+sku, id+url) → 404 -404 and nothing is deleted', async () => {
      const id = original.id as number;
      expectNotFound(await asB().delete(`/${id}`), ...leaks);
      expectNotFound(await asB().delete('/sku').query({ value: itemA.sku }), ...leaks);
      expectNotFound(await asB().delete('/url').query({ value: itemA.url }), ...leaks);
      expectNotFound(await asB().delete(`/${id}/sku`).query({ value: itemA.sku }), ...leaks);
      expectNotFound(await asB().delete(`/${id}/url`).query({ value: itemA.url }), ...leaks);
      await expectAUnchanged();
    });

    it('B can register the same sku and url as A (keys are per customer); each sees only its own', async () => {
      const res = await asB()
        .post('', { ...itemA, name: 'B own item', brand: 'BBrand', description: null })
        .expect(200);
      expect(res.body.id).not.toBe(original.id);
      expect(res.body).toMatchObject({ sku: itemA.sku, url: itemA.url, name: 'B own item' });

      const bLookup = await asB().get('/sku').query({ value: itemA.sku }).expect(200);
      expect(bLookup.body.id).toBe(res.body.id);
      expect(bLookup.body.name).toBe('B own item');
      const bByUrl = await asB().get('/url').query({ value: itemA.url }).expect(200);
      expect(bByUrl.body.id).toBe(res.body.id);
      await expectAUnchanged();

      // B's sync by that sku updates B's item, never A's.
      const sync = await asB()
        .post('/sync', [{ sku: itemA.sku, name: 'B renamed' }])
        .expect(200);
      expect(sync.body).toMatchObject({ totalCount: 1, updateCount: 1, failCount: 0 });
      expect(sync.body.results[0]).toMatchObject({ id: res.body.id, status: 'UPDATE', name: 'B renamed' });
      await expectAUnchanged();

      // B's delete by that sku removes B's item only.
      const del = await asB().delete('/sku').query({ value: itemA.sku }).expect(200);
      expect(del.body).toEqual({ _s: 0 });
      expectNotFound(await asB().get('/sku').query({ value: itemA.sku }));
      await expectAUnchanged();
    });

    it('A’s own token still sees and manages its item (the isolation is not a blanket refusal)', async () => {
      const res = await ctx()
        .http.put(`${goodsPath(a)}/sku`)
        .set('Authorization', a.auth())
        .send({ sku: itemA.sku, name: 'A renamed' })
        .expect(200);
      expect(res.body).toEqual({ ...original, name: 'A renamed' });
      original = res.body;
      await expectAUnchanged();
    });
  });

  describe('public routes and request ids', () => {
    it('GET /health needs no token (and ignores a garbage one)', async () => {
      const res = await ctx().http.get('/health').expect(200);
      expect(res.body).toEqual({ status: 'ok' });
      const withGarbage = await ctx().http.get('/health').set('Authorization', 'Bearer abc.def').expect(200);
      expect(withGarbage.body).toEqual({ status: 'ok' });
    });

    it('every response carries X-Request-Id: 200, 400, 401, 404, and unknown routes', async () => {
      const c = await ctx().createCustomer('Request ids');
      const responses = await Promise.all([
        ctx().http.get('/health'),
        ctx().http.get(goodsPath(c)).set('Authorization', c.auth()),
        ctx().http.get(goodsPath(c)).query({ count: 0 }).set('Authorization', c.auth()),
        ctx().http.get(goodsPath(c)),
        ctx()
          .http.get(`${goodsPath(c)}/sku`)
          .query({ value: 'nope' })
          .set('Authorization', c.auth()),
        ctx().http.get('/v1/no-such-route'),
      ]);
      expect(responses.map((r) => r.status)).toEqual([200, 200, 400, 401, 404, 404]);
      const ids = responses.map((r) => r.headers['x-request-id']);
      for (const id of ids) expect(id).toEqual(expect.stringMatching(/^\S{8,}$/));
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('echoes the caller’s X-Request-Id on a refusal too', async () => {
      const res = await ctx().http.get('/v1/goods/whatever-key-123456789').set('X-Request-Id', 'trace-401.xyz');
      expectUnauthorized(res);
      expect(res.headers['x-request-id']).toBe('trace-401.xyz');
    });
  });
});
