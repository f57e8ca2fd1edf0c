import { rmSync } from 'node:fs';
import { io } from 'socket.io-client';
import request from 'supertest';
import { AppConfig } from '../src/config/app-config';
import { createNodeCustomer, Node, startNode } from './support/cluster-app';
import { PollingSession } from './support/bare-connections';
import { listenOn } from './support/live-client';
import { parsePrometheusText, valueOf } from './support/prometheus-text';
import { TcpProxy } from './support/tcp-proxy';
import { describeEngines, dropDatabase, engineUnavailable, TestCustomer, testConfig } from './support/test-app';

/**
 * Rate limits: per client IP on every route, per customer on authenticated routes, refused
 * authentications per IP, new viewer connections per IP; 429 -429 with Retry-After; shared by the nodes
 * of a deployment through Redis, and never a failure when Redis is away. Client addresses are set with
 * X-Forwarded-For (TRUST_PROXY=true), so that each test counts on an address of its own.
 */

const LIMITS = {
  RATE_LIMIT_ENABLED: 'true',
  RATE_LIMIT_WINDOW_MS: '60000',
  RATE_LIMIT_IP: '30',
  RATE_LIMIT_CUSTOMER: '10',
  RATE_LIMIT_AUTH_FAILURES: '5',
  RATE_LIMIT_LIVE_CONNECTIONS: '3',
  RATE_LIMIT_PUBLIC_BUILDS: '3',
  TRUST_PROXY: 'true',
};

/** livegoods_rate_limit_refusals_total{limit="ip"} in a /metrics answer. */
function ipRefusals(res: request.Response): number {
  return valueOf(parsePrometheusText(res.text), 'livegoods_rate_limit_refusals_total', { limit: 'ip' }) ?? 0;
}

function expectLimited(res: request.Response): void {
  expect({ status: res.status, _s: res.body?._s }).toEqual({ status: 429, _s: -429 });
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(res.body._e).toMatch(/retry after/);
}

