import { io } from 'socket.io-client';
import { AppConfig } from '../src/config/app-config';
import { listenOn } from './support/live-client';
import { describeEngines } from './support/test-app';

/**
 * CORS: the public read endpoints and /media answer every origin (`*`, on every response, preflights
 * included); authenticated routes answer only CORS_ORIGINS (origin echoed, Authorization allowed), other
 * origins get no CORS header; the /live Socket.IO namespace takes a connection from any origin.
 */

const LISTED = 'https://shop.example';
const SECOND = 'http://admin.example:8443';
const FOREIGN = 'https://elsewhere.example';

describe('CORS_ORIGINS setting', () => {
  const load = (value: string) => AppConfig.fromEnv({ CORS_ORIGINS: value });
  it('normalizes origins (case, default port, trailing slash) and drops duplicates', () => {
    expect(load(' https://Shop.Example:443/ , http://admin.example:8443,https://shop.example').server.corsOrigins).toEqual([LISTED, SECOND]);
    expect(load('').server.corsOrigins).toEqual([]);
  });
  it.each([
    'https://shop.example/path',
    '*',
    'https://*.shop.example',
    'shop.example',
    'ftp://shop.example',
    'https://u:p@shop.example',
    'https://shop.example?x=1',
  ])('refuses %p at start-up', (value) => {
    expect(() => load(value)).toThrow(/CORS_ORIGINS/);
  });
});

describeEngines(
  'CORS',
  __filename,
  (ctx) => {
    let accessKey: string;
    let auth: string;
    beforeAll(async () => {
      const c = await ctx().createCustomer();
      accessKey = c.accessKey;
      auth = c.auth();
    });

    describe('public read endpoints and /media', () => {
      it('answer Access-Control-Allow-Origin: * with or without an Origin, on errors too', async () => {
        const http = ctx().http;
        for (const req of [
          http.get(`/v1/campaigns/${accessKey}`),
          http.get(`/v1/campaigns/${accessKey}`).set('Origin', FOREIGN),
          http.get(`/v1/campaigns/${accessKey}/upcoming`).set('Origin', LISTED),
          http.get('/v1/campaigns/no-such-customer-123456').set('Origin', FOREIGN),
          http.get('/media/ab/no-such-file.png').set('Origin', FOREIGN),
        ]) {
          const res = await req;
          expect(res.headers['access-control-allow-origin']).toBe('*');
          expect(res.headers['access-control-expose-headers']).toMatch(/X-Request-Id/);
        }
      });

      it('answer a preflight', async () => {
        const res = await ctx()
          .http.options(`/v1/campaigns/${accessKey}`)
          .set('Origin', FOREIGN)
          .set('Access-Control-Request-Method', 'GET')
          .set('Access-Control-Request-Headers', 'x-request-id');
        expect(res.status).toBe(204);
        expect(res.headers['access-control-allow-origin']).toBe('*');
        expect(res.headers['access-control-allow-methods']).toContain('GET');
        expect(res.headers['access-control-allow-headers']?.toLowerCase()).toContain('x-request-id');
      });
    });

    describe('authenticated routes', () => {
      it('echo a listed origin (normalized) and allow Authorization in preflights', async () => {
        for (const origin of [LISTED, SECOND]) {
          const res = await ctx().http.get(`/v1/goods/${accessKey}`).set('Origin', origin).set('Authorization', auth);
          expect(res.status).toBe(200);
          expect(res.headers['access-control-allow-origin']).toBe(origin);
          expect(res.headers.vary).toMatch(/Origin/);
          const pre = await ctx()
            .http.options(`/v1/goods/${accessKey}`)
            .set('Origin', origin)
            .set('Access-Control-Request-Method', 'PUT')
            .set('Access-Control-Request-Headers', 'authorization,content-type,idempotency-key');
          expect(pre.status).toBe(204);
          expect(pre.headers['access-control-allow-origin']).toBe(origin);
          expect(pre.headers['access-control-allow-methods']).toContain('PUT');
          expect(pre.headers['access-control-allow-headers']?.toLowerCase()).toContain('authorization');
          expect(pre.headers['access-control-allow-headers']?.toLowerCase()).toContain('idempotency-key');
          expect(pre.headers['access-control-expose-headers']).toMatch(/Idempotent-Replayed/);
        }
      });

      it('give an unlisted origin no CORS header at all, preflight or not', async () => {
        const res = await ctx().http.get(`/v1/goods/${accessKey}`).set('Origin', FOREIGN).set('Authorization', auth);
        expect(res.status).toBe(200);
        expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
        const pre = await ctx()
          .http.options(`/v1/console/${accessKey}/campaigns`)
          .set('Origin', FOREIGN)
          .set('Access-Control-Request-Method', 'POST')
          .set('Access-Control-Request-Headers', 'authorization');
        expect(Object.keys(pre.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
        expect(pre.status).not.toBe(204);
      });
    });

    it('lets a page of any origin connect to /live', async () => {
      const t = ctx();
      const c = await t.createCustomer();
      const created = await t.http.post(`/v1/console/${c.accessKey}/campaigns`).set('Authorization', c.auth()).send({ title: 'CORS live' });
      expect(created.status).toBe(200);
      const base = await listenOn(t.app);
      // Long polling is what a browser checks with CORS: its answers must carry the page's origin.
      const handshake = await fetch(`${base}/socket.io/?EIO=4&transport=polling`, { headers: { Origin: FOREIGN } });
      expect(handshake.status).toBe(200);
      expect(handshake.headers.get('access-control-allow-origin')).toBe(FOREIGN);
      const socket = io(`${base}/live`, {
        transports: ['polling'],
        extraHeaders: { Origin: FOREIGN },
        auth: { accessKey: c.accessKey, campaignKey: created.body.campaignKey },
        reconnection: false,
        forceNew: true,
      });
      try {
        const snapshot = await new Promise<unknown>((resolve, reject) => {
          socket.once('connect_error', reject);
          socket.once('campaign.snapshot', resolve);
        });
        expect(snapshot).toMatchObject({ campaign: { campaignKey: created.body.campaignKey } });
      } finally {
        socket.close();
      }
    });
  },
  { CORS_ORIGINS: `${LISTED}, HTTP://Admin.Example:8443/` },
);
