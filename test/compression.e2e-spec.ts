import { request as httpRequest, IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { apiDocsCacheOf } from '../src/http/api-docs-cache';
import { listenOn } from './support/live-client';
import { useImageServer } from './support/image-server';
import { describeEngines } from './support/test-app';

/**
 * Compression: JSON answers and the API docs are gzip/br compressed when asked and at least ~1 KB; small
 * answers, /media files and the .xlsx template never are, and arrive whole.
 */

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A GET whose body is returned as sent on the wire (no decoding). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function decode(raw: Raw): Buffer {
  switch (raw.headers['content-encoding']) {
    case 'gzip':
      return gunzipSync(raw.body);
    case 'br':
      return brotliDecompressSync(raw.body);
    case 'deflate':
      return inflateSync(raw.body);
    default:
      return raw.body;
  }
}

const images = useImageServer();

describeEngines(
  'compression',
  __filename,
  (ctx) => {
    let base: string;
    let accessKey: string;
    let auth: string;
    let mediaPath: string;

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      const c = await ctx().createCustomer();
      accessKey = c.accessKey;
      auth = c.auth();
      const items = Array.from({ length: 30 }, (_, i) => ({
        name: `Compressible item ${i}`,
        sku: `CMP-${i}`,
        url: `https://shop.example.com/compressible/${i}`,
        originalPrice: 1000 + i,
      }));
      items[0] = { ...items[0], mediaUrl: images().url1('/photo.jpg') } as (typeof items)[number];
      const res = await ctx().http.post(`/v1/goods/${accessKey}/sync`).set('Authorization', auth).send(items);
      expect(res.body.createCount).toBe(30);
      mediaPath = new URL(res.body.results[0].medias[0].url as string).pathname;
    });

    it('compresses a large JSON answer with gzip or br, as the client asks', async () => {
      const plain = await rawGet(base, `/v1/goods/${accessKey}?count=30`, { authorization: auth });
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.body.length).toBeGreaterThan(1024);
      // Sent as it is to a client that accepts no encoding, but a shared cache learns that it varies.
      expect(plain.headers.vary).toMatch(/Accept-Encoding/i);
      for (const encoding of ['gzip', 'br']) {
        const res = await rawGet(base, `/v1/goods/${accessKey}?count=30`, { authorization: auth, 'accept-encoding': encoding });
        expect(res.status).toBe(200);
        expect(res.headers['content-encoding']).toBe(encoding);
        expect(res.headers.vary).toMatch(/Accept-Encoding/i);
        expect(res.body.length).toBeLessThan(plain.body.length / 2);
        expect(JSON.parse(decode(res).toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
      }
    });

    it('a small whole answer (compressed in one go on the event loop) negotiates and labels like the larger ones', async () => {
      const path = `/v1/goods/${accessKey}?count=5`;
      const plain = await rawGet(base, path, { authorization: auth });
      expect(plain.body.length).toBeGreaterThan(1024);
      expect(plain.body.length).toBeLessThan(64 * 1024);
      // Equal preference: br first, as the compression middleware chooses; a lower q for br: gzip; deflate
      // (rare) is left to the middleware.
      for (const [accept, expected] of [
        ['gzip, deflate, br', 'br'],
        ['gzip;q=1, br;q=0.1', 'gzip'],
        ['deflate', 'deflate'],
      ] as const) {
        const res = await rawGet(base, path, { authorization: auth, 'accept-encoding': accept });
        expect(res.status).toBe(200);
        expect(res.headers['content-encoding']).toBe(expected);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.headers.vary).toMatch(/Accept-Encoding/i);
        // Compressed whole: the length is known (the middleware's streamed deflate has none).
        if (expected !== 'deflate') expect(Number(res.headers['content-length'])).toBe(res.body.length);
        expect(JSON.parse(decode(res).toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
      }
      // A text page sent as a string keeps its type and charset.
      const page = await rawGet(base, '/docs/', { 'accept-encoding': 'gzip' });
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html; charset=utf-8/i);
      expect(decode(page).toString('utf8')).toMatch(/swagger/i);
    });

    it('compresses the API docs (JSON and page)', async () => {
      const json = await rawGet(base, '/docs-json', { 'accept-encoding': 'gzip' });
      expect(json.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(decode(json).toString('utf8')).openapi).toMatch(/^3\./);
    });

    it('compresses the API docs once per encoding: later requests get the bytes compressed for the first', async () => {
      const cache = apiDocsCacheOf(ctx().app);
      if (!cache) throw new Error('configureApp registered no docs cache');
      const host = { host: 'compressed-docs.example.test' };
      const plain = await rawGet(base, '/docs-json', host);
      expect(plain.headers['content-encoding']).toBeUndefined();
      const before = cache.compressions;
      for (const encoding of ['br', 'gzip'] as const) {
        const first = await rawGet(base, '/docs-json', { ...host, 'accept-encoding': encoding });
        const second = await rawGet(base, '/docs-json', { ...host, 'accept-encoding': encoding });
        for (const res of [first, second]) {
          expect(res.status).toBe(200);
          expect(res.headers['content-encoding']).toBe(encoding);
          expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
          expect(res.headers.vary).toMatch(/Accept-Encoding/i);
          expect(res.headers.etag).toBe(plain.headers.etag);
          expect(Number(res.headers['content-length'])).toBe(res.body.length);
          expect(decode(res).equals(plain.body)).toBe(true);
        }
        expect(second.body.equals(first.body)).toBe(true);
        expect(first.body.length).toBeLessThan(plain.body.length / 4);
      }
      expect(cache.compressions).toBe(before + 2);
      // A client whose copy is still good is told so, without a body, whatever it accepts.
      const fresh = await rawGet(base, '/docs-json', { ...host, 'accept-encoding': 'br', 'if-none-match': String(plain.headers.etag) });
      expect(fresh.status).toBe(304);
      expect(fresh.body.length).toBe(0);
      expect(cache.compressions).toBe(before + 2);
    });

    it('sends small answers as they are', async () => {
      const res = await rawGet(base, '/health', { 'accept-encoding': 'gzip, br' });
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(res.body.toString('utf8'))).toEqual({ status: 'ok' });
    });

    it('never compresses /media files: they arrive whole, byte for byte', async () => {
      const res = await rawGet(base, mediaPath, { 'accept-encoding': 'gzip, br' });
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(res.body.equals(images().fixtures.photo)).toBe(true);
    });

    it('never compresses the .xlsx template: it arrives whole', async () => {
      const res = await rawGet(base, `/v1/goods/${accessKey}/excel/template`, { authorization: auth, 'accept-encoding': 'gzip, br' });
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(res.body.subarray(0, 2).toString('latin1')).toBe('PK');
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);
