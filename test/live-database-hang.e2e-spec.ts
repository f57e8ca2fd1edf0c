import { io } from 'socket.io-client';
import { listenOn } from './support/live-client';
import { TcpProxy } from './support/tcp-proxy';
import { createTestApp, engineUnavailable, mysqlServer, TestApp, TestCustomer } from './support/test-app';

/**
 * A viewer joining while the database takes packets and answers none (a black-holed link, its statements
 * waiting out DB_QUERY_TIMEOUT_MS): it is refused as retryable (docs/live-protocol.md) within half of
 * LIVE_CONNECT_TIMEOUT_MS, rather than closed without a word when the connection's own timeout ends, and
 * it joins once the database answers again. The MariaDB link goes through a TCP proxy the test cuts.
 */

interface Refusal {
  message: string;
  data?: { retryable?: boolean; retryAfterMs?: number };
}

/** Connects once (no reconnection) and tells what happened: joined, refused (connect_error), or nothing within the limit. */
function attempt(
  base: string,
  auth: Record<string, unknown>,
  limitMs: number,
): Promise<{ outcome: 'joined' | 'refused' | 'nothing'; refusal?: Refusal; ms: number }> {
  const started = Date.now();
  const socket = io(`${base}/live`, { auth, transports: ['websocket'], reconnection: false, forceNew: true });
  return new Promise((resolve) => {
    const done = (outcome: 'joined' | 'refused' | 'nothing', refusal?: Refusal) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.io.removeAllListeners();
      socket.close();
      resolve({ outcome, refusal, ms: Date.now() - started });
    };
    const timer = setTimeout(() => done('nothing'), limitMs);
    socket.once('connect', () => done('joined'));
    socket.once('connect_error', (err: Error & { data?: Refusal['data'] }) => done('refused', { message: err.message, data: err.data }));
    // A connection closed with no refusal (what its own timeout does) gives neither: 'nothing'.
  });
}

const mysqlDown = engineUnavailable('mysql');
(mysqlDown && process.env.REQUIRE_SERVICES !== '1' ? describe.skip : describe)(
  `a viewer joining while the database hangs [mysql]${mysqlDown ? ` (skipped: ${mysqlDown})` : ''}`,
  () => {
    let proxy: TcpProxy;
    let t: TestApp;
    let C: TestCustomer;
    let base = '';
    let campaignKey = '';

    beforeAll(async () => {
      if (mysqlDown) throw new Error(`MariaDB required (REQUIRE_SERVICES=1) but unavailable: ${mysqlDown}`);
      proxy = await TcpProxy.start({ host: mysqlServer.host, port: mysqlServer.port });
      // Statements may wait far longer than a connection may stay unjoined (4 s).
      t = await createTestApp('mysql', __filename, {
        DB_HOST: '127.0.0.1',
        DB_PORT: String(proxy.port),
        DB_QUERY_TIMEOUT_MS: '30000',
        DB_CONNECT_TIMEOUT_MS: '30000',
        DB_TRANSACTION_TIMEOUT_MS: '60000',
        LIVE_CONNECT_TIMEOUT_MS: '4000',
      });
      C = await t.createCustomer('Hanging');
      base = await listenOn(t.app);
      const created = await t.http.post(`/v1/console/${C.accessKey}/campaigns`).set('Authorization', C.auth()).send({ title: 'Live' });
      campaignKey = created.body.campaignKey as string;
    });

    afterEach(() => proxy.restore());

    afterAll(async () => {
      proxy?.restore();
      await t?.close();
      await proxy?.close();
    });

    it('is refused as retryable within half of LIVE_CONNECT_TIMEOUT_MS, and joins once the database answers', async () => {
      const auth = { accessKey: C.accessKey, campaignKey };
      expect((await attempt(base, auth, 5000)).outcome).toBe('joined');
      proxy.blackhole();
      const during = await attempt(base, auth, 8000);
      expect(during.outcome).toBe('refused');
      expect(during.refusal).toEqual({ message: 'the service is busy; connect again shortly', data: { retryable: true, retryAfterMs: 2000 } });
      expect(during.ms).toBeLessThan(3900); // before the connection's own 4 s limit
      proxy.restore();
      // The black-holed connections finish by their own timeouts; a new join works meanwhile.
      let after = await attempt(base, auth, 8000);
      for (let i = 0; i < 20 && after.outcome !== 'joined'; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        after = await attempt(base, auth, 8000);
      }
      expect(after.outcome).toBe('joined');
    }, 90_000);
  },
);
