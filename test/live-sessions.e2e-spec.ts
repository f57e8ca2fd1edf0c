import { get } from 'node:http';
import { io } from 'socket.io-client';
import WebSocket from 'ws';
import { BareEngineIo, openEngineIo, PollingSession, within } from './support/bare-connections';
import { POLLING_CLOSE_TIMEOUT_MS } from '../src/live/live-io.adapter';
import { closeAllViewers, eventually, listenOn } from './support/live-client';
import { parsePrometheusText, valueOf } from './support/prometheus-text';
import { describeEngines, TestCustomer } from './support/test-app';

const RATE_LIMIT_IP = 20;
const SESSIONS_PER_IP = 4;
const LIVE_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Socket.IO handshakes (new Engine.IO sessions, long-polling or WebSocket), which Engine.IO answers
 * before Express runs: each counts against the per-IP limit in one counter with the HTTP requests, and
 * an address holds at most LIVE_SESSIONS_PER_IP sessions, joined to /live or not. The requests of an
 * open long-polling session are not counted. Addresses are X-Forwarded-For values (TRUST_PROXY), one
 * per test, or with no header the socket's own (127.0.0.x).
 */
describeEngines(
  'Socket.IO handshakes per address',
  __filename,
  (ctx) => {
    let base = '';
    let C: TestCustomer;
    let key = '';
    let n = 0;
    const ip = () => `198.18.${ctx().engine === 'sqlite' ? 1 : 2}.${(n += 1)}`;
    const bare: BareEngineIo[] = [];
    const polling: PollingSession[] = [];
    const viewers: Array<() => void> = [];

    /** A long-polling handshake (GET /socket.io/?EIO=4&transport=polling) from `from`: its status, body and Retry-After. */
    const pollHandshake = (from: string) =>
      new Promise<{ status: number; body: string; retryAfter?: string; allowOrigin?: string }>((resolve, reject) => {
        const req = get(
          `${base}/socket.io/?EIO=4&transport=polling`,
          { headers: { 'X-Forwarded-For': from, Origin: 'https://player.example' }, agent: false },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers['retry-after'], allowOrigin: res.headers['access-control-allow-origin'] }),
            );
          },
        );
        req.on('error', reject);
      });

    /** A WebSocket handshake (no sid) from `from` (header) or `localAddress`: 'open', or the refusal's status and body. */
    const wsHandshake = (options: { from?: string; localAddress?: string }) =>
      new Promise<{ status: number | 'open'; body: string; ws?: WebSocket }>((resolve, reject) => {
        const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`, {
          headers: options.from ? { 'X-Forwarded-For': options.from } : {},
          localAddress: options.localAddress,
        });
        ws.once('open', () => resolve({ status: 'open', body: '', ws }));
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.once('error', reject);
      });

    /** A /live viewer with socket.io-client from `from`: 'joined' once its snapshot came, or its connect_error. */
    const viewer = (from: string, transport: 'polling' | 'websocket') =>
      new Promise<{ outcome: string; description?: unknown; close: () => void }>((resolve) => {
        const socket = io(`${base}/live`, {
          transports: [transport],
          reconnection: false,
          forceNew: true,
          extraHeaders: { 'X-Forwarded-For': from },
          auth: { accessKey: C.accessKey, campaignKey: key },
        });
        const close = () => socket.close();
        viewers.push(close);
        socket.once('campaign.snapshot', () => resolve({ outcome: 'joined', close }));
        socket.once('connect_error', (err: Error & { description?: unknown }) => {
          const status = err.description as { statusCode?: number } | number | undefined;
          resolve({ outcome: err.message, description: typeof status === 'object' ? status?.statusCode : status, close });
          socket.close();
        });
      });

    const metric = async (name: string, limit: string) => {
      const res = await fetch(`${base}/metrics`);
      return valueOf(parsePrometheusText(await res.text()), name, { limit }) ?? 0;
    };

    const expectRefusal = (res: { status: number | 'open'; body: string; retryAfter?: string }, message: RegExp) => {
      expect(res.status).toBe(429);
      expect(JSON.parse(res.body)).toEqual({ _s: -429, _e: expect.stringMatching(message) });
      if (res.retryAfter !== undefined) expect(Number(res.retryAfter)).toBeGreaterThan(0);
    };

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      C = await ctx().createCustomer('Watched');
      const created = await ctx()
        .http.post(`/v1/console/${C.accessKey}/campaigns`)
        .set('Authorization', C.auth())
        .set('X-Forwarded-For', ip())
        .send({ title: 'Watched', collectionVisible: true });
      expect(created.status).toBe(200);
      key = created.body.campaignKey;
    });

    afterEach(async () => {
      closeAllViewers();
      for (const close of viewers.splice(0)) close();
      for (const c of bare.splice(0)) c.ws.terminate();
      for (const s of polling.splice(0)) await s.close();
    });

    it('every handshake, long-polling or WebSocket, counts against RATE_LIMIT_IP in one counter with HTTP requests; past it 429 -429 with Retry-After', async () => {
      const from = ip();
      const before = await metric('livegoods_rate_limit_refusals_total', 'ip');
      for (let i = 0; i < RATE_LIMIT_IP / 2; i += 1) {
        expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}`).set('X-Forwarded-For', from)).status).toBe(200);
      }
      // Half of the rest by long-polling, half by WebSocket, each session closed again (no session cap here).
      for (let i = 0; i < RATE_LIMIT_IP / 4; i += 1) {
        const session = await PollingSession.open(base, { 'X-Forwarded-For': from });
        await session.close();
        const ws = await wsHandshake({ from });
        expect(ws.status).toBe('open');
        ws.ws?.terminate();
      }
      const rate = /^Too many requests from your address \(20 per 60 s\); retry after \d+ s$/;
      const refusedPoll = await pollHandshake(from);
      expect(refusedPoll.retryAfter).toBeDefined();
      // A page of another origin can read the refusal, as it reads Socket.IO's own answers.
      expect(refusedPoll.allowOrigin).toBe('https://player.example');
      expectRefusal(refusedPoll, rate);
      expectRefusal(await wsHandshake({ from }), rate);
      // The HTTP requests are refused too: one counter.
      expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}`).set('X-Forwarded-For', from)).status).toBe(429);
      // What socket.io-client reports: the transport's error, with the status in `description`.
      expect(await viewer(from, 'polling')).toMatchObject({ outcome: 'xhr poll error', description: 429 });
      expect((await viewer(from, 'websocket')).outcome).toBe('websocket error');
      expect((await metric('livegoods_rate_limit_refusals_total', 'ip')) - before).toBe(5);
      // Another address is not affected.
      expect((await pollHandshake(ip())).status).toBe(200);
    });

    it('the requests Socket.IO answers outside a session count too: its client script, a sid no session has; past the limit 429 -429, and Socket.IO never sees them', async () => {
      const from = ip();
      const raw = (path: string) =>
        new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
          const req = get(`${base}${path}`, { headers: { 'X-Forwarded-For': from }, agent: false }, (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
          });
          req.on('error', reject);
        });
      for (let i = 0; i < RATE_LIMIT_IP / 2; i += 1) {
        const script = await raw('/socket.io/socket.io.min.js');
        expect([script.status, script.headers['x-request-id']]).toEqual([200, expect.any(String)]);
      }
      for (let i = 0; i < RATE_LIMIT_IP / 2 - 1; i += 1) {
        // Socket.IO's own answer to a session it does not know.
        expect(await raw(`/socket.io/?EIO=4&transport=polling&sid=nosuchsession${i}`)).toMatchObject({
          status: 400,
          body: expect.stringMatching(/Session ID unknown/),
        });
      }
      // The last request of the window: a long-polling handshake, counted once (not again by allowRequest).
      expect((await pollHandshake(from)).status).toBe(200);
      const rate = /^Too many requests from your address \(20 per 60 s\); retry after \d+ s$/;
      for (const path of ['/socket.io/socket.io.min.js', '/socket.io/?EIO=4&transport=polling&sid=nosuchsession', '/socket.io/?EIO=4&transport=nothing']) {
        const refused = await raw(path);
        expect({
          status: refused.status,
          retryAfter: Number(refused.headers['retry-after']) > 0,
          id: refused.headers['x-request-id'],
          cache: refused.headers['cache-control'],
        }).toEqual({
          status: 429,
          retryAfter: true,
          id: expect.any(String),
          cache: 'no-store',
        });
        expect(JSON.parse(refused.body)).toEqual({ _s: -429, _e: expect.stringMatching(rate) });
      }
      expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}`).set('X-Forwarded-For', from)).status).toBe(429);
    });

    it('a long-polling viewer keeps working: the requests of its open session (with sid) are not counted', async () => {
      const from = ip();
      const session = await PollingSession.open(base, { 'X-Forwarded-For': from });
      polling.push(session);
      await session.send([`40/live,${JSON.stringify({ accessKey: C.accessKey, campaignKey: key })}`]);
      await session.until((packets) => packets.some((p) => p.startsWith('42/live,["campaign.snapshot"')));
      // More events than RATE_LIMIT_IP, each fetched by a poll of its own (and a POST every few).
      for (let i = 0; i < RATE_LIMIT_IP + 5; i += 1) {
        const line = await ctx()
          .http.post(`/v1/console/${C.accessKey}/campaigns/${key}/chat`)
          .set('Authorization', C.auth())
          .set('X-Forwarded-For', ip())
          .send({ message: `line ${i}` });
        expect(line.status).toBe(200);
        await session.until((packets) => packets.some((p) => p.includes(`"line ${i}"`)));
        // A message the gateway does not handle: a POST of the session, like a viewer's resync.
        if (i % 5 === 0) await session.send([`42/live,${JSON.stringify(['nothing'])}`]);
      }
      // The handshake is all the address spent: one more handshake and RATE_LIMIT_IP - 2 requests pass, the next is refused.
      const second = await PollingSession.open(base, { 'X-Forwarded-For': from });
      polling.push(second);
      for (let i = 0; i < RATE_LIMIT_IP - 2; i += 1) {
        expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}`).set('X-Forwarded-For', from)).status).toBe(200);
      }
      expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}`).set('X-Forwarded-For', from)).status).toBe(429);
      // Refused new sessions do not touch the open one.
      expect((await pollHandshake(from)).status).toBe(429);
      await session.send([`42/live,${JSON.stringify(['resync', { sinceSeq: 0 }])}`]);
      await session.until((packets) => packets.filter((p) => p.includes('"line 0"')).length >= 2);
    });

    it('an address holds at most LIVE_SESSIONS_PER_IP sessions, joined or not: past it 429, accepted again once some close; other addresses are not affected', async () => {
      const from = ip();
      const before = await metric('livegoods_connections_refused_total', 'live-sessions-per-ip');
      // Two joined viewers (one long-polling, one WebSocket), one bare session of each transport.
      const joined = [await viewer(from, 'polling'), await viewer(from, 'websocket')];
      expect(joined.map((v) => v.outcome)).toEqual(['joined', 'joined']);
      const session = await PollingSession.open(base, { 'X-Forwarded-For': from });
      polling.push(session);
      bare.push(openEngineIo(base, { headers: { 'X-Forwarded-For': from } }));
      expect(await within(bare[0].outcome, 10_000, 'the bare session to open')).toBe('open');

      const sessions = /^Too many open viewer-channel sessions from your address \(at most 4\); close one, or retry after 10 s$/;
      const refusedPoll = await pollHandshake(from);
      expect(refusedPoll.retryAfter).toBe('10');
      expectRefusal(refusedPoll, sessions);
      expectRefusal(await wsHandshake({ from }), sessions);
      expect(await viewer(from, 'polling')).toMatchObject({ outcome: 'xhr poll error', description: 429 });
      expect((await metric('livegoods_connections_refused_total', 'live-sessions-per-ip')) - before).toBe(3);
      // Another address is served.
      expect((await viewer(ip(), 'websocket')).outcome).toBe('joined');

      // A session that closes gives its place back (a close packet is handled before its POST is answered).
      await session.close();
      const again = await PollingSession.open(base, { 'X-Forwarded-For': from });
      polling.push(again);
      expectRefusal(await pollHandshake(from), sessions);
      // So does a viewer that leaves (the server notices its WebSocket close shortly after).
      joined[1].close();
      expect(
        await eventually(
          async () => (await viewer(from, 'websocket')).outcome,
          (o) => o === 'joined',
          10_000,
          200,
        ),
      ).toBe('joined');
    });

    it('a long-polling session abandoned after its handshake gives its place back soon after LIVE_CONNECT_TIMEOUT_MS, not 30 s later', async () => {
      const from = ip();
      // Handshakes and nothing more: no poll ever asks for what the server has to say.
      for (let i = 0; i < SESSIONS_PER_IP; i += 1) expect((await pollHandshake(from)).status).toBe(200);
      const started = Date.now();
      expect((await pollHandshake(from)).status).toBe(429);
      // Socket.IO closes each after LIVE_CONNECT_TIMEOUT_MS (it never joined /live); Engine.IO then waits
      // POLLING_CLOSE_TIMEOUT_MS for a poll to carry the close (its default: 30 s), and the place is free.
      const status = await eventually(
        async () => (await pollHandshake(from)).status,
        (s) => s === 200,
        LIVE_CONNECT_TIMEOUT_MS + POLLING_CLOSE_TIMEOUT_MS + 8_000,
        2_000,
      );
      expect({ status, waitedUnder30s: Date.now() - started < 30_000 }).toEqual({ status: 200, waitedUnder30s: true });
    }, 45_000);

    it("without a proxy header the socket's own address is counted: 127.0.0.x addresses each hold their own sessions", async () => {
      const full = '127.0.0.41';
      const opened: WebSocket[] = [];
      try {
        for (let i = 0; i < SESSIONS_PER_IP; i += 1) {
          const res = await wsHandshake({ localAddress: full });
          expect(res.status).toBe('open');
          opened.push(res.ws as WebSocket);
        }
        expect((await wsHandshake({ localAddress: full })).status).toBe(429);
        const other = await wsHandshake({ localAddress: '127.0.0.42' });
        expect(other.status).toBe('open');
        opened.push(other.ws as WebSocket);
      } finally {
        for (const ws of opened) ws.terminate();
      }
    });
  },
  {
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_WINDOW_MS: '60000',
    RATE_LIMIT_IP: String(RATE_LIMIT_IP),
    RATE_LIMIT_LIVE_CONNECTIONS: '100',
    LIVE_SESSIONS_PER_IP: String(SESSIONS_PER_IP),
    LIVE_CONNECT_TIMEOUT_MS: String(LIVE_CONNECT_TIMEOUT_MS),
    TRUST_PROXY: 'true',
  },
);
