import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { connect, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { BareTcp, openTcp, within } from './support/bare-connections';
import { eventually, listenOn } from './support/live-client';
import { parsePrometheusText, valueOf } from './support/prometheus-text';
import { describeEngines, TestCustomer } from './support/test-app';
import { UNREAD_BODY_LINGER_MS } from '../src/lifecycle/connection-guard';

/** SEND_TIMEOUT_MS here: an answer none of whose bytes the client takes for this long is cut. */
const SEND_TIMEOUT = 5000;

/**
 * Clients that are slow on purpose. A request answered before its body has arrived (no token, an unknown route, a Content-Length over the
 * route's limit, a Socket.IO poll of an unknown session) gets its answer at once. What the client goes on
 * sending is read and thrown away for UNREAD_BODY_LINGER_MS at most: a body sent a byte at a time no
 * longer holds the connection until REQUEST_TIMEOUT_MS (10 minutes), while a body that ends within it
 * leaves the connection open for the next request, and a real HTTP client still reads its answer.
 * A client that stops reading its answer has its connection closed after SEND_TIMEOUT_MS (what the answer
 * holds is let go), while one that reads slowly gets all of it; idle keep-alive connections still close.
 */
describeEngines(
  'slow clients',
  __filename,
  (ctx) => {
    let base = '';
    let C: TestCustomer;

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      C = await ctx().createCustomer('Trickle');
      // A catalog whose CSV export (about 30 MB) is far more than the kernel's buffers on both ends hold.
      for (let call = 0; call < 4; call += 1) {
        const elements = Array.from({ length: 250 }, (_, i) => ({
          name: `Goods ${call}-${i}`,
          sku: `SLOW-${call}-${i}`,
          url: `https://shop.example.com/goods/SLOW-${call}-${i}`,
          description: `${i}${'가나다라마바사아자차'.repeat(1000)}`.slice(0, 10_000),
          originalPrice: 1000,
        }));
        const res = await ctx().http.post(`/v1/goods/${C.accessKey}/sync`).set('Authorization', C.auth()).send(elements);
        expect(res.status).toBe(200);
        expect((res.body as { results: Array<{ status: string }> }).results.filter((r) => r.status !== 'CREATE')).toEqual([]);
      }
    });

    const cut = async () => {
      const res = await fetch(`${base}/metrics`);
      return valueOf(parsePrometheusText(await res.text()), 'livegoods_connections_cut_total', { reason: 'unread-body' }) ?? 0;
    };

    /** Sends a request's head, then one byte of its body every 100 ms for as long as the connection lasts. */
    const trickle = async (head: string, allowHalfOpen = false) => {
      const conn = await openTcp(base, { send: head, allowHalfOpen });
      const timer = setInterval(() => {
        if (!conn.closed) conn.socket.write('a');
      }, 100);
      void conn.whenClosed.then(() => clearInterval(timer));
      return { conn, started: Date.now() };
    };
    /**
     * A gzip body with its Content-Length on an authorised POST: the first `first` bytes at once, then the
     * rest a byte every 100 ms. `sent()` says how much has gone; `stop()` ends the trickle and the connection.
     */
    const trickleGzip = async (body: Buffer, first: number) => {
      const conn = await openTcp(base);
      conn.socket.write(
        Buffer.concat([
          Buffer.from(
            `POST /v1/goods/${C.accessKey} HTTP/1.1\r\nHost: x\r\nAuthorization: ${C.auth()}\r\nContent-Type: application/json\r\n` +
              `Content-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`,
          ),
          body.subarray(0, first),
        ]),
      );
      let sent = first;
      const timer = setInterval(() => {
        if (!conn.closed && sent < body.length) conn.socket.write(body.subarray(sent, (sent += 1)));
      }, 100);
      return {
        conn,
        sent: () => sent,
        stop: () => {
          clearInterval(timer);
          conn.socket.destroy();
        },
      };
    };
    const post = (path: string, length: number, headers = '') =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${headers}\r\n`;
    /** Resolves once the head of an answer has arrived on the connection. */
    /** Waits (up to `timeoutMs`) until `check` holds, and expects it to. */
    const until = async (check: () => boolean, timeoutMs: number) =>
      expect(await eventually(() => Promise.resolve(check()), Boolean, timeoutMs, 20)).toBe(true);
    /** Waits for the head of an answer on the connection. */
    const answered = (conn: BareTcp) => until(() => conn.received.includes('\r\n\r\n'), 10_000);
    const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1]);

    it('refusals sent before the body are answered at once; a body still trickling in is cut UNREAD_BODY_LINGER_MS later, not at REQUEST_TIMEOUT_MS', async () => {
      const before = await cut();
      const trickles = await Promise.all([
        // No token: 401 from the guard, before the body is read.
        trickle(post(`/v1/goods/${C.accessKey}`, 100_000)),
        // A path no route matches: 404.
        trickle(post('/v1/nothing/here', 100_000)),
        // A token, and a Content-Length of 10 GB on a 1 MB route: 413 at once.
        trickle(post(`/v1/goods/${C.accessKey}`, 10 * 1024 ** 3, `Authorization: ${C.auth()}\r\n`)),
        // A Socket.IO long-polling POST for a session that does not exist: Engine.IO's own 400.
        trickle(post('/socket.io/?EIO=4&transport=polling&sid=no-such-session', 100_000).replace('application/json', 'text/plain')),
      ]);
      // Every answer arrives while the body is still coming (its connection still open).
      const openAtAnswer = await Promise.all(trickles.map(({ conn }) => answered(conn).then(() => !conn.closed)));
      expect(trickles.map(({ conn }) => statusOf(conn.received))).toEqual([401, 404, 413, 400]);
      expect(openAtAnswer).toEqual([true, true, true, true]);
      // Then each connection is closed once the wait is over, long before REQUEST_TIMEOUT_MS.
      for (const { conn, started } of trickles) {
        await within(conn.whenClosed, UNREAD_BODY_LINGER_MS + 5000, 'the trickling connection to be closed');
        expect(Date.now() - started).toBeGreaterThanOrEqual(UNREAD_BODY_LINGER_MS - 200);
      }
      expect((await cut()) - before).toBe(4);
    });

    it('a body sent chunked or compressed is refused with 413 as soon as it is over the limit (a compressed one by its size or by what it decompresses to), not once it ends; then cut like the others', async () => {
      const before = await cut();
      const chunk = (data: Buffer | string) => `${Buffer.byteLength(data).toString(16)}\r\n${data.toString()}\r\n`;
      const head = (extra: string) =>
        `POST /v1/goods/${C.accessKey} HTTP/1.1\r\nHost: x\r\nAuthorization: ${C.auth()}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n${extra}\r\n`;
      // 1.1 MB of JSON text in chunks (BODY_LIMIT is 1 MB), then a chunk of one byte every 100 ms.
      const plain = await openTcp(base, { send: head('') + chunk(`{"name":"${'a'.repeat(1_150_000)}`) });
      // The same over gzip: bytes that do not compress (their gzip is larger than the limit).
      const noise = gzipSync(randomBytes(1_150_000), { level: 1 });
      const gzipped = await openTcp(base);
      gzipped.socket.write(
        Buffer.concat([Buffer.from(head('Content-Encoding: gzip\r\n')), Buffer.from(`${noise.length.toString(16)}\r\n`), noise, Buffer.from('\r\n')]),
      );
      // A gzip bomb: 64 KB of it decompress to 64 MB of spaces (valid JSON whitespace), far over the limit.
      // Sent with its Content-Length: the first 32 KB at once, then the rest a byte every 100 ms.
      const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, ' '), { level: 9 });
      const bombing = await trickleGzip(bomb, 32 * 1024);
      const bombed = bombing.conn;
      const started = Date.now();
      const timers = [plain, gzipped].map((conn) =>
        setInterval(() => {
          if (!conn.closed) conn.socket.write(chunk('a'));
        }, 100),
      );
      try {
        for (const conn of [plain, gzipped, bombed]) {
          await answered(conn);
          expect(statusOf(conn.received)).toBe(413);
          expect(conn.received).toContain('"_s":-413');
        }
        // The bomb's answer came while most of it was still to be sent.
        expect(bombing.sent()).toBeLessThan(bomb.length);
        for (const conn of [plain, gzipped, bombed]) await within(conn.whenClosed, UNREAD_BODY_LINGER_MS + 5000, 'the connection to be closed');
        expect(Date.now() - started).toBeGreaterThanOrEqual(UNREAD_BODY_LINGER_MS - 200);
        expect((await cut()) - before).toBe(3);
      } finally {
        for (const timer of timers) clearInterval(timer);
        for (const conn of [plain, gzipped]) conn.socket.destroy();
        bombing.stop();
      }
    });

    it('a compressed body that does not decompress is refused with 400 as soon as it fails, not once it ends', async () => {
      // A gzip header and then bytes that are no deflate data, a byte every 100 ms after the first 1 KB.
      const garbage = Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Buffer.alloc(100_000, 0xff)]);
      const { conn, sent, stop } = await trickleGzip(garbage, 1024);
      try {
        await answered(conn);
        expect(statusOf(conn.received)).toBe(400);
        expect(conn.received).toContain('could not be decoded');
        expect(sent()).toBeLessThan(garbage.length);
      } finally {
        stop();
      }
    });

    it('a refused body that ends within the wait leaves the connection open: the next request on it is answered', async () => {
      const before = await cut();
      const conn = await openTcp(base, { send: post(`/v1/goods/${C.accessKey}`, 20) + '{"name":' });
      await answered(conn);
      expect(statusOf(conn.received)).toBe(401);
      const answeredAt = Date.now();
      // The rest of the body a second later, then another request on the same connection.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      conn.received = '';
      conn.socket.write('"late body"}');
      conn.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      await answered(conn);
      expect(statusOf(conn.received)).toBe(200);
      // Past the end of the wait that began with the 401 (and within the keep-alive timeout of the 200).
      await new Promise((resolve) => setTimeout(resolve, answeredAt + UNREAD_BODY_LINGER_MS + 500 - Date.now()));
      expect(conn.closed).toBe(false);
      expect(await cut()).toBe(before);
      conn.socket.destroy();
    });

    it('a refusal whose answer closes the connection (Connection: close) ends it in order while the body keeps coming: no reset, closed once the body has come', async () => {
      const before = await cut();
      const request = post(`/v1/goods/${C.accessKey}`, 20, 'Connection: close\r\n') + '{"name":';
      // The server's side of the first connection.
      const server: Server = ctx().app.getHttpServer();
      let served: Socket | undefined;
      const onConnection = (socket: Socket) => (served ??= socket);
      server.on('connection', onConnection);
      // Clients that go on sending once the server has ended its side, as a client still sending its body does.
      const ends = await openTcp(base, { send: request, allowHalfOpen: true }).finally(() => server.off('connection', onConnection));
      const trickling = await trickle(post(`/v1/goods/${C.accessKey}`, 100_000, 'Connection: close\r\n'), true);
      for (const conn of [ends, trickling.conn]) {
        await answered(conn);
        expect(statusOf(conn.received)).toBe(401);
        expect(conn.received).toMatch(/\r\nConnection: close\r\n/i);
        // The server's side ends right after the answer (FIN); its side for reading stays open.
        await until(() => conn.ended, 5000);
      }
      // The rest of the first body a second later is read, not answered with a reset; the server closes its
      // socket once it has come, and the client, done sending, closes its own without an error.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(served?.destroyed).toBe(false);
      ends.socket.write('"late body"}');
      await until(() => served?.destroyed === true, 5000);
      ends.socket.end();
      await within(ends.whenClosed, 5000, 'the client to close');
      expect(ends.error).toBeUndefined();
      // The body that never ends is read until the end of the wait, then cut.
      expect(trickling.conn.error).toBeUndefined();
      await within(trickling.conn.whenClosed, UNREAD_BODY_LINGER_MS + 5000, 'the trickling connection to be closed');
      expect(Date.now() - trickling.started).toBeGreaterThanOrEqual(UNREAD_BODY_LINGER_MS - 200);
      expect((await cut()) - before).toBe(1);
    });

    it('refused bodies that end in time, one after another on a kept-alive connection, leave no listeners behind', async () => {
      // The server's side of the test's connection.
      const server: Server = ctx().app.getHttpServer();
      let served: Socket | undefined;
      const onConnection = (socket: Socket) => (served ??= socket);
      server.on('connection', onConnection);
      const conn = await openTcp(base);
      try {
        await until(() => served !== undefined, 3000);
        const listeners = served!.listenerCount('close');
        for (let i = 0; i < 15; i += 1) {
          conn.received = '';
          conn.socket.write(post(`/v1/goods/${C.accessKey}`, 20) + '{"name":');
          await answered(conn);
          expect(statusOf(conn.received)).toBe(401);
          conn.socket.write('"late body"}');
        }
        conn.received = '';
        conn.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        await answered(conn);
        expect(statusOf(conn.received)).toBe(200);
        expect(served!.listenerCount('close')).toBe(listeners);
      } finally {
        server.off('connection', onConnection);
        conn.socket.destroy();
      }
    });

    /** Asks for the CSV export on a raw connection; `read` decides when the client reads (paused at the start). */
    const exportOn = async () => {
      const { hostname, port } = new URL(base);
      const socket: Socket = connect({ host: hostname, port: Number(port) });
      const state = { socket, bytes: 0, closed: false, whenClosed: new Promise<void>((r) => socket.once('close', () => r())) };
      socket.on('data', (d: Buffer) => (state.bytes += d.length));
      socket.on('error', () => undefined);
      socket.once('close', () => (state.closed = true));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(`GET /v1/goods/${C.accessKey}/excel/export?format=csv HTTP/1.1\r\nHost: x\r\nAuthorization: ${C.auth()}\r\n\r\n`);
      return state;
    };
    const sendTimeouts = async () => {
      const res = await fetch(`${base}/metrics`);
      return valueOf(parsePrometheusText(await res.text()), 'livegoods_connections_cut_total', { reason: 'send-timeout' }) ?? 0;
    };

    it('a client that stops reading its answer has its connection closed after SEND_TIMEOUT_MS; one that reads slowly gets the whole answer', async () => {
      const before = await sendTimeouts();
      const stalled = await exportOn();
      const slow = await exportOn();
      // The stalled client reads the first bytes, then nothing more.
      await until(() => stalled.bytes > 0, 10_000);
      stalled.socket.pause();
      // The slow one takes what has come once a second (well within SEND_TIMEOUT_MS each time).
      slow.socket.pause();
      const reader = setInterval(() => {
        slow.socket.resume();
        setTimeout(() => slow.socket.pause(), 50);
      }, 1000);
      try {
        // The server cuts the stalled one (a paused client notices once it reads again).
        expect((await eventually(sendTimeouts, (n) => n - before >= 1, 30_000, 200)) - before).toBe(1);
        stalled.socket.resume();
        await within(stalled.whenClosed, 10_000, 'the stalled client to see its connection closed');
        // The slow client is not cut: it reads the answer (about 30 MB) to its end. (It may be closed
        // since, by the keep-alive timeout after the answer; the send timeouts counted say it was not cut.)
        await until(() => slow.closed || slow.bytes > 25_000_000, 60_000);
        expect(slow.bytes).toBeGreaterThan(25_000_000);
        expect(stalled.bytes).toBeLessThan(slow.bytes);
      } finally {
        clearInterval(reader);
        slow.socket.destroy();
      }
      expect((await sendTimeouts()) - before).toBe(1);
    });

    it('an idle keep-alive connection is still closed after its keep-alive timeout', async () => {
      const conn = await openTcp(base, { send: 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n' });
      await answered(conn);
      expect(statusOf(conn.received)).toBe(200);
      await within(conn.whenClosed, 10_000, 'the idle connection to be closed');
    });

    it('fetch() streaming a slow body without a token gets its 401 answer while the body is still being sent', async () => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          sent += 1;
          if (sent > 100) controller.close();
          else controller.enqueue(new TextEncoder().encode(' '));
        },
      });
      const res = await fetch(`${base}/v1/goods/${C.accessKey}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
        duplex: 'half',
      });
      // The body takes 20 s; the answer came before its end.
      expect(sent).toBeLessThan(100);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ _s: -102 });
    });
  },
  // Long enough that only the wait for an unread body can close these connections within the tests.
  { REQUEST_TIMEOUT_MS: '120000', SEND_TIMEOUT_MS: String(SEND_TIMEOUT) },
);
