import { rmSync } from 'node:fs';
import { io } from 'socket.io-client';
import { HealthService } from '../src/health/health.service';
import { Logger } from '@nestjs/common';
import { CLOSE_MAX_MS, Lifecycle } from '../src/lifecycle/lifecycle.service';
import { Agent, request as httpRequest } from 'node:http';
import { listenOn } from './support/live-client';
import { openTcp, within } from './support/bare-connections';
import { insertCustomer, ServerProcess } from './support/server-process';
import { createTestApp, dropDatabase, ENGINES, engineUnavailable, testConfig } from './support/test-app';

/**
 * SIGTERM with requests in flight: readiness goes 503, the listener closes, every request already
 * accepted is answered (2xx, never a reset or a 5xx), viewers are told to reconnect, then Redis and the
 * database close and the process exits 0, logging each step. The service runs in a process of its own.
 */

interface Call {
  /** Resolves once the request is connected and fully written. */
  sent: Promise<void>;
  answer: Promise<{ status: number | string; body: string }>;
}

/** One HTTP request on a connection of its own (no keep-alive), for counting outcomes exactly. */
function call(url: string, auth: string, body?: string): Call {
  let sent!: () => void;
  const sentP = new Promise<void>((r) => (sent = r));
  const answer = new Promise<{ status: number | string; body: string }>((resolve) => {
    const req = httpRequest(
      url,
      { method: body ? 'POST' : 'GET', agent: false, headers: { authorization: auth, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', (err) => resolve({ status: `response error: ${err.message}`, body: '' }));
      },
    );
    req.on('error', (err) => {
      sent();
      resolve({ status: `error: ${err.message}`, body: '' });
    });
    let connected = false;
    let finished = false;
    req.on('socket', (socket) => socket.once('connect', () => ((connected = true), finished && sent())));
    req.on('finish', () => ((finished = true), connected && sent()));
    req.end(body);
  });
  return { sent: sentP, answer };
}

for (const engine of ENGINES) {
  const down = engineUnavailable(engine);
  const skip = down && process.env.REQUIRE_SERVICES !== '1';
  (skip ? describe.skip : describe)(`graceful shutdown [${engine}]${skip ? ` (skipped: ${down})` : ''}`, () => {
    let server: ServerProcess | undefined;
    let setup: Awaited<ReturnType<typeof testConfig>>;

    beforeAll(async () => {
      if (down) throw new Error(`${engine} required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
      setup = await testConfig(engine, __filename, { RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'log' });
    });

    afterAll(async () => {
      await server?.kill();
      rmSync(setup.dataDir, { recursive: true, force: true });
      if (engine === 'mysql') await dropDatabase(setup.database);
    });

    it('SIGTERM during a burst: every accepted request is answered 2xx, viewers are told to reconnect, the process exits 0', async () => {
      server = await ServerProcess.start(setup.env);
      const C = await insertCustomer(setup.env, 'Shutdown');
      const goods = `${server.base}/v1/goods/${C.accessKey}`;

      const viewerDisconnect = new Promise<string>((resolve) => {
        const socket = io(`${(server as ServerProcess).base}/live`, {
          transports: ['websocket'],
          auth: { accessKey: C.accessKey, campaignKey: 'none' },
          reconnection: false,
        });
        socket.on('connect_error', () => resolve('refused'));
        socket.on('disconnect', (reason) => resolve(reason));
      });
      await viewerDisconnect.then(() => undefined); // unknown campaign: refused; real viewers below

      const created = await fetch(`${server.base}/v1/console/${C.accessKey}/campaigns`, {
        method: 'POST',
        headers: { authorization: C.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Closing time' }),
      });
      expect(created.status).toBe(200);
      const { campaignKey } = (await created.json()) as { campaignKey: string };
      const viewer = io(`${server.base}/live`, { transports: ['websocket'], auth: { accessKey: C.accessKey, campaignKey }, reconnection: false });
      const snapshot = new Promise<void>((resolve) => viewer.once('campaign.snapshot', () => resolve()));
      const reason = new Promise<string>((resolve) => viewer.once('disconnect', (r) => resolve(r)));
      await snapshot;

      const batch = (b: number) =>
        Array.from({ length: 2000 }, (_, i) => ({ name: `Burst ${b}-${i}`, sku: `SD-${b}-${i}`, url: `https://shop.example.com/sd/${b}/${i}` }));
      const calls: Call[] = [];
      for (let b = 0; b < 4; b += 1) calls.push(call(`${goods}/sync`, C.auth, JSON.stringify(batch(b))));
      for (let i = 0; i < 30; i += 1) calls.push(call(`${goods}?count=5`, C.auth));
      // Every request is on the wire (connected, fully sent) before the signal: each is an accepted request.
      await Promise.all(calls.map((c) => c.sent));
      server.signal('SIGTERM');

      const outcomes = await Promise.all(calls.map((c) => c.answer));
      if (outcomes.some((o) => o.status !== 200)) {
        await server.stopped();
        console.log(
          server.output
            .split('\n')
            .filter((l) => !/RouterExplorer|RoutesResolver|InstanceLoader/.test(l))
            .join('\n')
            .slice(-5000),
          server.exit,
        );
      }
      expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
      for (const o of outcomes.slice(0, 4)) expect((JSON.parse(o.body) as { createCount: number }).createCount).toBe(2000);
      expect(await reason).toBe('transport close');
      viewer.close();
      expect(await server.stopped()).toEqual({ code: 0, signal: null });
      for (const step of [
        'SIGTERM received',
        'told 1 viewer connection(s) to reconnect',
        'all requests finished',
        'closing the live channel, Redis and the database',
        'shutdown complete',
      ]) {
        expect(server.output).toContain(step);
      }
      // The service process logs JSON (stdout is a pipe): no error line of the exception filter.
      expect(server.output).not.toMatch(/Can't add new command/);
      expect(server.output).toMatch(/"context":"Shutdown"/);
      expect(server.output).not.toMatch(/"level":"error"[^\n]*"context":"Errors"/);

      // Everything the answers said was written is there.
      server = await ServerProcess.start(setup.env);
      const list = await fetch(`${goods.replace(/^http:\/\/[^/]+/, server.base)}?count=1`, { headers: { authorization: C.auth } });
      expect(((await list.json()) as { totalCount: number }).totalCount).toBe(8000);
      server.signal('SIGTERM');
      expect(await server.stopped()).toEqual({ code: 0, signal: null });
    });

    it('Ctrl-C on npm start (SIGINT from the terminal and again from npm, at once) drains as one signal does', async () => {
      server = await ServerProcess.start(setup.env);
      const C = await insertCustomer(setup.env, 'Ctrl-C');
      const elements = Array.from({ length: 2000 }, (_, i) => ({ name: `Ctrl ${i}`, sku: `CC-${i}`, url: `https://shop.example.com/cc/${i}` }));
      const sync = call(`${server.base}/v1/goods/${C.accessKey}/sync`, C.auth, JSON.stringify(elements));
      await sync.sent;
      server.signal('SIGINT');
      // npm passes the signal on a moment after the terminal's reached the service (two sent at the same
      // instant would be merged into one by the kernel).
      await new Promise((r) => setTimeout(r, 50));
      server.signal('SIGINT');
      const outcome = await sync.answer;
      expect(outcome.status).toBe(200);
      expect((JSON.parse(outcome.body) as { createCount: number }).createCount).toBe(2000);
      expect(await server.stopped()).toEqual({ code: 0, signal: null });
      expect(server.output).toContain('SIGINT received');
      expect(server.output).toContain('shutdown complete');
      expect(server.output).not.toContain('exiting now');
    });
  });
}

describe('readiness while draining [sqlite]', () => {
  it('is 503 from the moment shutdown starts, while an accepted request still completes', async () => {
    const t = await createTestApp('sqlite', `${__filename}.ready`);
    const C = await t.createCustomer('Draining');
    const base = await listenOn(t.app);
    const health = t.app.get(HealthService);
    expect((await health.readiness()).status).toBe('ok');
    const elements = Array.from({ length: 3000 }, (_, i) => ({ name: `D ${i}`, sku: `D-${i}`, url: `https://shop.example.com/d/${i}` }));
    // On a kept-alive connection: the answer of a request that was running when the drain began says
    // `Connection: close`, so the client sends nothing more on that connection (which would be reset).
    const agent = new Agent({ keepAlive: true });
    const sync = new Promise<[number | undefined, string | undefined]>((resolve, reject) => {
      const req = httpRequest(
        `${base}/v1/goods/${C.accessKey}/sync`,
        { method: 'POST', agent, headers: { authorization: C.auth(), 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve([res.statusCode, res.headers.connection]));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(elements));
    });
    await new Promise((r) => setTimeout(r, 100));
    const closing = t.app.get(Lifecycle).shutdown(t.app, 'TEST');
    expect(await health.readiness()).toEqual({ status: 'error', checks: { node: 'down' } });
    expect(await sync).toEqual([200, 'close']);
    agent.destroy();
    await closing;
    rmSync(t.config.dataDir, { recursive: true, force: true });
  });
});

describe('a refused body while draining [sqlite]', () => {
  it('a request refused while the node drains, its body still coming, is ended in order: the rest is read, not reset, before the node closes', async () => {
    const t = await createTestApp('sqlite', `${__filename}.linger`);
    const C = await t.createCustomer('Lingering');
    const base = await listenOn(t.app);
    // Connected before the signal, its request sent after: it goes on sending once the server has ended its side.
    const conn = await openTcp(base, { allowHalfOpen: true });
    const closing = t.app.get(Lifecycle).shutdown(t.app, 'TEST');
    let closed = false;
    void closing.then(() => (closed = true));
    // No token: 401 before the body is read, with `Connection: close` (the node is draining).
    conn.socket.write(`POST /v1/goods/${C.accessKey} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"name":`);
    await within(
      (async () => {
        while (!conn.ended) await new Promise((r) => setTimeout(r, 20));
      })(),
      10_000,
      'the answer and the end of the server side',
    );
    expect(conn.received).toMatch(/^HTTP\/1\.1 401 [^]*\r\nConnection: close\r\n/);
    // Well past the drain's quiet time: the node waits for the rest of the body instead of closing.
    await new Promise((r) => setTimeout(r, 1000));
    expect(closed).toBe(false);
    conn.socket.write('"late body"}');
    conn.socket.end();
    await within(conn.whenClosed, 5000, 'the connection to close');
    expect(conn.error).toBeUndefined();
    await within(closing, 10_000, 'the shutdown to end');
    rmSync(t.config.dataDir, { recursive: true, force: true });
  });
});

describe('closing after the drain [sqlite]', () => {
  it('a close that never ends (a connection that does not answer) does not keep the node from exiting: it gives up after CLOSE_MAX_MS', async () => {
    const t = await createTestApp('sqlite', `${__filename}.close`);
    await listenOn(t.app);
    const close = t.app.close.bind(t.app);
    const hung = jest.spyOn(t.app, 'close').mockImplementation(() => new Promise<void>(() => undefined));
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      await t.app.get(Lifecycle).shutdown(t.app, 'TEST');
      expect(hung).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls.map(([message]) => String(message))).toContain(
        `the live channel, Redis or the database did not close within ${CLOSE_MAX_MS} ms; exiting anyway`,
      );
    } finally {
      hung.mockRestore();
      warn.mockRestore();
      await close();
      rmSync(t.config.dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
