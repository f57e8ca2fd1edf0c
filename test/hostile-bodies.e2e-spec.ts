import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { Response } from 'supertest';
import { openTcp } from './support/bare-connections';
import { eventually } from './support/eventually';
import { listenOn } from './support/live-client';
import { describeEngines, TestCustomer } from './support/test-app';
import { Logger } from '@nestjs/common';
import { ApiException } from '../src/common/errors/api.exception';

/**
 * Request bodies built to hurt: bodies are read per route after authentication, with a small limit for
 * single items and a large one for sync, and their nesting and size are checked before validation, so
 * every one of these is a quick 4xx in the API's error shape, never a 500 or a frozen event loop.
 */

function expectError(res: Response, status: number, code: number): void {
  expect({ status: res.status, _s: res.body?._s }).toEqual({ status, _s: code });
  expect(typeof res.body._e).toBe('string');
}

/** `{"name": [[],[],…]}` of about `bytes` bytes: cheap to send, once expensive to validate. */
function manyArrays(bytes: number): string {
  return `{"name":[${new Array(Math.floor(bytes / 3)).fill('[]').join(',')}]}`;
}

function deeplyNested(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

describeEngines('hostile request bodies', __filename, (ctx) => {
  let c: TestCustomer;
  const goods = () => `/v1/goods/${c.accessKey}`;

  beforeAll(async () => {
    c = await ctx().createCustomer('Hostile');
  });

  it('a body is not even parsed before the token is checked: malformed JSON without a token is 401, not 400', async () => {
    const res = await ctx().http.post(goods()).set('Content-Type', 'application/json').send('{"name": ');
    expectError(res, 401, -102);
  });

  it('a large body without a token is refused as unauthenticated (not parsed)', async () => {
    const res = await ctx()
      .http.post(`${goods()}/sync`)
      .set('Content-Type', 'application/json')
      .send(manyArrays(3 * 1024 * 1024));
    expectError(res, 401, -102);
  });

  it('a large body to a path that does not exist is 404 (not parsed)', async () => {
    const res = await ctx()
      .http.post('/v1/nothing/here')
      .set('Content-Type', 'application/json')
      .send(manyArrays(3 * 1024 * 1024));
    expectError(res, 404, -404);
  });

  it('a single-item route takes at most BODY_LIMIT (1 MB): 2 MB is 413', async () => {
    const res = await ctx()
      .http.post(goods())
      .set('Authorization', c.auth())
      .set('Content-Type', 'application/json')
      .send(manyArrays(2 * 1024 * 1024));
    expectError(res, 413, -413);
  });

  it('an array-bomb under the byte limit is 413 for its number of values, before validation', async () => {
    const res = await ctx()
      .http.post(goods())
      .set('Authorization', c.auth())
      .set('Content-Type', 'application/json')
      .send(manyArrays(900 * 1024));
    expectError(res, 413, -413);
    expect(res.body._e).toMatch(/values/);
  });

  it('a 5,000-level nested object is 400 (not a stack overflow)', async () => {
    const res = await ctx().http.post(goods()).set('Authorization', c.auth()).set('Content-Type', 'application/json').send(deeplyNested(5000));
    expectError(res, 400, -510);
    expect(res.body._e).toMatch(/nested deeper/);
  });

  it('a form body nested too deeply is 400', async () => {
    const res = await ctx()
      .http.put(`${goods()}/campaign/nope/salesStatus/id`)
      .set('Authorization', c.auth())
      .type('form')
      .send(`a${'[a]'.repeat(20)}=1&salesStatus=SOLD_OUT`);
    expectError(res, 400, -510);
  });

  it('sync takes large bodies (SYNC_BODY_LIMIT): 2 MB of elements are applied', async () => {
    const elements = Array.from({ length: 4000 }, (_, i) => ({
      name: `Bulk ${i}`,
      description: 'x'.repeat(400),
      sku: `BULK-${i}`,
      url: `https://shop.example.com/bulk/${i}`,
    }));
    const res = await ctx().http.post(`${goods()}/sync`).set('Authorization', c.auth()).send(elements);
    expect(res.status).toBe(200);
    expect(res.body.createCount).toBe(4000);
  });

  it('one sync element, or a sync body that is not an array, is held to the size of one element (1,000 values, 256 KB): 413 before it is parsed; nothing is applied', async () => {
    const sync = (body: string) => ctx().http.post(`${goods()}/sync`).set('Authorization', c.auth()).set('Content-Type', 'application/json').send(body);
    const item = (i: number) => JSON.stringify({ name: `Held ${i}`, sku: `HELD-${i}`, url: `https://shop.example.com/held/${i}` });
    // A million keys in one element (11 MB, under SYNC_BODY_LIMIT and the body's million values) held a node's event loop for seconds.
    const manyKeys = `{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":0`).join(',')}}`;
    let res = await sync(`[${item(1)},${manyKeys},${item(2)}]`);
    expectError(res, 413, -413);
    expect(res.body._e).toBe('An element of the request body holds more than 1000 values');
    res = await sync(`[${item(3)},${JSON.stringify({ name: 'Long', sku: 'HELD-L', description: 'd'.repeat(300 * 1024) })}]`);
    expectError(res, 413, -413);
    expect(res.body._e).toBe('An element of the request body is over 256 KB of JSON text');
    res = await sync(JSON.stringify({ goods: 'x'.repeat(300 * 1024) }));
    expectError(res, 413, -413);
    expect(res.body._e).toBe('A request body that is not a JSON array is over 256 KB of JSON text');
    // Small, it is parsed and refused as before.
    res = await sync(JSON.stringify({ goods: [] }));
    expectError(res, 400, -510);
    expect(res.body._e).toMatch(/must be a JSON array/);
    const list = await ctx().http.get(goods()).query({ searchKeyword: 'HELD-' }).set('Authorization', c.auth());
    expect(list.body.totalCount).toBe(0);
  });

  it('a number (or a run that reads as one) longer than 1,000 characters is 400 before the body is parsed, on any route', async () => {
    for (const [path, body] of [
      [`${goods()}/sync`, `[{"name":"N","sku":"NUM-1","originalPrice":${'1'.repeat(1001)}}]`],
      [goods(), `{"name":"N","sku":"NUM-2","url":"https://shop.example.com/n2","originalPrice":${'1'.repeat(5000)}}`],
      [`${goods()}/sync`, `[${'-'.repeat(100_000)}]`],
    ]) {
      const res = await ctx().http.post(path).set('Authorization', c.auth()).set('Content-Type', 'application/json').send(body);
      expectError(res, 400, -510);
      expect(res.body._e).toBe('The request body holds a number longer than 1000 characters');
    }
  });

  it('a sync element with a nested value in a goods field is a FAIL row, the others apply', async () => {
    const res = await ctx()
      .http.post(`${goods()}/sync`)
      .set('Authorization', c.auth())
      .send([
        // (Within an element's 1,000 values: one holding more refuses the whole body, test above.)
        { name: new Array(300).fill([]), sku: 'NEST-1', url: 'https://shop.example.com/nest/1' },
        { name: 'Fine', sku: 'NEST-2', url: 'https://shop.example.com/nest/2', originalPrice: { $gt: 1 } },
        { name: 'Fine', sku: 'NEST-3', url: 'https://shop.example.com/nest/3', medias: [{ thumbnails: [] }] },
      ]);
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { status: string; message: string | null }) => [r.status, r.message])).toEqual([
      ['FAIL', 'name must be a string'],
      ['FAIL', 'originalPrice must be a number'],
      ['CREATE', null],
    ]);
    expect(res.body.results[0].sku).toBe('NEST-1');
    expect(res.body.results[0].name).toBeNull(); // not echoed: it was not a string
  });

  /** Sends raw bytes (supertest would serialize a Buffer as JSON when the type is JSON). */
  async function postRaw(path: string, body: Buffer, encoding: string): Promise<{ status: number; body: { _s?: number; _e?: string; sku?: string } }> {
    const base = await listenOn(ctx().app);
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: c.auth(), 'content-type': 'application/json', 'content-encoding': encoding },
      body,
    });
    return { status: res.status, body: (await res.json()) as { _s?: number; _e?: string; sku?: string } };
  }

  it.each(['gzip', 'deflate', 'br'])('a malformed %s body is 400 -510, not a 500', async (encoding) => {
    const res = await postRaw(goods(), Buffer.from('this is not compressed at all, just bytes'), encoding);
    expect([res.status, res.body._s]).toEqual([400, -510]);
  });

  it('well-formed gzip and brotli JSON bodies are read', async () => {
    const item = (n: number) => JSON.stringify({ name: `Zipped ${n}`, sku: `ZIP-${n}`, url: `https://shop.example.com/zip/${n}` });
    const gz = await postRaw(goods(), gzipSync(item(1)), 'gzip');
    const br = await postRaw(goods(), brotliCompressSync(item(2)), 'br');
    expect([gz.status, br.status]).toEqual([200, 200]);
    expect([gz.body.sku, br.body.sku]).toEqual(['ZIP-1', 'ZIP-2']);
  });

  it('a gzip bomb inflating past the limit is 413', async () => {
    const bomb = gzipSync(Buffer.from(`{"name":"${'a'.repeat(8 * 1024 * 1024)}"}`));
    expect(bomb.length).toBeLessThan(100 * 1024);
    const res = await postRaw(goods(), bomb, 'gzip');
    expect([res.status, res.body._s]).toEqual([413, -413]);
  });

  it('a JSON body in another charset than UTF-8 is 415, before a byte of it is parsed (a UTF-16 bomb cannot skip the checks)', async () => {
    const base = await listenOn(ctx().app);
    const deep = Buffer.from('['.repeat(200_000) + ']'.repeat(200_000), 'utf16le');
    for (const [path, body] of [
      [`${goods()}/sync`, deep],
      [goods(), Buffer.from(JSON.stringify({ name: 'Sixteen', sku: 'U16-1', url: 'https://shop.example.com/u16' }), 'utf16le')],
    ] as const) {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: c.auth(), 'content-type': 'application/json; charset=utf-16le' },
        body,
      });
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 415,
        body: { _s: -415, _e: 'JSON bodies are read as UTF-8 only, not utf-16le' },
      });
    }
    // UTF-8, in either case and by any of its labels, is read.
    for (const charset of ['utf-8', 'UTF-8', 'utf8', 'UTF8', '"utf8"', 'unicode-1-1-utf-8']) {
      const sku = `U8-${charset.replace(/"/g, 'q')}`;
      const res = await ctx()
        .http.post(goods())
        .set('Authorization', c.auth())
        .set('Content-Type', `application/json; charset=${charset}`)
        .send(JSON.stringify({ name: 'Eight', sku, url: `https://shop.example.com/${sku}` }));
      expect([res.status, res.body.sku]).toEqual([200, sku]);
    }
  });

  it('a body of a type no route reads (text/plain, none) is 415 saying so, not a 400 as if nothing had been sent', async () => {
    const json = JSON.stringify({ name: 'Plain', sku: 'PLAIN-1', url: 'https://shop.example.com/plain' });
    const plain = await ctx().http.post(goods()).set('Authorization', c.auth()).set('Content-Type', 'text/plain;charset=UTF-8').send(json);
    expect({ status: plain.status, body: plain.body }).toEqual({
      status: 415,
      body: { _s: -415, _e: 'A body of type text/plain is not read: send JSON as application/json (or a form as application/x-www-form-urlencoded)' },
    });
    const base = await listenOn(ctx().app);
    const untyped = await fetch(`${base}${goods()}`, { method: 'POST', headers: { authorization: c.auth() }, body: new Blob([json]) });
    expect([untyped.status, ((await untyped.json()) as { _e: string })._e]).toEqual([415, expect.stringMatching(/^A body without a Content-Type is not read/)]);
    // An empty body is no body, whatever its type says: the route answers as it would without one.
    const empty = await ctx().http.post(goods()).set('Authorization', c.auth()).set('Content-Type', 'text/plain').send('');
    expect([empty.status, empty.body._s]).toEqual([400, -510]);
    expect(await ctx().http.get(`${goods()}/sku`).query({ value: 'PLAIN-1' }).set('Authorization', c.auth())).toMatchObject({ status: 404 });
  });

  it('a multipart form (curl -F) is 415 on a route that reads none, not "name is required"; the routes that read one still do', async () => {
    const multipart = await ctx()
      .http.post(goods())
      .set('Authorization', c.auth())
      .field('name', 'Multi')
      .field('sku', 'MULTI-1')
      .field('url', 'https://shop.example.com/multi');
    expect({ status: multipart.status, body: multipart.body }).toEqual({
      status: 415,
      body: {
        _s: -415,
        _e: 'A body of type multipart/form-data is not read: send JSON as application/json (or a form as application/x-www-form-urlencoded)',
      },
    });
    const sync = await ctx().http.post(`${goods()}/sync`).set('Authorization', c.auth()).attach('file', Buffer.from('[]'), 'sync.json');
    expect([sync.status, sync.body._s]).toEqual([415, -415]);
    expect(await ctx().http.get(`${goods()}/sku`).query({ value: 'MULTI-1' }).set('Authorization', c.auth())).toMatchObject({ status: 404 });
    const upload = await ctx()
      .http.post(`${goods()}/excel`)
      .query({ dryRun: true })
      .set('Authorization', c.auth())
      .attach('file', Buffer.from('sku,url,name\nMULTI-2,https://shop.example.com/multi2,Multi\n'), 'multi.csv');
    expect(upload.status).toBe(200);
  });

  it('JSON labelled a form (curl -d without a Content-Type) is 415 saying so; a real form is read', async () => {
    const FORM = 'application/x-www-form-urlencoded';
    const post = (body: string, type = FORM, path = goods()) => ctx().http.post(path).set('Authorization', c.auth()).set('Content-Type', type).send(body);
    const json = JSON.stringify({ name: 'Curl', sku: 'CURL-1', url: 'https://shop.example.com/curl' });
    const labelled = await post(`\n ${json}`);
    expect({ status: labelled.status, body: labelled.body }).toEqual({
      status: 415,
      body: {
        _s: -415,
        _e: 'The body is JSON but labelled a form (application/x-www-form-urlencoded, as curl -d labels it): send it with Content-Type: application/json',
      },
    });
    const array = await post(`[${json}]`, FORM, `${goods()}/sync`);
    expect([array.status, array.body._s]).toEqual([415, -415]);
    const form = await post('name=Curl&sku=CURL-1&url=https%3A%2F%2Fshop.example.com%2Fcurl');
    expect([form.status, form.body.sku]).toEqual([200, 'CURL-1']);
    // UTF-8 by another of its labels is UTF-8; a charset the form reader does not read is 415.
    const utf8 = await post('name=%EC%9B%8C%EC%B9%98&sku=CURL-2&url=https%3A%2F%2Fshop.example.com%2Fcurl2', `${FORM}; charset=UTF8`);
    expect([utf8.status, utf8.body.name]).toEqual([200, '워치']);
    const koi8 = await post('name=x&sku=CURL-3&url=https%3A%2F%2Fshop.example.com%2Fcurl3', `${FORM}; charset=koi8-r`);
    expect([koi8.status, koi8.body._s]).toEqual([415, -415]);
  });

  it('a form field given twice is told so (as a query parameter is), not "must be a string"; a field that takes a list takes it', async () => {
    const post = (body: string, path = goods()) =>
      ctx().http.post(path).set('Authorization', c.auth()).set('Content-Type', 'application/x-www-form-urlencoded').send(body);
    const twice = await post('name=One&name=Two&sku=TWICE-1&url=https%3A%2F%2Fshop.example.com%2Ftwice');
    expect({ status: twice.status, body: twice.body }).toEqual({
      status: 400,
      body: {
        _s: -510,
        _e: 'Invalid argument: name was given 2 times; give it once; got ["One","Two"]',
        errors: [{ field: 'name', message: 'name was given 2 times; give it once' }],
      },
    });
    const bracketed = await post('name[]=One&sku=TWICE-2&url=https%3A%2F%2Fshop.example.com%2Ftwice2');
    expect([bracketed.status, bracketed.body.errors]).toEqual([400, [{ field: 'name', message: 'name must be one value, not a list' }]]);
    expect(await ctx().http.get(`${goods()}/sku`).query({ value: 'TWICE-1' }).set('Authorization', c.auth())).toMatchObject({ status: 404 });
    const hook = await post('url=https%3A%2F%2F93.184.215.14%2Fhook&events=campaign.status&events=goods.salesStatus', `/v1/console/${c.accessKey}/webhooks`);
    expect([hook.status, hook.body.events]).toEqual([200, ['campaign.status', 'goods.salesStatus']]);
  });

  /**
   * Sends a request's head and the first bytes of a body it says is `declared` bytes long, and never the
   * rest; resolves to what the server answered (the status line and the error body), or to '' if it kept
   * waiting for the body.
   */
  async function answerBeforeTheBody(
    path: string,
    headers: Record<string, string>,
    declared: number,
  ): Promise<{ status: number; body: { _s?: number; _e?: string } } | null> {
    const base = await listenOn(ctx().app);
    const head = Object.entries({ Host: new URL(base).host, Authorization: c.auth(), 'Content-Length': String(declared), ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const conn = await openTcp(base, { send: `POST ${path} HTTP/1.1\r\n${head}\r\n${'{"name":"'.padEnd(1024, 'x')}` });
    try {
      // Within the test's own time: the old code kept reading, and answered only when the body had all come.
      const text = await eventually(
        async () => conn.received,
        (t) => t.includes('\r\n\r\n{') && t.trimEnd().endsWith('}'),
        10_000,
      );
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      if (!status) return null;
      return { status: Number(status), body: JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { _s?: number; _e?: string } };
    } finally {
      conn.socket.destroy();
    }
  }

  it('a body whose Content-Length is over the route limit is 413 at once, before it is sent (JSON, sync, spreadsheet)', async () => {
    const json = { 'Content-Type': 'application/json' };
    expect(await answerBeforeTheBody(goods(), json, 500 * 1024 * 1024)).toEqual({
      status: 413,
      body: { _s: -413, _e: 'The request body is over the 1mb limit of this route' },
    });
    expect(await answerBeforeTheBody(`${goods()}/sync`, json, 2 * 1024 * 1024 * 1024)).toEqual({
      status: 413,
      body: { _s: -413, _e: expect.stringMatching(/^The request body is over the \w+ limit of this route$/) },
    });
    const form = { 'Content-Type': 'multipart/form-data; boundary=XyZ' };
    const immediate = await answerBeforeTheBody(`${goods()}/excel`, form, 200 * 1024 * 1024);
    expect(immediate).toEqual({
      status: 413,
      body: {
        _s: -413,
        _e: expect.stringMatching(
          /^The file is over the 20 MB limit of an immediate import; the same file can be imported as a background job with async=true/,
        ),
      },
    });
    const job = await answerBeforeTheBody(`${goods()}/excel?async=true`, form, 200 * 1024 * 1024);
    expect(job).toEqual({ status: 413, body: { _s: -413, _e: 'The file is over the 100 MB limit of an import job' } });
    // A declared length a file within the limit can have (its part headers and boundaries included) is read.
    const within = await ctx()
      .http.post(`${goods()}/excel`)
      .query({ dryRun: true })
      .set('Authorization', c.auth())
      .attach('file', Buffer.from('sku,url,name\nW-1,https://shop.example.com/w1,Within\n'), 'within.csv');
    expect(within.status).toBe(200);
  });

  it('a customer sends at most 4 spreadsheet uploads to a node at once: the 5th is 429 until one ends; others are not held up', async () => {
    const base = await listenOn(ctx().app);
    const other = await ctx().createCustomer('Uploader B');
    const dryRun = (who: TestCustomer) =>
      ctx()
        .http.post(`/v1/goods/${who.accessKey}/excel`)
        .query({ dryRun: true })
        .set('Authorization', who.auth())
        .attach('file', Buffer.from('sku,url,name\nU-1,https://shop.example.com/u1,Upload\n'), 'u.csv');
    // Four uploads that start and never finish (a 10 MB file of which 1 KB is sent).
    const head = (i: number) =>
      `POST /v1/goods/${c.accessKey}/excel?async=true HTTP/1.1\r\nHost: ${new URL(base).host}\r\nAuthorization: ${c.auth()}\r\n` +
      `Content-Type: multipart/form-data; boundary=HOLD${i}\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n` +
      `--HOLD${i}\r\nContent-Disposition: form-data; name="file"; filename="hold.csv"\r\nContent-Type: text/csv\r\n\r\nsku,url,name\r\n${'x'.repeat(1024)}`;
    const refused = jest.spyOn(ApiException, 'invalid');
    const logged = jest.spyOn(Logger.prototype, 'error');
    const held = await Promise.all([0, 1, 2, 3].map((i) => openTcp(base, { send: head(i) })));
    try {
      const refused = await eventually(
        () => dryRun(c),
        (r) => r.status === 429,
        10_000,
      );
      expect({ status: refused.status, _s: refused.body._s, retryAfter: refused.headers['retry-after'] }).toEqual({ status: 429, _s: -429, retryAfter: '5' });
      expect(refused.body._e).toMatch(/already has 4 spreadsheet uploads under way on this server \(at most 4\)/);
      expect((await dryRun(other)).status).toBe(200);
    } finally {
      for (const conn of held) conn.socket.destroy();
    }
    // Dropped by the client, the four uploads end as a client's doing: no error logged as the server's fault.
    // Each of them ends either as a refusal of a body that ended early or as an error logged.
    const errors = () => logged.mock.calls.map(([line]) => String(line)).filter((line) => /excel\?async/.test(line));
    const endedEarly = () => refused.mock.calls.filter(([message]) => /ended early: the client closed the connection/.test(message)).length;
    const handled = await eventually(
      () => Promise.resolve(endedEarly() + errors().length),
      (n) => n >= 4,
      10_000,
    );
    const logLines = errors();
    refused.mockRestore();
    logged.mockRestore();
    expect(handled).toBe(4);
    expect(logLines).toEqual([]);
    // The slots are given back when the uploads end (here: dropped by the client).
    expect(
      (
        await eventually(
          () => dryRun(c),
          (r) => r.status === 200,
          10_000,
        )
      ).status,
    ).toBe(200);
  });

  it('an unknown Content-Encoding is 415', async () => {
    const res = await postRaw(goods(), Buffer.from('{}'), 'compress');
    expect([res.status, res.body._s]).toEqual([415, -415]);
  });
});
