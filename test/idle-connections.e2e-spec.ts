import { openEngineIo, openTcp, within } from './support/bare-connections';
import { closeAllViewers, listenOn, Viewer } from './support/live-client';
import { describeEngines, TestCustomer } from './support/test-app';

/**
 * Connections that do nothing are closed after a short deadline (set to 1 s here): one that never sends
 * a whole request header (HEADERS_TIMEOUT_MS, answered 408), and a Socket.IO connection that never joins
 * /live (LIVE_CONNECT_TIMEOUT_MS), including one that joins the main namespace instead. Viewers that
 * joined stay. (Node's own defaults were 60 s and 45 s: these tests wait 15 s at most.)
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

    it('a connection that sends half a request header is answered 408 and closed after HEADERS_TIMEOUT_MS', async () => {
      const conn = await openTcp(base, { send: 'GET /health HTTP/1.1\r\nHost: x\r\n' });
      await within(conn.whenClosed, WAIT, 'the partial request to be closed');
      expect(conn.received).toMatch(/^HTTP\/1\.1 408 /);
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

    it('a long-polling viewer whose poll is held longer than REQUEST_TIMEOUT_MS is not cut (the deadline covers requests, not answers)', async () => {
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
  { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1000', LIVE_CONNECT_TIMEOUT_MS: '1000' },
);
