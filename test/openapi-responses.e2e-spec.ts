import { gzipSync } from 'node:zlib';
import type { Response } from 'supertest';
import { useImageServer } from './support/image-server';
import { hygieneProblems, OpenApiChecker, SentRequest } from './support/openapi-check';
import { describeEngines, holdWriteLock, TestApp, TestCustomer } from './support/test-app';

/**
 * The OpenAPI document tells the truth: every operation of /docs-json is called at least once
 * with a 2xx, and the error statuses the API has are provoked (400 with errors[], 401, 404, 409, 413,
 * 415, 422, 429 and 503 with Retry-After; the Idempotency-Key answers: a replay, 409, 422); every real exchange is checked against
 * the document the app serves (test/support/openapi-check.ts): path, method and status documented,
 * content type documented, JSON bodies valid with every object closed (`additionalProperties: false`),
 * a 2xx without a token only from a `security: []` operation, and the query and body the service
 * accepted valid against the document.
 */

type Body = Record<string, unknown>;

interface CallOptions {
  query?: Record<string, string>;
  json?: unknown;
  form?: Record<string, string>;
  multipart?: { fields?: Record<string, string>; file?: { bytes: Buffer; filename: string } };
  /** A customer whose token is sent, or a raw Authorization value; none by default. */
  auth?: TestCustomer | string;
  headers?: Record<string, string>;
  /** A raw body (sent as is with the given headers; not validated as a request). */
  raw?: Buffer;
  /** Keep the answer's bytes (downloads) instead of parsing them. */
  binary?: boolean;
}

/** Calls the app and checks the exchange against the document; answers the response. */
function caller(t: () => TestApp, checker: () => OpenApiChecker) {
  return async function call(method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, o: CallOptions = {}): Promise<Response> {
    const qs = o.query ? `?${new URLSearchParams(o.query).toString()}` : '';
    let req = t().http[method](`${path}${qs}`);
    const authorization = typeof o.auth === 'string' ? o.auth : o.auth?.auth();
    if (authorization) req = req.set('Authorization', authorization);
    for (const [k, v] of Object.entries(o.headers ?? {})) req = req.set(k, v);
    let sent: Pick<SentRequest, 'body' | 'bodyType'> = {};
    if (o.json !== undefined) {
      req = req.send(o.json as object);
      sent = { body: o.json, bodyType: 'json' };
    } else if (o.form) {
      req = req.type('form').send(o.form);
      sent = { body: o.form, bodyType: 'form' };
    } else if (o.multipart) {
      for (const [k, v] of Object.entries(o.multipart.fields ?? {})) req = req.field(k, v);
      const file = o.multipart.file;
      if (file) req = req.attach('file', file.bytes, { filename: file.filename, contentType: 'application/octet-stream' });
      sent = { body: { ...o.multipart.fields, ...(file ? { file: file.filename } : {}) }, bodyType: 'multipart' };
    } else if (o.raw) {
      req = req.send(o.raw);
    }
    if (o.binary) {
      req = req.buffer(true).parse((stream, done) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => done(null, Buffer.concat(chunks)));
      });
    }
    const res = await req;
    checker().check({ method, path, query: o.query, token: !!authorization, ...sent }, { status: res.status, headers: res.headers, body: res.body });
    return res;
  };
}

const goodsItem = (n: number | string, extra: Body = {}): Body => ({
  name: `Item ${n}`,
  sku: `OA-${n}`,
  url: `https://shop.example.com/goods/OA-${n}`,
  ...extra,
});

const images = useImageServer();

