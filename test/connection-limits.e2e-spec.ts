import { BareEngineIo, BareTcp, getStatus, openEngineIo, openTcp, within } from './support/bare-connections';
import { closeAllViewers, eventually, listenOn, Viewer } from './support/live-client';
import { parsePrometheusText, valueOf } from './support/prometheus-text';
import { describeEngines, TestCustomer } from './support/test-app';

const MAX_CONNECTIONS = 30;
const PER_IP = 10;

/**
 * Caps on open connections (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_IP): a client address that opens more
 * than its share, with bare Engine.IO WebSockets that never join /live or raw TCP connections that never
 * finish a request, has the extra ones closed at once, while other clients' requests and viewers carry
 * on; past the node's total, new connections are closed and the open ones keep working. The flooding
 * connections come from other loopback addresses (127.0.0.2 …) than the test's own requests (127.0.0.1).
 */
describeEngines(
  'connection caps',
  __filename,
  (ctx) => {
    let base = '';
    let C: TestCustomer;
    let key = '';
    const open: Array<BareEngineIo | BareTcp> = [];

    const closeFlood = async () => {
      for (const c of open.splice(0)) {
        if ('ws' in c) c.ws.terminate();
        else c.socket.destroy();
      }
      // The server has seen them go once every cap has room again.
      expect(
        await eventually(
          () => getStatus(base, '/health', false),
          (s) => s === 200,
          10_000,
        ),
      ).toBe(200);
    };
    const metric = async (limit: string) => {
      const res = await fetch(`${base}/metrics`);
      return valueOf(parsePrometheusText(await res.text()), 'livegoods_connections_refused_total', { limit }) ?? 0;
    };

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      C = await ctx().createCustomer('Capped');
      const created = await ctx()
        .http.post(`/v1/console/${C.accessKey}/campaigns`)
        .set('Authorization', C.auth())
        .send({ title: 'Capped', collectionVisible: true });
      expect(created.status).toBe(200);
      key = created.body.campaignKey;
    });

    afterEach(async () => {
      closeAllViewers();
      await closeFlood();
    });

    it('bare Engine.IO connections past MAX_CONNECTIONS_PER_IP from one address are closed at once; other clients are served', async () => {
      for (let i = 0; i < PER_IP + 4; i += 1) open.push(openEngineIo(base, { localAddress: '127.0.0.2' }));
      const outcomes = await within(Promise.all(open.map((c) => (c as BareEngineIo).outcome)), 10_000, 'every connection to open or close');
      expect(outcomes.filter((o) => o === 'open')).toHaveLength(PER_IP);
      expect(outcomes.filter((o) => o === 'closed')).toHaveLength(4);
      // Another address: a request and a viewer are served as usual.
      expect(await getStatus(base, '/health', false)).toBe(200);
      expect((await ctx().http.get(`/v1/campaigns/${C.accessKey}/${key}`)).status).toBe(200);
      const viewer = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
      expect(viewer.snapshot.seq).toBeGreaterThanOrEqual(0);
      expect(await metric('per-ip')).toBe(4);
      // The address's accepted connections are still open.
      expect(open.filter((c) => c.closed)).toHaveLength(4);
    });

    it('raw TCP connections with a partial request past the cap are closed at once; when they go, the address may connect again', async () => {
      const partial = 'GET /health HTTP/1.1\r\nHost: x\r\n';
      const conns = await Promise.all(Array.from({ length: PER_IP + 2 }, () => openTcp(base, { localAddress: '127.0.0.3', send: partial })));
      open.push(...conns);
      expect(
        await eventually(
          async () => conns.filter((c) => c.closed).length,
          (n) => n >= 2,
          10_000,
        ),
      ).toBe(2);
      // Closed without a byte read: no answer at all, not even a 408.
      expect(conns.filter((c) => c.closed).map((c) => c.received)).toEqual(['', '']);
      expect(await getStatus(base, '/health', false)).toBe(200);
      // Freed places are taken again: close the open ones, and the address is served.
      for (const c of conns) c.socket.destroy();
      const again = await eventually(
        async () => {
          const c = await openTcp(base, { localAddress: '127.0.0.3', send: 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' });
          open.push(c);
          await within(c.whenClosed, 10_000, 'the answer');
          return c.received;
        },
        (text) => text.startsWith('HTTP/1.1 200'),
        10_000,
      );
      expect(again).toMatch(/^HTTP\/1\.1 200/);
    });

    it('past MAX_CONNECTIONS new connections are closed at once while open ones keep working; then it serves again', async () => {
      const viewer = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
      const before = await metric('total');
      // Four addresses, each within its own cap, together past the node's.
      for (const address of ['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14'])
        for (let i = 0; i < PER_IP; i += 1) open.push(openEngineIo(base, { localAddress: address }));
      const outcomes = await within(Promise.all(open.map((c) => (c as BareEngineIo).outcome)), 10_000, 'every connection to open or close');
      const refused = outcomes.filter((o) => o === 'closed').length;
      expect(outcomes.filter((o) => o === 'open').length).toBeLessThanOrEqual(MAX_CONNECTIONS - 1);
      expect(refused).toBeGreaterThanOrEqual(4 * PER_IP - (MAX_CONNECTIONS - 1));
      // A new connection from anywhere is refused now...
      expect(await getStatus(base, '/health', false)).not.toBe(200);
      // ...while the viewer's connection still works: it asks for a resync and gets its answer.
      viewer.skipAll();
      viewer.resync('not a seq');
      expect((await viewer.next('campaign.snapshot', 10_000)).seq).toBeGreaterThanOrEqual(0);
      await closeFlood();
      // Every one closed for the cap is counted (and the tries of closeFlood while the cap was still full).
      expect((await metric('total')) - before).toBeGreaterThanOrEqual(refused + 1);
    });
  },
  {
    MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    MAX_CONNECTIONS_PER_IP: String(PER_IP),
    // Long enough that the connections the tests hold open are not closed for idling meanwhile.
    HEADERS_TIMEOUT_MS: '60000',
    LIVE_CONNECT_TIMEOUT_MS: '60000',
  },
);