describeEngines(
  'rate limits',
  __filename,
  (ctx) => {
    let A: TestCustomer;
    let B: TestCustomer;
    let n = 0;
    const ip = () => `203.0.113.${(n += 1)}`;

    beforeAll(async () => {
      A = await ctx().createCustomer('Busy');
      B = await ctx().createCustomer('Quiet');
    });

    it('per client IP on every route, public ones included: past RATE_LIMIT_IP, 429 -429 with Retry-After; /health is never refused', async () => {
      const from = ip();
      for (let i = 0; i < 30; i += 1) expect((await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', from)).status).toBe(200);
      expectLimited(await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', from));
      expectLimited(await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', from).set('Authorization', B.auth()));
      expect((await ctx().http.get('/health/ready').set('X-Forwarded-For', from)).status).toBe(200);
      // Another address is not affected.
      expect((await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', ip())).status).toBe(200);
    });

    it('behind the proxy (TRUST_PROXY=true), the address it appended counts, not what the client wrote into X-Forwarded-For before it', async () => {
      // A proxy that appends (nginx's $proxy_add_x_forwarded_for) keeps the client's own header in front.
      const from = ip();
      const forged = (i: number) => `198.51.100.${i % 250}, ${from}`;
      for (let i = 0; i < 30; i += 1) expect((await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', forged(i))).status).toBe(200);
      expectLimited(await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', forged(30)));
      expectLimited(await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', from));
      // Bad tokens: past RATE_LIMIT_AUTH_FAILURES from the same address, whatever it wrote in front.
      const other = ip();
      const statuses: number[] = [];
      for (let i = 0; i < 7; i += 1) {
        const res = await ctx()
          .http.get(`/v1/goods/${A.accessKey}`)
          .set('X-Forwarded-For', `192.0.2.${i}, ${other}`)
          .set('Authorization', 'Bearer not-a-token');
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    });

    it('per client IP also where no controller answers: /docs-json, /docs, Swagger UI assets and unknown paths, in the same counter; /health is never refused', async () => {
      const before = ipRefusals(await ctx().http.get('/metrics').expect(200));
      for (const path of ['/docs-json', '/docs', '/docs/swagger-ui.css', '/docs/swagger-ui-init.js', '/docs-yaml', '/nonexistent/path']) {
        const from = ip();
        for (let i = 0; i < 30; i += 1) {
          const res = await ctx().http.get(path).set('X-Forwarded-For', from);
          expect({ path, status: res.status }).toEqual({ path, status: path === '/nonexistent/path' ? 404 : 200 });
        }
        const refused = await ctx().http.get(path).set('X-Forwarded-For', from).set('X-Request-Id', `limited-${from}`);
        expectLimited(refused);
        expect(refused.headers['x-request-id']).toBe(`limited-${from}`);
        // One counter for the whole API: the routes of the controllers are refused to that address too.
        expectLimited(await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', from));
        expect((await ctx().http.get('/health').set('X-Forwarded-For', from)).status).toBe(200);
      }
      // Each refusal is counted as one of the per-IP limit (12: two for each of the six paths).
      expect(ipRefusals(await ctx().http.get('/metrics').expect(200)) - before).toBe(12);
    });

    it('an unknown path is 404 -404 with X-Request-Id, counted once: also under /docs, where the docs middleware saw it first', async () => {
      const from = ip();
      const first = await ctx().http.get('/nonexistent/path').set('X-Forwarded-For', from).set('X-Request-Id', 'unknown-1');
      expect({ status: first.status, body: first.body }).toEqual({ status: 404, body: { _s: -404, _e: 'No route for GET /nonexistent/path' } });
      expect(first.headers['x-request-id']).toBe('unknown-1');
      for (let i = 1; i < 15; i += 1) expect((await ctx().http.post('/docs/nothing-here').set('X-Forwarded-For', from)).status).toBe(404);
      for (let i = 0; i < 15; i += 1) expect((await ctx().http.get('/docs/no-such-asset.js').set('X-Forwarded-For', from)).status).toBe(404);
      // 30 requests so far, each counted once: the 31st is the first refused.
      expectLimited(await ctx().http.get('/docs/no-such-asset.js').set('X-Forwarded-For', from));
    });

    it('API routes and the docs share the per-IP counter: 15 of each, the 31st request is refused wherever it goes', async () => {
      const from = ip();
      for (let i = 0; i < 15; i += 1) {
        expect((await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', from)).status).toBe(200);
        expect((await ctx().http.get('/docs-json').set('X-Forwarded-For', from)).status).toBe(200);
      }
      expectLimited(await ctx().http.get('/docs-json').set('X-Forwarded-For', from));
    });

    it('per customer: past RATE_LIMIT_CUSTOMER its requests are 429 from any address; other customers are not affected', async () => {
      for (let i = 0; i < 10; i += 1)
        expect((await ctx().http.get(`/v1/goods/${A.accessKey}`).set('X-Forwarded-For', ip()).set('Authorization', A.auth())).status).toBe(200);
      expectLimited(await ctx().http.get(`/v1/goods/${A.accessKey}`).set('X-Forwarded-For', ip()).set('Authorization', A.auth()));
      expect((await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', ip()).set('Authorization', B.auth())).status).toBe(200);
    });

    it("requests with a bad token do not spend the customer's limit; past RATE_LIMIT_AUTH_FAILURES an address gets 429 instead of 401", async () => {
      const from = ip();
      for (let i = 0; i < 5; i += 1) {
        const res = await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', from).set('Authorization', 'Bearer not.a.token');
        expect(res.status).toBe(401);
      }
      expectLimited(await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', from).set('Authorization', 'Bearer not.a.token'));
      expectLimited(await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', from));
      // B's own limit was not touched by them.
      for (let i = 0; i < 5; i += 1)
        expect((await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', ip()).set('Authorization', B.auth())).status).toBe(200);
    });

    it('an IPv6 client is counted by its /64: fresh addresses of one /64 share the limits, another /64 does not', async () => {
      let host = 0;
      const sameNet = () => `2001:db8:77:${ctx().engine === 'sqlite' ? 1 : 2}:${(host += 1).toString(16)}::1`;
      for (let i = 0; i < 5; i += 1) {
        const res = await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', sameNet()).set('Authorization', 'Bearer not.a.token');
        expect(res.status).toBe(401);
      }
      expectLimited(await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', sameNet()).set('Authorization', 'Bearer not.a.token'));
      // The per-address request limit counts the /64 the same way; an IPv4-mapped address is its IPv4 one.
      const mapped = ip();
      for (let i = 0; i < 30; i += 1) {
        const from = i % 2 ? mapped : `::ffff:${mapped}`;
        expect((await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', from)).status).toBe(200);
      }
      expectLimited(await ctx().http.get(`/v1/campaigns/${A.accessKey}`).set('X-Forwarded-For', `::ffff:${mapped}`));
      const otherNet = `2001:db8:78:${ctx().engine === 'sqlite' ? 1 : 2}::1`;
      expect((await ctx().http.get(`/v1/goods/${B.accessKey}`).set('X-Forwarded-For', otherNet).set('Authorization', 'Bearer not.a.token')).status).toBe(401);
    });

    it('public answers with goods built per address: past RATE_LIMIT_PUBLIC_BUILDS a new one is 429; kept answers and lists without goods still answer', async () => {
      const from = ip();
      // One Host for all (supertest listens on a new port for each request, and the links' base is part of an answer's key).
      const list = (query: Record<string, string>) =>
        ctx().http.get(`/v1/campaigns/${A.accessKey}`).query(query).set('X-Forwarded-For', from).set('Host', 'shop.example.com');
      // Three new answers with goods (each a new query value: a build each), then the fourth is refused.
      for (const f of ['1', '2', '3']) expect((await list({ detail: 'true', from: f })).status).toBe(200);
      const refused = await list({ detail: 'true', from: '4' });
      expectLimited(refused);
      expect(refused.body._e).toMatch(/^Too many public answers with goods built for your address \(3 per 60 s\)/);
      expectLimited(await ctx().http.get(`/v1/campaigns/${A.accessKey}/NoSuchKey123`).set('X-Forwarded-For', from));
      // An answer already kept costs no build; a list without goods is no build either; other addresses are not affected.
      expect((await list({ detail: 'true', from: '2' })).status).toBe(200);
      expect((await list({ from: '5' })).status).toBe(200);
      expect((await ctx().http.get(`/v1/campaigns/${A.accessKey}`).query({ detail: 'true', from: '6' }).set('X-Forwarded-For', ip())).status).toBe(200);
      const metrics = await ctx().http.get('/metrics');
      expect(valueOf(parsePrometheusText(metrics.text), 'livegoods_rate_limit_refusals_total', { limit: 'public-builds' })).toBe(2);
    });

    it('new viewer connections per address: past RATE_LIMIT_LIVE_CONNECTIONS a connection is refused (connect_error)', async () => {
      const created = await ctx()
        .http.post(`/v1/console/${B.accessKey}/campaigns`)
        .set('Authorization', B.auth())
        .set('X-Forwarded-For', ip())
        .send({ title: 'Crowded' });
      expect(created.status).toBe(200);
      const base = await listenOn(ctx().app);
      const from = ip();
      const connect = () =>
        new Promise<string>((resolve) => {
          const socket = io(`${base}/live`, {
            transports: ['websocket'],
            reconnection: false,
            forceNew: true,
            extraHeaders: { 'X-Forwarded-For': from },
            auth: { accessKey: B.accessKey, campaignKey: created.body.campaignKey },
          });
          socket.once('campaign.snapshot', () => {
            resolve('connected');
            socket.close();
          });
          socket.once('connect_error', (err) => {
            resolve(err.message);
            socket.close();
          });
        });
      for (let i = 0; i < 3; i += 1) expect(await connect()).toBe('connected');
      expect(await connect()).toMatch(/too many connections from your address; retry after \d+ s/);

      // Several /live sockets on one Engine.IO connection (CONNECTs sent together) each count too.
      const session = await PollingSession.open(base, { 'X-Forwarded-For': ip() });
      await session.send(Array(5).fill(`40/live,${JSON.stringify({ accessKey: B.accessKey, campaignKey: created.body.campaignKey })}`));
      const answers = (packets: string[]) => packets.filter((p) => p.startsWith('40/live,') || p.startsWith('44/live,'));
      await session.until((packets) => answers(packets).length === 5);
      expect(answers(session.packets).filter((p) => p.startsWith('40/live,'))).toHaveLength(3);
      expect(answers(session.packets).filter((p) => p.startsWith('44/live,'))).toEqual([
        expect.stringMatching(/too many connections from your address; retry after \d+ s/),
        expect.stringMatching(/too many connections from your address; retry after \d+ s/),
      ]);
      await session.close();
    });
  },
  LIMITS,
);

const REDIS = new URL(process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379');
const down = [engineUnavailable('mysql') && `MariaDB/MySQL: ${engineUnavailable('mysql')}`, process.env.LG_REDIS_DOWN && `Redis: ${process.env.LG_REDIS_DOWN}`]
  .filter(Boolean)
  .join('; ');
const required = process.env.REQUIRE_SERVICES === '1';

(down && !required ? describe.skip : describe)(`rate limits across two nodes sharing Redis [mysql]${down ? ` (skipped: ${down})` : ''}`, () => {
  let proxy: TcpProxy;
  let A: Node;
  let B: Node;
  let dataDir = '';
  let database = '';

  beforeAll(async () => {
    if (down) throw new Error(`MariaDB and Redis are required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
    proxy = await TcpProxy.start({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    const setup = await testConfig('mysql', __filename, {
      ...LIMITS,
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      REDIS_PREFIX: `lgtest-rl-${process.pid}-${Date.now().toString(36)}`,
    });
    dataDir = setup.dataDir;
    database = setup.database;
    A = await startNode(AppConfig.fromEnv(setup.env));
    B = await startNode(AppConfig.fromEnv(setup.env));
  });

  afterAll(async () => {
    await B?.close();
    await A?.close();
    await proxy?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (database) await dropDatabase(database);
  });

  it("a customer's limit holds across nodes: 5 requests on each node, the 11th is refused on either", async () => {
    const C = await createNodeCustomer(A, 'Shared');
    for (let i = 0; i < 10; i += 1) {
      const node = i % 2 ? B : A;
      expect((await node.http.get(`/v1/goods/${C.accessKey}`).set('X-Forwarded-For', `198.51.100.${i}`).set('Authorization', C.auth())).status).toBe(200);
    }
    expectLimited(await B.http.get(`/v1/goods/${C.accessKey}`).set('X-Forwarded-For', '198.51.100.77').set('Authorization', C.auth()));
    expectLimited(await A.http.get(`/v1/goods/${C.accessKey}`).set('X-Forwarded-For', '198.51.100.78').set('Authorization', C.auth()));
  });

  it('with Redis unreachable requests still pass (each node counts on its own meanwhile), never 500', async () => {
    const D = await createNodeCustomer(A, 'While Redis is away');
    proxy.cut();
    try {
      for (const node of [A, B, A, B]) {
        const res = await node.http.get(`/v1/goods/${D.accessKey}`).set('X-Forwarded-For', '192.0.2.10').set('Authorization', D.auth());
        expect(res.status).toBe(200);
      }
      // Each node alone still enforces the limit.
      for (let i = 0; i < 8; i += 1) await A.http.get(`/v1/goods/${D.accessKey}`).set('X-Forwarded-For', '192.0.2.11').set('Authorization', D.auth());
      expectLimited(await A.http.get(`/v1/goods/${D.accessKey}`).set('X-Forwarded-For', '192.0.2.12').set('Authorization', D.auth()));
    } finally {
      proxy.restore();
    }
  });
});