describeEngines(
  'OpenAPI: real responses agree with /docs-json',
  __filename,
  (ctx) => {
    let checker: OpenApiChecker;
    const call = caller(ctx, () => checker);
    let C: TestCustomer;
    let other: TestCustomer;
    const goods = (rest = '') => `/v1/goods/${C.accessKey}${rest}`;
    const consoleApi = (rest = '') => `/v1/console/${C.accessKey}/campaigns${rest}`;
    const expectStatus = (res: Response, status: number) => {
      if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
    };

    beforeAll(async () => {
      const docs = await ctx().http.get('/docs-json').expect(200);
      checker = new OpenApiChecker(docs.body as Body);
      C = await ctx().createCustomer('OpenAPI', 'KRW');
      other = await ctx().createCustomer('Nobody', 'USD');
    });

    it('document hygiene: tags, summary and description on every operation; every parameter typed and described, with no example for Swagger UI to send; nothing defaulted is required; one error shape', () => {
      expect(hygieneProblems(checker.doc)).toEqual([]);
      expect(checker.doc.openapi).toBe('3.0.3');
    });

    it('the served document names the address it was fetched from as its server', async () => {
      const docs = await ctx().http.get('/docs-json').set('Host', 'live.example.net:8443').expect(200);
      expect(docs.body.servers).toEqual([
        {
          url: '{origin}',
          description: expect.any(String),
          variables: { origin: { default: 'http://live.example.net:8443', description: expect.any(String) } },
        },
      ]);
    });

    it('the checker refuses an undeclared field, a missing required field, a wrong type, an undocumented status and a tokenless 2xx of a secured route', () => {
      const health = { method: 'get', path: '/health', token: false };
      const json = { 'content-type': 'application/json; charset=utf-8' };
      expect(checker.problems(health, { status: 200, headers: json, body: { status: 'ok' } })).toEqual([]);
      expect(checker.problems(health, { status: 200, headers: json, body: { status: 'ok', extra: 1 } }).join()).toMatch(/additional properties/);
      expect(checker.problems(health, { status: 418, headers: json, body: {} }).join()).toMatch(/status 418 is not documented/);
      const lookup = { method: 'get', path: `/v1/goods/${C.accessKey}/sku`, query: { value: 'X' }, token: true };
      const item = {
        id: 1,
        name: 'N',
        brand: null,
        description: null,
        url: 'https://shop.example.com/x',
        sku: 'X',
        mediaUrl: null,
        medias: [],
        originalPrice: 0,
        discountedPrice: 0,
        currency: 'KRW',
        discountPercentage: 0,
      };
      expect(checker.problems(lookup, { status: 200, headers: json, body: item })).toEqual([]);
      const { sku: _sku, ...withoutSku } = item;
      expect(checker.problems(lookup, { status: 200, headers: json, body: withoutSku }).join()).toMatch(/must have required property 'sku'/);
      expect(checker.problems(lookup, { status: 200, headers: json, body: { ...item, id: '1' } }).join()).toMatch(/\/id must be integer/);
      expect(checker.problems({ ...lookup, token: false }, { status: 200, headers: json, body: item }).join()).toMatch(/without a token/);
      expect(checker.problems({ ...lookup, query: { nope: '1' } }, { status: 200, headers: json, body: item }).join()).toMatch(
        /query parameter nope is not documented/,
      );
    });

    // ----------------------------------------------------------------------------------------------
    describe('goods', () => {
      let registered: Body;
      it('register (with an image), list, look-ups', async () => {
        const res = await call('post', goods(), {
          auth: C,
          json: goodsItem(1, {
            brand: 'Sampletech',
            description: 'GPS',
            mediaUrl: images().url1('/photo.jpg'),
            originalPrice: 399000,
            discountedPrice: 359100.5,
            discountPercentage: 10,
          }),
        });
        expectStatus(res, 200);
        registered = res.body as Body;
        expect((registered.medias as Body[])[0].thumbnails).toHaveLength(3);
        expectStatus(await call('get', goods(), { auth: C, query: { searchKeyword: 'item', page: '1', count: '30' } }), 200);
        const walked = await call('get', goods(), { auth: C, query: { searchKeyword: 'item', after: '0', count: '10' } });
        expectStatus(walked, 200);
        expect((walked.body.results as Body[]).map((g) => g.sku)).toEqual(['OA-1']);
        expectStatus(await call('get', goods(), { auth: C, query: { after: '0', page: '2' } }), 400);
        expectStatus(await call('get', goods('/sku'), { auth: C, query: { value: 'OA-1' } }), 200);
        expectStatus(await call('get', goods('/sku'), { auth: C, query: { sku: 'OA-1' } }), 200);
        expectStatus(await call('get', goods('/url'), { auth: C, query: { url: 'https://shop.example.com/goods/OA-1' } }), 200);
        expectStatus(await call('get', goods(`/${String(registered.id)}`), { auth: C }), 200);
        expectStatus(await call('get', goods('/999999999'), { auth: C }), 404);
      });

      it('the three updates', async () => {
        expectStatus(
          await call('put', goods(), { auth: C, query: { refreshMedia: 'false' }, json: { id: registered.id, brand: null, originalPrice: '19.99' } }),
          200,
        );
        expectStatus(await call('put', goods('/sku'), { auth: C, json: { sku: 'OA-1', name: 'Renamed' } }), 200);
        expectStatus(
          await call('put', goods('/url'), { auth: C, query: { refreshMedia: 'true' }, json: { url: 'https://shop.example.com/goods/OA-1', mediaUrl: null } }),
          200,
        );
      });

      it('the hosted image: bytes with an image type; the key sent with its slash encoded, as a generated client sends it', async () => {
        const item = (await call('post', goods(), { auth: C, json: goodsItem(2, { mediaUrl: images().url1('/logo.png') }) })).body as Body;
        const url = String((item.medias as Body[])[0].url);
        const key = url.slice(url.indexOf('/media/') + '/media/'.length);
        const res = await call('get', `/media/${encodeURIComponent(key)}`);
        expectStatus(res, 200);
        expect(res.headers['content-type']).toBe('image/png');
        expect(Buffer.compare(res.body as Buffer, images().fixtures.logo)).toBe(0);
        const missing = await call('get', `/media/${encodeURIComponent(`ab/${'0'.repeat(64)}.jpg`)}`);
        expectStatus(missing, 404);
        expect(missing.body._s).toBe(-404);
      });

      it('sync: CREATE, UPDATE and FAIL rows (elements as the document describes them: FAIL for an unknown id, a missing key to create)', async () => {
        const res = await call('post', goods('/sync'), {
          auth: C,
          query: { refreshMedia: 'false' },
          json: [
            goodsItem(3),
            { sku: 'OA-1', discountedPrice: '1000' },
            { id: 999999, name: 'Ghost' },
            { sku: 'OA-NEW', originalPrice: 5 },
            goodsItem(4),
            goodsItem(5),
            goodsItem(6),
            goodsItem(7),
            goodsItem(8),
          ],
        });
        expectStatus(res, 200);
        expect((res.body.results as Body[]).map((r) => r.status)).toEqual([
          'CREATE',
          'UPDATE',
          'FAIL',
          'FAIL',
          'CREATE',
          'CREATE',
          'CREATE',
          'CREATE',
          'CREATE',
        ]);
      });

      it('a FAIL row echoes what the element sent, whatever its type (checked against the document, the request aside)', async () => {
        const res = await ctx()
          .http.post(goods('/sync'))
          .set('Authorization', C.auth())
          .send([{ sku: 'OA-BAD', originalPrice: -1, brand: 7 }, { sku: true }]);
        expectStatus(res, 200);
        expect(
          checker.problems(
            { method: 'post', path: goods('/sync'), token: true, checkRequest: false },
            { status: res.status, headers: res.headers, body: res.body },
          ),
        ).toEqual([]);
        expect((res.body.results as Body[]).map((r) => [r.status, r.originalPrice, r.brand, r.sku])).toEqual([
          ['FAIL', -1, 7, 'OA-BAD'],
          ['FAIL', null, null, true],
        ]);
      });

      it('spreadsheet import (ignored columns named in a header) and the template download', async () => {
        const csv = Buffer.from('sku,name,url,Color\nOA-CSV,From CSV,https://shop.example.com/goods/OA-CSV,red\nOA-CSV2,,,\n');
        const res = await call('post', goods('/excel'), {
          auth: C,
          query: { refreshMedia: 'false' },
          multipart: { file: { bytes: csv, filename: 'goods.csv' } },
        });
        expectStatus(res, 200);
        expect(res.headers['x-ignored-columns']).toBe('Color');
        expect((res.body.results as Body[]).map((r) => r.status)).toEqual(['CREATE', 'FAIL']);
        const template = await call('get', goods('/excel/template'), { auth: C, binary: true });
        expectStatus(template, 200);
        expect((template.body as Buffer).subarray(0, 2).toString()).toBe('PK');
      });

      it('dry runs (sync and spreadsheet: a CREATE row without id, an image not fetched) and the two exports', async () => {
        const dry = await call('post', goods('/sync'), {
          auth: C,
          query: { dryRun: 'true', refreshMedia: 'false' },
          json: [goodsItem('DRY', { mediaUrl: images().url1('/photo.jpg') }), { sku: 'OA-1', name: 'Dry rename' }],
        });
        expectStatus(dry, 200);
        expect((dry.body.results as Body[]).map((r) => [r.status, r.id === null, r.message])).toEqual([
          ['CREATE', true, `dry run: image not fetched: ${images().url1('/photo.jpg')}`],
          ['UPDATE', false, null],
        ]);
        const sheet = await call('post', goods('/excel'), {
          auth: C,
          query: { dryRun: 'true' },
          multipart: { file: { bytes: Buffer.from('sku,name,url\nOA-DRY2,Dry,https://shop.example.com/goods/OA-DRY2\n'), filename: 'goods.csv' } },
        });
        expectStatus(sheet, 200);
        expect((sheet.body.results as Body[]).map((r) => [r.status, r.id])).toEqual([['CREATE', null]]);
        expectStatus(await call('post', goods('/sync'), { auth: C, query: { dryRun: 'maybe' }, json: [] }), 400);

        const xlsx = await call('get', goods('/excel/export'), { auth: C, binary: true });
        expectStatus(xlsx, 200);
        expect((xlsx.body as Buffer).subarray(0, 2).toString()).toBe('PK');
        const csv = await call('get', goods('/excel/export'), { auth: C, query: { format: 'csv', searchKeyword: 'item' }, binary: true });
        expectStatus(csv, 200);
        expect((csv.body as Buffer).toString('utf8')).toMatch(/^\uFEFFid,sku,url,name,/);
        expectStatus(await call('get', goods('/excel/export'), { auth: C, query: { format: 'pdf' } }), 400);
      });

      it('spreadsheet import as a job (202 with Location), the job with its results, the jobs list, the failures CSV', async () => {
        const csv = Buffer.from('sku,name,url,originalPrice\nOA-JOB,As a job,https://shop.example.com/goods/OA-JOB,1200\nOA-JOB2,,,-5\n');
        const res = await call('post', goods('/excel'), { auth: C, query: { async: 'true' }, multipart: { file: { bytes: csv, filename: 'job.csv' } } });
        expectStatus(res, 202);
        const path = goods(`/excel/jobs/${res.body.jobId}`);
        expect(res.headers.location).toBe(path);
        let job = res;
        for (let i = 0; i < 200 && !['succeeded', 'failed'].includes(job.body.state as string); i++) {
          await new Promise((r) => setTimeout(r, 100));
          job = await call('get', path, { auth: C, query: { page: '1', count: '100' } });
          expectStatus(job, 200);
        }
        expect(job.body).toMatchObject({ state: 'succeeded', createCount: 1, failCount: 1 });
        expect((job.body.results as Body[]).map((r) => r.status)).toEqual(['CREATE', 'FAIL']);
        const list = await call('get', goods('/excel/jobs'), { auth: C, query: { page: '1', count: '10' } });
        expectStatus(list, 200);
        expect((list.body.results as Body[]).map((j) => j.jobId)).toContain(res.body.jobId);
        const failures = await call('get', `${path}/failures.csv`, { auth: C, binary: true });
        expectStatus(failures, 200);
        expect((failures.body as Buffer).toString('utf8')).toContain('OA-JOB2');
        expectStatus(await call('get', goods('/excel/jobs/999999'), { auth: C }), 404);
        expectStatus(await call('get', goods('/excel/jobs/999999/failures.csv'), { auth: C }), 404);
      });

      it('the five deletes', async () => {
        const idOf = async (n: number) => (await call('get', goods('/sku'), { auth: C, query: { value: `OA-${n}` } })).body.id as number;
        expectStatus(await call('delete', goods(`/${await idOf(4)}`), { auth: C }), 200);
        expectStatus(await call('delete', goods('/sku'), { auth: C, query: { value: 'OA-5' } }), 200);
        expectStatus(await call('delete', goods('/url'), { auth: C, query: { url: 'https://shop.example.com/goods/OA-6' } }), 200);
        expectStatus(await call('delete', goods(`/${await idOf(7)}/sku`), { auth: C, query: { sku: 'OA-7' } }), 200);
        expectStatus(await call('delete', goods(`/${await idOf(8)}/url`), { auth: C, query: { value: 'https://shop.example.com/goods/OA-8' } }), 200);
      });
    });

    // ----------------------------------------------------------------------------------------------
    describe('campaigns', () => {
      let key = '';
      let ids: number[] = [];
      it('console: create (ISO and epoch dates), list, one, change', async () => {
        const created = await call('post', consoleApi(), {
          auth: C,
          json: {
            title: 'Friday night deals',
            scheduledAt: '2026-03-01T20:00:00+09:00',
            scheduledEndAt: 1803898800000,
            collectionVisible: true,
            operatorName: 'Mina',
            posterUrl: 'https://cdn.example.com/poster.jpg',
            liveUrl: 'stream-1',
          },
        });
        expectStatus(created, 200);
        key = created.body.campaignKey;
        expectStatus(await call('get', consoleApi(), { auth: C, query: { page: '1', count: '10' } }), 200);
        expectStatus(await call('get', consoleApi(`/${key}`), { auth: C }), 200);
        expectStatus(await call('patch', consoleApi(`/${key}`), { auth: C, json: { description: 'Deals', scheduledAt: '2026-03-01', liveUrl: null } }), 200);
      });

      it("campaign goods: each documented body example of the add (what Swagger UI's Try it out sends) names the goods one way, and the service takes it", async () => {
        type AddOperation = { requestBody: { content: { 'application/json': { examples: Record<string, { value: Record<string, unknown> }> } } } };
        const paths = checker.doc.paths as Record<string, { post: AddOperation }>;
        const add = paths['/v1/console/{accessKey}/campaigns/{campaignKey}/goods'].post;
        const examples = Object.values(add.requestBody.content['application/json'].examples).map((e) => e.value);
        expect(examples.map((e) => Object.keys(e))).toEqual([['goodsIds'], ['skus'], ['urls']]);
        for (const example of examples) {
          // The example names goods this catalog lacks: a 404 naming them, not the 400 "exactly one of" a merged body got.
          const res = await call('post', consoleApi(`/${key}/goods`), { auth: C, json: example });
          expectStatus(res, 404);
          expect(res.body._e).toMatch(/^Goods not found: /);
        }
      });

      it('campaign goods: add, list, reorder, showing now, remove', async () => {
        for (const n of [1, 2, 3]) ids.push((await call('get', goods('/sku'), { auth: C, query: { value: `OA-${n}` } })).body.id as number);
        expectStatus(await call('post', consoleApi(`/${key}/goods`), { auth: C, json: { goodsIds: ids } }), 200);
        expectStatus(await call('get', consoleApi(`/${key}/goods`), { auth: C }), 200);
        expectStatus(await call('put', consoleApi(`/${key}/goods/order`), { auth: C, json: { goodsIds: [ids[2], ids[0]] } }), 200);
        expectStatus(await call('put', consoleApi(`/${key}/goods/${ids[0]}/showing`), { auth: C, json: { showingNow: true } }), 200);
        expectStatus(await call('delete', consoleApi(`/${key}/goods/${ids[2]}`), { auth: C }), 200);
        ids = ids.slice(0, 2);
      });

      it('sales status: parameters in a JSON body, in the query string, in a form', async () => {
        const base = `${goods()}/campaign/${key}/salesStatus`;
        expectStatus(
          await call('put', `${base}/id`, {
            auth: C,
            json: { goodsId: ids[0], salesStatus: 'SOLD_OUT', notify: false, name: 'Jin', chatMessage: 'Sold out!' },
          }),
          200,
        );
        expectStatus(await call('put', `${base}/sku`, { auth: C, query: { sku: 'OA-2', salesStatus: 'ALMOST_SOLD_OUT', adminChatNotice: 'Hurry' } }), 200);
        expectStatus(
          await call('put', `${base}/url`, { auth: C, form: { url: 'https://shop.example.com/goods/OA-1', salesStatus: 'ON_SALE', notify: 'true' } }),
          200,
        );
        expectStatus(await call('put', `${base}/id`, { auth: C, multipart: { fields: { goodsId: String(ids[1]), salesStatus: 'SOLD_OUT' } } }), 200);
      });

      it('stock: set, decrement, increment in every locator and parameter style; 400, 404 and 409 answers', async () => {
        const base = `${goods()}/campaign/${key}/stock`;
        expectStatus(await call('put', `${base}/id`, { auth: C, json: { goodsId: ids[0], stock: 10, almostSoldOutAt: 2, name: 'Orders' } }), 200);
        expectStatus(await call('put', `${base}/sku`, { auth: C, query: { sku: 'OA-2', stock: '5', almostSoldOutAt: '' } }), 200);
        expectStatus(await call('put', `${base}/url`, { auth: C, form: { url: 'https://shop.example.com/goods/OA-1', stock: '9', notify: 'true' } }), 200);
        expectStatus(await call('post', `${base}/id/decrement`, { auth: C, json: { goodsId: ids[0], quantity: 2 } }), 200);
        expectStatus(await call('post', `${base}/sku/decrement`, { auth: C, query: { sku: 'OA-2' } }), 200);
        expectStatus(await call('post', `${base}/url/decrement`, { auth: C, multipart: { fields: { url: 'https://shop.example.com/goods/OA-1' } } }), 200);
        expectStatus(await call('post', `${base}/id/increment`, { auth: C, form: { goodsId: String(ids[0]), quantity: '3' } }), 200);
        expectStatus(await call('post', `${base}/sku/increment`, { auth: C, json: { sku: 'OA-2', quantity: 1 } }), 200);
        expectStatus(await call('post', `${base}/url/increment`, { auth: C, query: { url: 'https://shop.example.com/goods/OA-1' } }), 200);
        expectStatus(await call('post', `${base}/id/decrement`, { auth: C, json: { goodsId: ids[0], quantity: 1000 } }), 409);
        expectStatus(await call('post', `${base}/id/decrement`, { auth: C, json: { goodsId: ids[0], quantity: 0 } }), 400);
        expectStatus(await call('put', `${base}/id`, { auth: C, json: { goodsId: ids[0] } }), 400);
        expectStatus(await call('put', `${base}/sku`, { auth: C, json: { sku: 'NOPE', stock: 1 } }), 404);
      });

      it('chat: a line, a pinned notice, unpinning (notice null); status ONAIR', async () => {
        expectStatus(await call('post', consoleApi(`/${key}/chat`), { auth: C, json: { message: 'Welcome!', name: 'Mina' } }), 200);
        expectStatus(await call('post', consoleApi(`/${key}/chat`), { auth: C, json: { message: 'Free shipping', pinned: true } }), 200);
        const unpinned = await call('post', consoleApi(`/${key}/chat`), { auth: C, json: { message: '', pinned: true } });
        expectStatus(unpinned, 200);
        expect(unpinned.body.notice).toBeNull();
        expectStatus(await call('post', consoleApi(`/${key}/chat`), { auth: C, json: { message: 'Pinned again', pinned: true } }), 200);
        expectStatus(await call('put', consoleApi(`/${key}/status`), { auth: C, json: { campaignStatus: 'ONAIR' } }), 200);
      });

      it('public: list (status, dates, detail), upcoming (campaign and NOT_EXIST), one (campaign with notice and NOT_EXIST)', async () => {
        const pub = `/v1/campaigns/${C.accessKey}`;
        const list = await call('get', pub, {
          query: { status: 'READY,ONAIR', from: '2026-01-01', to: '253402300799999', page: '1', count: '10', detail: 'true' },
        });
        expectStatus(list, 200);
        expect(list.body.results).toHaveLength(1);
        expectStatus(await call('get', pub, { query: { from: '2026-01-01T00:00:00Z' } }), 200);
        const upcoming = await call('get', `${pub}/upcoming`, { query: { includeOnAir: 'true' } });
        expect([upcoming.status, upcoming.body.campaignStatus]).toEqual([200, 'ONAIR']);
        const none = await call('get', `/v1/campaigns/${other.accessKey}/upcoming`);
        expect([none.status, none.body]).toEqual([200, { campaignStatus: 'NOT_EXIST' }]);
        const one = await call('get', `${pub}/${key}`);
        expect([one.status, one.body.notice?.message]).toEqual([200, 'Pinned again']);
        const unknown = await call('get', `${pub}/NoSuchCampaign01`);
        expect([unknown.status, unknown.body]).toEqual([200, { campaignKey: 'NoSuchCampaign01', campaignStatus: 'NOT_EXIST' }]);
      });

      it('status CLOSED, then delete', async () => {
        expectStatus(await call('put', consoleApi(`/${key}/status`), { auth: C, json: { campaignStatus: 'CLOSED' } }), 200);
        expectStatus(await call('delete', consoleApi(`/${key}`), { auth: C }), 200);
      });
    });

    it('webhooks: register, list, one, change, rotate the secret, the delivery log, replay, delete; 400 and 404 answers', async () => {
      const hooks = (rest = '') => `/v1/console/${C.accessKey}/webhooks${rest}`;
      const created = await call('post', hooks(), {
        auth: C,
        json: { url: 'https://hooks.example.com/livegoods', events: ['campaign.status', 'goods.salesStatus'], description: 'Orders' },
      });
      expectStatus(created, 200);
      const id = created.body.webhookId as number;
      expectStatus(await call('get', hooks(), { auth: C }), 200);
      expectStatus(await call('get', hooks(`/${id}`), { auth: C }), 200);
      expectStatus(await call('patch', hooks(`/${id}`), { auth: C, json: { description: null, active: true } }), 200);
      expectStatus(await call('post', hooks(`/${id}/secret`), { auth: C }), 200);

      const key = (await call('post', consoleApi(), { auth: C, json: { title: 'Hooked' } })).body.campaignKey as string;
      expectStatus(await call('put', consoleApi(`/${key}/status`), { auth: C, json: { campaignStatus: 'ONAIR' } }), 200);
      const log = await call('get', hooks(`/${id}/deliveries`), { auth: C, query: { page: '1', count: '10' } });
      expectStatus(log, 200);
      expect(log.body.totalCount).toBe(1);
      expectStatus(await call('get', hooks(`/${id}/deliveries`), { auth: C, query: { state: 'delivered' } }), 200);
      const deliveryId = log.body.results[0].deliveryId as number;
      expectStatus(await call('post', hooks(`/${id}/deliveries/${deliveryId}/replay`), { auth: C }), 200);

      expectStatus(await call('post', hooks(), { auth: C, json: { url: 'ftp://hooks.example.com', events: ['nope'] } }), 400);
      expectStatus(await call('get', hooks(`/${id}/deliveries`), { auth: C, query: { state: 'lost' } }), 400);
      expectStatus(await call('get', hooks('/999999999'), { auth: C }), 404);
      expectStatus(await call('post', hooks(`/${id}/deliveries/999999999/replay`), { auth: C }), 404);
      expectStatus(await call('delete', hooks(`/${id}`), { auth: C }), 200);
      expectStatus(await call('delete', hooks(`/${id}`), { auth: C }), 404);
    });

    it('health: liveness, readiness, metrics', async () => {
      expectStatus(await call('get', '/health'), 200);
      expectStatus(await call('get', '/health/ready'), 200);
      expectStatus(await call('get', '/health/metrics'), 200);
      expectStatus(await call('get', '/metrics'), 200);
    });

    // ----------------------------------------------------------------------------------------------
    describe('errors, in the one shape the document gives', () => {
      it('400 with errors[] naming the fields, 400 on bad paging', async () => {
        const res = await call('post', goods(), { auth: C, json: { sku: 'X' } });
        expectStatus(res, 400);
        expect((res.body.errors as Body[]).map((e) => e.field)).toEqual(expect.arrayContaining(['name']));
        expectStatus(await call('get', goods(), { auth: C, query: { count: 'x' } }), 400);
        expectStatus(await call('get', `/v1/campaigns/${C.accessKey}`, { query: { from: '2026-02-30' } }), 400);
      });

      it('401 without a token and with a foreign one', async () => {
        expectStatus(await call('get', goods()), 401);
        expectStatus(await call('post', consoleApi(), { auth: `Bearer ${other.token()}`, json: { title: 'x' } }), 401);
      });

      it('404: goods, campaign (-710), goods not in the campaign (-711)', async () => {
        expectStatus(await call('get', goods('/sku'), { auth: C, query: { value: 'NOPE' } }), 404);
        expect((await call('get', consoleApi('/NoSuchCampaign01'), { auth: C })).body._s).toBe(-710);
        const key = (await call('post', consoleApi(), { auth: C, json: { title: 'Errors' } })).body.campaignKey as string;
        const id = (await call('get', goods('/sku'), { auth: C, query: { value: 'OA-1' } })).body.id as number;
        expect((await call('put', consoleApi(`/${key}/goods/${id}/showing`), { auth: C, json: { showingNow: true } })).body._s).toBe(-711);
      });

      it('409 on a taken sku; 413 over the body limit and over the synchronous spreadsheet rows; 415 for an unreadable spreadsheet and an unknown Content-Encoding; 422 on a status move', async () => {
        expectStatus(await call('post', goods(), { auth: C, json: goodsItem(1) }), 409);
        expectStatus(await call('post', goods(), { auth: C, json: goodsItem(99, { description: 'x'.repeat(1_100_000) }) }), 413);
        // A spreadsheet over the synchronous row limit without async=true: 413, never a job.
        const rows = Array.from({ length: 10_001 }, (_, i) => `OA-BIG-${i},Big ${i},https://shop.example.com/goods/OA-BIG-${i}`);
        const big = await call('post', goods('/excel'), {
          auth: C,
          multipart: { file: { bytes: Buffer.from(['sku,name,url', ...rows].join('\n')), filename: 'big.csv' } },
        });
        expectStatus(big, 413);
        expect(big.body._e).toMatch(/async=true/);
        expectStatus(
          await call('post', goods('/excel'), { auth: C, multipart: { file: { bytes: Buffer.from([1, 2, 3, 4, 5]), filename: 'goods.xlsx' } } }),
          415,
        );
        const gz = gzipSync(Buffer.from(JSON.stringify(goodsItem(98))));
        expectStatus(await call('post', goods(), { auth: C, raw: gz, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' } }), 415);
        const key = (await call('post', consoleApi(), { auth: C, json: { title: 'Moves' } })).body.campaignKey as string;
        expectStatus(await call('put', consoleApi(`/${key}/status`), { auth: C, json: { campaignStatus: 'CLOSED' } }), 422);
      });
    });

    it('Idempotency-Key: every authenticated write documents the header, 409 (Retry-After) and 422; a replay, 409, 422 and 400 agree with the document', async () => {
      const undocumented: string[] = [];
      for (const [template, item] of Object.entries(checker.doc.paths as Record<string, Record<string, Body>>)) {
        for (const method of ['post', 'put', 'patch', 'delete']) {
          const op = item[method];
          if (!op || (Array.isArray(op.security) && op.security.length === 0)) continue;
          const params = (op.parameters as Body[] | undefined) ?? [];
          const responses = op.responses as Record<string, Body>;
          const header = params.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
          const retryAfter = (responses['409']?.headers as Body | undefined)?.['Retry-After'];
          if (!header || header.required || !retryAfter || !responses['422'] || !responses['400']) undocumented.push(`${method.toUpperCase()} ${template}`);
        }
      }
      expect(undocumented).toEqual([]);

      const keyed = (key: string) => ({ 'Idempotency-Key': key });
      const first = await call('post', goods(), { auth: C, json: goodsItem('IK1'), headers: keyed('oa-idem-1') });
      expectStatus(first, 200);
      const replay = await call('post', goods(), { auth: C, json: goodsItem('IK1'), headers: keyed('oa-idem-1') });
      expectStatus(replay, 200);
      expect([replay.headers['idempotent-replayed'], replay.body]).toEqual(['true', first.body]);
      expectStatus(await call('post', goods(), { auth: C, json: goodsItem('IK2'), headers: keyed('oa-idem-1') }), 422);
      expectStatus(await call('post', goods(), { auth: C, json: goodsItem('IK3'), headers: keyed('x'.repeat(256)) }), 400);
      // A bad key on a route whose own answers have no 400 (a DELETE without a body) is still a documented 400.
      const doomed = await call('post', consoleApi(), { auth: C, json: { title: 'Keyed delete' } });
      expectStatus(doomed, 200);
      const badKey = await call('delete', consoleApi(`/${doomed.body.campaignKey}`), { auth: C, headers: keyed('caf\u00e9') });
      expectStatus(badKey, 400);
      expect(badKey.body._s).toBe(-510);
      expectStatus(await call('delete', consoleApi(`/${doomed.body.campaignKey}`), { auth: C, headers: keyed('oa-idem-delete') }), 200);
      const sheet = { file: { bytes: Buffer.from('sku,name,url\nOA-IK4,Sheet,https://shop.example.com/goods/OA-IK4\n'), filename: 'goods.csv' } };
      expectStatus(await call('post', goods('/excel'), { auth: C, multipart: sheet, headers: keyed('oa-idem-sheet') }), 200);
      const sheetAgain = await call('post', goods('/excel'), { auth: C, multipart: sheet, headers: keyed('oa-idem-sheet') });
      expect([sheetAgain.status, sheetAgain.headers['idempotent-replayed']]).toEqual([200, 'true']);

      const tag = `oa-idem-${ctx().engine}`;
      const hold = images().hold(tag);
      const slow = goodsItem('IK5', { mediaUrl: images().url1(`/held/${tag}/photo.jpg`) });
      const running = call('post', goods(), { auth: C, json: slow, headers: keyed('oa-idem-slow') });
      await hold.arrived;
      const busy = await call('post', goods(), { auth: C, json: slow, headers: keyed('oa-idem-slow') });
      hold.release();
      expectStatus(busy, 409);
      expect(busy.headers['retry-after']).toBe('1');
      expectStatus(await running, 200);
    });

    it('every operation of the document was answered with a 2xx, and 400, 401, 404, 409, 413, 415 and 422 were seen', () => {
      const missing = checker.operationNames().filter((name) => ![...(checker.seen.get(name) ?? [])].some((s) => s >= 200 && s < 300));
      expect(missing).toEqual([]);
      const statuses = new Set([...checker.seen.values()].flatMap((s) => [...s]));
      for (const status of [400, 401, 404, 409, 413, 415, 422]) expect([status, statuses.has(status)]).toEqual([status, true]);
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', IMPORT_JOB_POLL_MS: '100' },
);

describeEngines(
  'OpenAPI: rate-limited answers (429 with Retry-After) agree with /docs-json',
  `${__filename}-rate-limits`,
  (ctx) => {
    let checker: OpenApiChecker;
    const call = caller(ctx, () => checker);

    it('429 on a tenant route and on a public route', async () => {
      checker = new OpenApiChecker((await ctx().http.get('/docs-json')).body as Body);
      const c = await ctx().createCustomer();
      const seen: number[] = [];
      for (let i = 0; i < 4; i += 1) seen.push((await call('get', `/v1/goods/${c.accessKey}`, { auth: c })).status);
      expect(seen).toContain(429);
      const pub = await call('get', `/v1/campaigns/${c.accessKey}`);
      expect(pub.status).toBe(429);
      expect(Number(pub.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(pub.body._s).toBe(-429);
    });
  },
  { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_IP: '3', RATE_LIMIT_WINDOW_MS: '60000' },
);

describeEngines(
  'OpenAPI: unavailable answers (503 with Retry-After) agree with /docs-json',
  `${__filename}-unavailable`,
  (ctx) => {
    it('503 when a write waits longer than DB_LOCK_TIMEOUT_MS for a lock held elsewhere', async () => {
      const t = ctx();
      const checker = new OpenApiChecker((await t.http.get('/docs-json')).body as Body);
      const call = caller(ctx, () => checker);
      const c = await t.createCustomer('Locked');
      const release = await holdWriteLock(t, c.id);
      try {
        const res = await call('post', `/v1/goods/${c.accessKey}`, { auth: c, json: goodsItem('locked') });
        expect([res.status, res.body._s]).toEqual([503, -503]);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      } finally {
        await release();
      }
    });
  },
  { DB_QUERY_TIMEOUT_MS: '1500', DB_CONNECT_TIMEOUT_MS: '1500', DB_LOCK_TIMEOUT_MS: '1000', DB_TRANSACTION_TIMEOUT_MS: '3000' },
);
