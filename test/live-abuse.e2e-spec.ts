import WebSocket from 'ws';
import { LIVE_MESSAGE_BURST } from '../src/live/live-sessions';
import { MAX_LIVE_SOCKETS_PER_CONNECTION, RESYNC_ABUSE, RESYNC_BURST, TOO_MANY_SOCKETS_MESSAGE } from '../src/live/live.gateway';
import { PollingSession, within } from './support/bare-connections';
import { closeAllViewers, eventually, listenOn, Viewer } from './support/live-client';
import { RawViewer } from './support/raw-viewer';
import { describeEngines, TestCustomer } from './support/test-app';

/**
 * Viewers that misbehave on the /live channel (no token needed to connect): a flood of `resync`, a
 * socket that never reads, a claim to be the operator, and many /live sockets on one connection. The server answers a bounded amount, drops
 * abusive or slow sockets, and never queues more for a viewer than its send-buffer cap.
 */
describeEngines('live channel abuse', __filename, (ctx) => {
  let base = '';
  let C: TestCustomer;
  let key = '';
  let campaignId = 0;
  const LOGGED = 499;

  beforeAll(async () => {
    base = await listenOn(ctx().app);
    C = await ctx().createCustomer('Abused');
    const created = await ctx()
      .http.post(`/v1/console/${C.accessKey}/campaigns`)
      .set('Authorization', C.auth())
      .send({ title: 'Busy', collectionVisible: true });
    expect(created.status).toBe(200);
    key = created.body.campaignKey;
    campaignId = Number(created.body.campaignId);
    // A campaign with 499 logged events (chat lines), as after a long broadcast.
    const ds = ctx().dataSource;
    const now = new Date();
    const stamp = now.toISOString().replace('T', ' ').replace('Z', '');
    const rows = Array.from({ length: LOGGED }, (_, i) => {
      const payload = JSON.stringify({ seq: i + 1, id: String(i + 1), message: `line ${i + 1} ${'x'.repeat(60)}`, adminName: 'op', createdAt: now.getTime() });
      return [campaignId, i + 1, 'chat.message', payload, Buffer.byteLength(payload), stamp];
    });
    for (let i = 0; i < rows.length; i += 100) {
      const chunk = rows.slice(i, i + 100);
      await ds.query(
        `INSERT INTO campaign_events (campaignId, seq, type, payload, payloadBytes, createdAt) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`,
        chunk.flat(),
      );
    }
    await ds.query('UPDATE campaigns SET lastSeq = ? WHERE id = ?', [LOGGED, campaignId]);
  });

  afterEach(() => closeAllViewers());

  const userCount = async () => (await ctx().http.get(`/v1/campaigns/${C.accessKey}/${key}`)).body.userCount as number;

  it('a flood of resync {sinceSeq: 0} is answered at most RESYNC_BURST times, then the socket is dropped', async () => {
    const raw = await RawViewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
    for (let i = 0; i < 500; i += 1) raw.emit('resync', { sinceSeq: 0 });
    const closed = await eventually(
      async () => raw.closed,
      (c) => c,
      10_000,
    );
    raw.close();
    expect(closed).toBe(true);
    // The snapshot, plus at most RESYNC_BURST replays of 499 events (not 500 × 499 = 249,500 events).
    expect(raw.events.length).toBeGreaterThanOrEqual(1);
    expect(raw.events.length).toBeLessThanOrEqual(1 + RESYNC_BURST * LOGGED);
  });

  it('a socket that never reads and floods resync is dropped; nothing is kept queued for it', async () => {
    const raw = await RawViewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
    expect(await eventually(userCount, (n) => n === 1, 3000)).toBe(1);
    raw.pause();
    for (let i = 0; i < 2000; i += 1) raw.emit('resync', { sinceSeq: 0 });
    expect(await eventually(userCount, (n) => n === 0, 10_000)).toBe(0);
    raw.close();
  });

  it(`one connection holds at most ${MAX_LIVE_SOCKETS_PER_CONNECTION} /live sockets: the next CONNECTs are refused (connect_error) and userCount is not inflated`, async () => {
    // Long polling: the 15 CONNECTs arrive together, before the first one is admitted (the attack's case).
    const session = await PollingSession.open(base);
    const connect = `40/live,${JSON.stringify({ accessKey: C.accessKey, campaignKey: key })}`;
    session.packets.length = 0;
    await session.send(Array(MAX_LIVE_SOCKETS_PER_CONNECTION + 5).fill(connect));
    const answers = () => session.packets.filter((p) => p.startsWith('40/live,') || p.startsWith('44/live,'));
    await session.until(() => answers().length === MAX_LIVE_SOCKETS_PER_CONNECTION + 5);
    expect(answers().filter((p) => p.startsWith('40/live,'))).toHaveLength(MAX_LIVE_SOCKETS_PER_CONNECTION);
    expect(answers().filter((p) => p.startsWith('44/live,'))).toEqual(Array(5).fill(`44/live,${JSON.stringify({ message: TOO_MANY_SOCKETS_MESSAGE })}`));
    expect(await eventually(userCount, (n) => n === MAX_LIVE_SOCKETS_PER_CONNECTION, 3000)).toBe(MAX_LIVE_SOCKETS_PER_CONNECTION);
    // A socket that leaves frees its place: one more CONNECT is admitted, and the count stays at the cap.
    await session.send(['41/live,']);
    expect(await eventually(userCount, (n) => n === MAX_LIVE_SOCKETS_PER_CONNECTION - 1, 3000)).toBe(MAX_LIVE_SOCKETS_PER_CONNECTION - 1);
    await session.send([connect]);
    await session.until((packets) => packets.filter((p) => p.startsWith('40/live,')).length === MAX_LIVE_SOCKETS_PER_CONNECTION + 1);
    expect(await eventually(userCount, (n) => n === MAX_LIVE_SOCKETS_PER_CONNECTION, 3000)).toBe(MAX_LIVE_SOCKETS_PER_CONNECTION);
    // Another connection has places of its own.
    const viewer = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
    expect(viewer.snapshot.seq).toBe(LOGGED);
    expect(await eventually(userCount, (n) => n === MAX_LIVE_SOCKETS_PER_CONNECTION + 1, 3000)).toBe(MAX_LIVE_SOCKETS_PER_CONNECTION + 1);
    await session.close();
    viewer.close();
    expect(await eventually(userCount, (n) => n === 0, 5000)).toBe(0);
  });

  it(`a connection that floods CONNECTs to unknown namespaces is closed after ${LIVE_MESSAGE_BURST} messages, without a token or a join`, async () => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`);
    const answers: string[] = [];
    let closedAt = 0;
    const closed = new Promise<void>((resolve) => ws.on('close', () => resolve()));
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      if (text.startsWith('0')) {
        // As the attack: as fast as the socket takes them, and on after the server has had enough.
        for (let i = 0; i < 5000; i += 1) ws.send(`40/ns${i},`);
        closedAt = Date.now();
      } else if (text.startsWith('44/ns')) answers.push(text);
    });
    await within(closed, 5000, 'the flooding connection to be closed');
    // Closed at once: well before LIVE_CONNECT_TIMEOUT_MS (10 s), which ends any connection that never joins /live.
    expect(Date.now() - closedAt).toBeLessThan(3000);
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.length).toBeLessThanOrEqual(LIVE_MESSAGE_BURST);
  });

  it('a viewer that floods events of 60 KB is closed after a few; another viewer is not', async () => {
    // A campaign of its own: the chat line below would be one more logged event of the shared one.
    const other = await ctx().http.post(`/v1/console/${C.accessKey}/campaigns`).set('Authorization', C.auth()).send({ title: 'Flooded' });
    const otherKey = other.body.campaignKey as string;
    const polite = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: otherKey });
    const raw = await RawViewer.connect(base, { accessKey: C.accessKey, campaignKey: otherKey });
    const big = 'x'.repeat(60_000);
    for (let i = 0; i < 200; i += 1) raw.emit('nosuch', big);
    expect(
      await eventually(
        async () => raw.closed,
        (c) => c,
        5000,
      ),
    ).toBe(true);
    const chat = await ctx().http.post(`/v1/console/${C.accessKey}/campaigns/${otherKey}/chat`).set('Authorization', C.auth()).send({ message: 'still here' });
    expect(chat.status).toBe(200);
    const line = await polite.waitFor((e) => e.type === 'chat.message');
    expect(line.payload).toMatchObject({ message: 'still here' });
    polite.close();
  });

  it('a well-behaved viewer can resync a few times in a row and keeps receiving events', async () => {
    const v = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
    await v.next('campaign.snapshot');
    for (let i = 0; i < 3; i += 1) {
      v.resync(LOGGED - 2);
      expect((await v.take(2)).map((e) => e.payload.seq)).toEqual([LOGGED - 1, LOGGED]);
    }
    const res = await ctx().http.post(`/v1/console/${C.accessKey}/campaigns/${key}/chat`).set('Authorization', C.auth()).send({ message: 'still here' });
    expect(res.status).toBe(200);
    expect(await v.next('chat.message')).toMatchObject({ message: 'still here' });
    expect(RESYNC_ABUSE).toBeGreaterThan(RESYNC_BURST);
  });

  it('resync requests with odd bodies (none, text, a list, null, nested, ahead) get a snapshot each, one after another', async () => {
    // Each is let through (and the socket marked busy) before Nest's pipeline: one that stopped there would
    // leave the socket busy, and every later resync ignored.
    const raw = await RawViewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
    const snapshots = async () => raw.events.filter((e) => e.startsWith('42/live,["campaign.snapshot"')).length;
    const bodies = [
      '["resync"]',
      '["resync","text"]',
      '["resync",[1,2]]',
      '["resync",null]',
      '["resync",{"sinceSeq":{"a":[1]}}]',
      `["resync",{"sinceSeq":${LOGGED + 5}}]`,
    ];
    for (const [i, body] of bodies.entries()) {
      raw.send(`42/live,${body}`);
      expect(await eventually(snapshots, (n) => n === i + 2)).toBe(i + 2);
    }
    expect(raw.closed).toBe(false);
    raw.close();
  });

  it('a resync whose missed events are too big to replay (over 256 KB) gets a snapshot instead', async () => {
    const v = await Viewer.connect(base, { accessKey: C.accessKey, campaignKey: key });
    const snap = await v.next('campaign.snapshot');
    const big = 'y'.repeat(1900);
    for (let i = 0; i < 150; i += 1) {
      const res = await ctx()
        .http.post(`/v1/console/${C.accessKey}/campaigns/${key}/chat`)
        .set('Authorization', C.auth())
        .send({ message: `${i} ${big}` });
      expect(res.status).toBe(200);
    }
    await v.waitFor((e) => e.payload.seq === snap.seq + 150, 10_000);
    v.resync(snap.seq);
    const answer = await v.next('campaign.snapshot');
    expect(answer.seq).toBe(snap.seq + 150);
  });
});
