import WebSocket from 'ws';
import { openEngineIo, openTcp, within } from './support/bare-connections';
import { closeAllViewers, listenOn, Viewer } from './support/live-client';
import { describeEngines, TestCustomer } from './support/test-app';

/**
 * Connections that do nothing are closed after a short deadline (set to 1 s here): one that never sends
 * a whole request header (HEADERS_TIMEOUT_MS, answered 408), and a Socket.IO connection that never joins
 * /live (LIVE_CONNECT_TIMEOUT_MS), including one that joins the main namespace instead. Viewers that
 * joined stay, and so does a long poll held with nothing to send (SEND_TIMEOUT_MS, also 1 s here, is
 * for answers the client does not take). (Node's own defaults were 60 s and 45 s: these tests wait 15 s at most.)
 */
describeEngines(
  'idle connections',
  __filename,
  (ctx) => {
    let base = '';
    let C: TestCustomer;
    let key = '';
    const WAIT = 15_000;

    beforeAll(async () => {
      base = await listenOn(ctx().app);
      C = await ctx().createCustomer('Idle');
      const created = await ctx()
        .http.post(`/v1/console/${C.accessKey}/campaigns`)
        .set('Authorization', C.auth())
        .send({ title: 'Idle', collectionVisible: true });
      expect(created.status).toBe(200);
      key = created.body.campaignKey;
    });

    afterEach(() => closeAllViewers());

    /** A raw answer read off the socket: status, headers (lower-case names), body as JSON. */
    const parse = (raw: string) => {
      const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as Record<string, unknown> };
    };
    const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

    it('a connection that sends half a request header is answered 408 (error shape, X-Request-Id) and closed after HEADERS_TIMEOUT_MS', async () => {
      const conn = await openTcp(base, { send: 'GET /health HTTP/1.1\r\nHost: x\r\n' });
      await within(conn.whenClosed, WAIT, 'the partial request to be closed');
      expect(conn.received).toMatch(/^HTTP\/1\.1 408 /);
      const answer = parse(conn.received);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.headers['x-request-id']).toMatch(UUID);
      expect(answer.body).toEqual({ _s: -510, _e: expect.stringContaining('did not arrive in time') });
    });

    it('a request line and headers over the size limit are answered 431 -413, a request that is not HTTP 400 -510, each with X-Request-Id, then closed', async () => {
      const big = await openTcp(base, { send: `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n` });
      await within(big.whenClosed, WAIT, 'the oversized request to be closed');
      const tooLarge = parse(big.received);
      expect([tooLarge.status, tooLarge.body._s, tooLarge.headers['x-request-id']]).toEqual([431, -413, expect.stringMatching(UUID)]);
      expect(tooLarge.body._e).toMatch(/over \d+ bytes/);

      const junk = await openTcp(base, { send: 'NOT A REQUEST\r\n\r\n' });
      await within(junk.whenClosed, WAIT, 'the malformed request to be closed');
      const bad = parse(junk.received);
      expect([bad.status, bad.body._s, bad.headers['x-request-id']]).toEqual([400, -510, expect.stringMatching(UUID)]);
      expect(bad.headers.connection).toBe('close');
    });

    it('an HTTP/1.1 request without Host, or any with two, is 400 -510 in the error shape with X-Request-Id; HTTP/1.0 needs none; headers past the first 1,000 are kept', async () => {
      const noHost = await openTcp(base, { send: 'GET /health/ready HTTP/1.1\r\nConnection: close\r\n\r\n' });
      await within(noHost.whenClosed, WAIT, 'the request without Host to be answered');
      const refused = parse(noHost.received);
      expect([refused.status, refused.body, refused.headers['x-request-id']]).toEqual([
        400,
        { _s: -510, _e: 'Bad request: an HTTP/1.1 request must carry a Host header' },
        expect.stringMatching(UUID),
      ]);

      const twice = await openTcp(base, { send: 'GET /health/ready HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n' });
      await within(twice.whenClosed, WAIT, 'the request with two Host headers to be answered');
      expect(parse(twice.received)).toMatchObject({ status: 400, body: { _s: -510, _e: 'Bad request: the request carries more than one Host header' } });

      const old = await openTcp(base, { send: 'GET /health/ready HTTP/1.0\r\n\r\n' });
      await within(old.whenClosed, WAIT, 'the HTTP/1.0 request to be answered');
      expect(old.received).toMatch(/^HTTP\/1\.1 200 /);

      // 1,200 header lines (within the size limit), then the token: it is read, not dropped.
      const many = Array.from({ length: 1200 }, (_, i) => `X-H${i}: 1\r\n`).join('');
      const late = await openTcp(base, {
        send: `GET /v1/goods/${C.accessKey}?count=1 HTTP/1.1\r\nHost: x\r\n${many}Authorization: ${C.auth()}\r\nConnection: close\r\n\r\n`,
      });
      await within(late.whenClosed, WAIT, 'the request with many headers to be answered');
      expect(late.received).toMatch(/^HTTP\/1\.1 200 /);
    });

    it("Socket.IO's own HTTP answers carry X-Request-Id: the client script, the Engine.IO handshake, its 400, the WebSocket upgrade and its refusal", async () => {
      const script = await fetch(`${base}/socket.io/socket.io.min.js`, { headers: { 'x-request-id': 'script-1' } });
      expect([script.status, script.headers.get('x-request-id')]).toEqual([200, 'script-1']);
      const handshake = await fetch(`${base}/socket.io/?EIO=4&transport=polling`, { headers: { 'x-request-id': 'handshake-1' } });
      expect([handshake.status, handshake.headers.get('x-request-id')]).toEqual([200, 'handshake-1']);
      const fresh = await fetch(`${base}/socket.io/?EIO=4&transport=polling`);
      expect(fresh.headers.get('x-request-id')).toMatch(UUID);
      const refused = await fetch(`${base}/socket.io/?EIO=4&transport=nonsense`, { headers: { 'x-request-id': 'refused-1' } });
      expect([refused.status, refused.headers.get('x-request-id')]).toEqual([400, 'refused-1']);
      const ws = new WebSocket(`${base.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`, { headers: { 'x-request-id': 'upgrade-1' } });
      const upgraded = await within(
        new Promise<string | undefined>((resolve, reject) => {
          ws.once('upgrade', (res) => resolve(res.headers['x-request-id'] as string | undefined));
          ws.once('error', reject);
        }),
        WAIT,
        'the WebSocket upgrade',
      );
      ws.close();
      expect(upgraded).toBe('upgrade-1');
      // An upgrade Engine.IO refuses: its 400, with the body its long-polling refusals have.
      const bad = new WebSocket(`${base.replace('http', 'ws')}/socket.io/?EIO=4&transport=nonsense`, { headers: { 'x-request-id': 'upgrade-refused-1' } });
      const refusal = await within(
        new Promise<{ status?: number; id?: string; body: string }>((resolve, reject) => {
          bad.once('unexpected-response', (_req, res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode, id: res.headers['x-request-id'] as string | undefined, body }));
          });
          bad.once('upgrade', () => reject(new Error('the upgrade was taken')));
        }),
        WAIT,
        'the refused WebSocket upgrade',
      );
      bad.on('error', () => undefined);
      bad.terminate();
      expect(refusal).toEqual({ status: 400, id: 'upgrade-refused-1', body: JSON.stringify({ code: 0, message: 'Transport unknown' }) });
      expect(JSON.parse(await refused.text())).toEqual({ code: 0, message: 'Transport unknown' });
    });

    it('a connection that sends nothing is closed after HEADERS_TIMEOUT_MS', async () => {
      const conn = await openTcp(base);
      await within(conn.whenClosed, WAIT, 'the silent connection to be closed');
    });

    it('a request that arrives in time is answered as usual', async () => {
      expect((await ctx().http.get('/health')).status).toBe(200);
    });

    it('a Socket.IO connection that never joins /live is closed after LIVE_CONNECT_TIMEOUT_MS; a viewer that joined stays', async () => {
      const viewer = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
      const bare = openEngineIo(base);
      expect(await within(bare.outcome, WAIT, 'the Engine.IO handshake')).toBe('open');
      await within(bare.whenClosed, WAIT, 'the idle Engine.IO connection to be closed');
      expect(viewer.socket.connected).toBe(true);
      viewer.skipAll();
      viewer.resync('not a seq');
      expect((await viewer.next('campaign.snapshot')).seq).toBeGreaterThanOrEqual(0);
    });

    it('a long-polling viewer whose poll is held longer than REQUEST_TIMEOUT_MS and SEND_TIMEOUT_MS is not cut (the deadlines cover requests and answers the client does not take, not answers held)', async () => {
      const viewer = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key }, 10_000, 'polling');
      viewer.skipAll();
      // Its next poll is held until there is something to send; an idle connection's deadline passes meanwhile.
      const bare = openEngineIo(base);
      await within(bare.whenClosed, WAIT, 'the idle Engine.IO connection to be closed');
      const chat = await ctx().http.post(`/v1/console/${C.accessKey}/campaigns/${key}/chat`).set('Authorization', C.auth()).send({ message: 'held poll' });
      expect(chat.status).toBe(200);
      expect(await viewer.next('chat.message')).toMatchObject({ message: 'held poll' });
      expect(viewer.disconnectReason).toBeNull();
    });

    it('joining the main namespace is refused and does not keep the connection open', async () => {
      const bare = openEngineIo(base);
      expect(await within(bare.outcome, WAIT, 'the Engine.IO handshake')).toBe('open');
      bare.ws.send('40');
      await within(bare.whenClosed, WAIT, 'the Engine.IO connection to be closed');
      expect(bare.frames.filter((f) => f.startsWith('4'))).toEqual(['44{"message":"connect to the /live namespace"}']);
    });
  },
  { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1000', SEND_TIMEOUT_MS: '1000', LIVE_CONNECT_TIMEOUT_MS: '1000' },
);
