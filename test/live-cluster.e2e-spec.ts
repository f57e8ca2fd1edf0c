import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { AppConfig } from '../src/config/app-config';
import { createNodeCustomer, describeTwoNodes, expectOk, Node, NodeCustomer, startNode } from './support/cluster-app';
import { closeAllViewers, eventually, Payload, Received, Viewer } from './support/live-client';
import { TcpProxy } from './support/tcp-proxy';
import { dropDatabase, recreateDatabase } from './support/test-app';

/**
 * Two app instances sharing one MariaDB database and one Redis: with REDIS_URL set, every node delivers
 * every event to its own viewers, and userCount counts the viewers of all nodes. SQLite cannot be
 * shared between processes safely, so this runs on MariaDB only. A missing MariaDB or Redis skips the
 * suite (and says so), or fails it with REQUIRE_SERVICES=1.
 */

const stream = (events: Received[]) => events.map((e) => [e.type, e.payload]);

describeTwoNodes('live channel across two nodes sharing Redis', __filename, 'Cluster', (cluster) => {
  let A: Node;
  let B: Node;
  let C: NodeCustomer;
  beforeAll(() => ({ A, B, C } = cluster));

  const cpath = (rest = '') => `/v1/console/${C.accessKey}/campaigns${rest}`;
  const ops = (node: Node) => ({
    create: (body: Record<string, unknown>) =>
      node.http
        .post(cpath())
        .set('Authorization', C.auth())
        .send({ title: 'Cluster live', ...body }),
    register: (n: string) =>
      node.http
        .post(`/v1/goods/${C.accessKey}`)
        .set('Authorization', C.auth())
        .send({ name: `Item ${n}`, sku: `CL-${n}`, url: `https://shop.example.com/cl/${n}` }),
    addGoods: (key: string, goodsIds: number[]) =>
      node.http
        .post(cpath(`/${key}/goods`))
        .set('Authorization', C.auth())
        .send({ goodsIds }),
    salesStatus: (key: string, goodsId: number, salesStatus: string) =>
      node.http
        .put(`/v1/goods/${C.accessKey}/campaign/${key}/salesStatus/id`)
        .set('Authorization', C.auth())
        .type('form')
        .send({ goodsId: String(goodsId), salesStatus }),
    chat: (key: string, message: string, pinned = false) =>
      node.http
        .post(cpath(`/${key}/chat`))
        .set('Authorization', C.auth())
        .send({ message, pinned }),
    showing: (key: string, goodsId: number) =>
      node.http
        .put(cpath(`/${key}/goods/${goodsId}/showing`))
        .set('Authorization', C.auth())
        .send({ showingNow: true }),
    status: (key: string, campaignStatus: string) =>
      node.http
        .put(cpath(`/${key}/status`))
        .set('Authorization', C.auth())
        .send({ campaignStatus }),
    remove: (key: string) => node.http.delete(cpath(`/${key}`)).set('Authorization', C.auth()),
    console: (key: string) => node.http.get(cpath(`/${key}`)).set('Authorization', C.auth()),
    public: (key: string) => node.http.get(`/v1/campaigns/${C.accessKey}/${key}`),
  });

  let n = 0;
  /** A campaign (created through A) with `count` goods. */
  async function campaign(count: number): Promise<{ key: string; goods: number[] }> {
    const created = await ops(A).create({ collectionVisible: true });
    expectOk(created);
    const goods: number[] = [];
    for (let i = 0; i < count; i += 1) {
      n += 1;
      const res = await ops(i % 2 ? B : A).register(`${n}`);
      expectOk(res);
      goods.push(res.body.id);
    }
    if (count) expectOk(await ops(B).addGoods(created.body.campaignKey, goods));
    return { key: created.body.campaignKey, goods };
  }

  const viewerOn = (node: Node, key: string) => Viewer.connect(node.base, { accessKey: C.accessKey, campaignKey: key });

  it('both nodes report Redis ready', async () => {
    for (const node of [A, B]) {
      const res = await node.http.get('/health/ready');
      expectOk(res);
      expect(JSON.stringify(res.body)).toMatch(/"redis":"up"/);
    }
  });

  it('a viewer on B receives changes made through A (and vice versa) with the same seq stream as a viewer on A', async () => {
    const { key, goods } = await campaign(2);
    const onA = await viewerOn(A, key);
    const onB = await viewerOn(B, key);
    const s0 = (await onA.next('campaign.snapshot')).seq;
    const snapB = await onB.next('campaign.snapshot');
    expect(snapB.seq).toBe(s0);

    const changes: Array<[string, () => Promise<Response>]> = [
      ['goods.salesStatus', () => ops(A).salesStatus(key, goods[0], 'SOLD_OUT')],
      ['chat.message', () => ops(B).chat(key, 'from B')],
      ['goods.list', () => ops(A).showing(key, goods[1])],
      ['chat.notice', () => ops(B).chat(key, 'pinned on B', true)],
      ['campaign.status', () => ops(A).status(key, 'ONAIR')],
      ['goods.salesStatus', () => ops(B).salesStatus(key, goods[1], 'ALMOST_SOLD_OUT')],
    ];
    for (const [, act] of changes) expectOk(await act());
    const gotA = await onA.take(changes.length);
    const gotB = await onB.take(changes.length);
    expect(gotA.map((e) => [e.type, e.payload.seq])).toEqual(changes.map(([type], i) => [type, s0 + i + 1]));
    expect(stream(gotB)).toEqual(stream(gotA));
    expect(gotB[0].payload).toMatchObject({ goodsId: String(goods[0]), salesStatus: 'SOLD_OUT', campaignKey: key });
    await onB.settle(300);
    expect(onA.unread).toEqual([]);
    expect(onB.unread).toEqual([]);

    // A late viewer on either node starts from the same seq.
    const late = await viewerOn(B, key);
    expect((await late.next('campaign.snapshot')).seq).toBe(s0 + changes.length);
  });

  it('an event made through A drops the snapshot B shares: a viewer joining B after it arrived gets a snapshot with it', async () => {
    const { key, goods } = await campaign(1);
    const first = await viewerOn(B, key);
    const s0 = (await first.next('campaign.snapshot')).seq;
    expectOk(await ops(A).salesStatus(key, goods[0], 'SOLD_OUT'));
    expect((await first.next('goods.salesStatus')).seq).toBe(s0 + 1);
    // Well within B's SNAPSHOT_REUSE_MS of the first viewer's snapshot.
    const second = await viewerOn(B, key);
    const snap = await second.next('campaign.snapshot');
    expect(snap.seq).toBe(s0 + 1);
    expect(snap.goods[0].salesStatus).toBe('SOLD_OUT');
  });

  it('concurrent changes through both nodes: one gap-free seq sequence, the same events on every node', async () => {
    const { key, goods } = await campaign(4);
    const onA = await viewerOn(A, key);
    const onB = await viewerOn(B, key);
    const s0 = (await onA.next('campaign.snapshot')).seq;
    await onB.next('campaign.snapshot');
    const statuses = ['SOLD_OUT', 'ALMOST_SOLD_OUT', 'ON_SALE'];
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ops(i % 2 ? B : A).salesStatus(key, goods[i % 4], statuses[i % 3])));
    for (const r of results) expectOk(r);
    const gotA = await onA.take(20);
    const gotB = await onB.take(20);
    const seqs = (events: Received[]) => events.map((e) => e.payload.seq as number).sort((x, y) => x - y);
    expect(seqs(gotA)).toEqual(Array.from({ length: 20 }, (_, i) => s0 + i + 1));
    expect(seqs(gotB)).toEqual(seqs(gotA));
    const bySeq = (events: Received[]) => new Map(events.map((e) => [e.payload.seq, e.payload]));
    expect(bySeq(gotB)).toEqual(bySeq(gotA));
  });

  it('a goods.update from a sync through A reaches a viewer on B, one event with every changed summary', async () => {
    const { key, goods } = await campaign(2);
    const onB = await viewerOn(B, key);
    const s0 = (await onB.next('campaign.snapshot')).seq;
    const res = await A.http
      .post(`/v1/goods/${C.accessKey}/sync`)
      .set('Authorization', C.auth())
      .send([
        { id: goods[1], name: 'Synced on A 1', discountedPrice: 1200 },
        { id: goods[0], name: 'Synced on A 0' },
      ]);
    expectOk(res);
    const event = await onB.next('goods.update');
    expect(event.seq).toBe(s0 + 1);
    expect(event.goods.map((g: Payload) => [g.goodsId, g.name])).toEqual([
      [String(goods[0]), 'Synced on A 0'],
      [String(goods[1]), 'Synced on A 1'],
    ]);
    expect(event.goods[1].discountedPrice).toBe(1200);
    await onB.settle(300);
    expect(onB.unread).toEqual([]);
  });

  it('a viewer that reconnects to B resyncs the events made through A while it was away', async () => {
    const { key, goods } = await campaign(1);
    const v = await viewerOn(B, key);
    const s0 = (await v.next('campaign.snapshot')).seq;
    v.close();
    expectOk(await ops(A).salesStatus(key, goods[0], 'SOLD_OUT'));
    expectOk(await ops(A).chat(key, 'one'));
    expectOk(await ops(A).chat(key, 'two'));
    const back = await viewerOn(B, key);
    expect((await back.next('campaign.snapshot')).seq).toBe(s0 + 3);
    back.resync(s0);
    const replay = await back.take(3);
    expect(replay.map((e) => [e.type, e.payload.seq])).toEqual([
      ['goods.salesStatus', s0 + 1],
      ['chat.message', s0 + 2],
      ['chat.message', s0 + 3],
    ]);
  });

  it('userCount counts the viewers on both nodes, on either node', async () => {
    const { key } = await campaign(0);
    const count = (node: Node) => async () => (await ops(node).public(key)).body.userCount as number;
    expect(await count(A)()).toBe(0);
    const viewers = [await viewerOn(A, key), await viewerOn(A, key), await viewerOn(B, key), await viewerOn(B, key), await viewerOn(B, key)];
    expect(await eventually(count(A), (c) => c === 5, 1500)).toBe(5);
    expect(await eventually(count(B), (c) => c === 5, 1500)).toBe(5);
    expect((await ops(A).console(key)).body.userCount).toBe(5);
    viewers[4].close();
    viewers[0].close();
    expect(await eventually(count(A), (c) => c === 3, 1500)).toBe(3);
    expect(await eventually(count(B), (c) => c === 3, 1500)).toBe(3);
    for (const v of viewers) v.close();
    expect(await eventually(count(B), (c) => c === 0, 1500)).toBe(0);
  });

  it('a node of another deployment (another REDIS_PREFIX and database) on the same Redis hears none of these events and counts none of these viewers', async () => {
    // Its own database, where a campaign gets the very same id (so the same room name): only the prefix
    // keeps the two deployments apart on the shared Redis.
    const otherDb = `${cluster.database}_other`.slice(0, 64);
    await recreateDatabase(otherDb);
    const other = await startNode(AppConfig.fromEnv({ ...cluster.env, DB_NAME: otherDb, REDIS_PREFIX: `${cluster.redisPrefix}-other` }));
    try {
      const { key, goods } = await campaign(1);
      const id = Number((await A.app.get(DataSource).query('SELECT id FROM campaigns WHERE campaignKey = ?', [key]))[0].id);
      const D = await createNodeCustomer(other, 'Other deployment');
      await other.app.get(DataSource).query(`ALTER TABLE campaigns AUTO_INCREMENT = ${id}`);
      const created = await other.http.post(`/v1/console/${D.accessKey}/campaigns`).set('Authorization', D.auth()).send({ title: 'Elsewhere' });
      expectOk(created);
      expect(Number(created.body.campaignId)).toBe(id);
      const item = await other.http
        .post(`/v1/goods/${D.accessKey}`)
        .set('Authorization', D.auth())
        .send({ name: 'E', sku: 'E-1', url: 'https://shop.example.com/e/1' });
      expectOk(item);
      const otherKey = created.body.campaignKey as string;
      expectOk(
        await other.http
          .post(`/v1/console/${D.accessKey}/campaigns/${otherKey}/goods`)
          .set('Authorization', D.auth())
          .send({ goodsIds: [item.body.id] }),
      );

      const onA = await viewerOn(A, key);
      const onB = await viewerOn(B, key);
      const elsewhere = await Viewer.connect(other.base, { accessKey: D.accessKey, campaignKey: otherKey });
      const s0 = (await onA.next('campaign.snapshot')).seq;
      await onB.next('campaign.snapshot');
      const e0 = (await elsewhere.next('campaign.snapshot')).seq;
      expectOk(await ops(A).salesStatus(key, goods[0], 'SOLD_OUT'));
      expectOk(await ops(B).chat(key, 'hello'));
      for (const v of [onA, onB]) expect((await v.take(2)).map((e) => e.payload.seq)).toEqual([s0 + 1, s0 + 2]);
      await elsewhere.settle(500);
      expect(elsewhere.unread).toEqual([]);
      const count = (node: Node) => async () => (await ops(node).public(key)).body.userCount as number;
      expect(await eventually(count(A), (c) => c === 2, 1500)).toBe(2);
      const otherCount = async () => (await other.http.get(`/v1/campaigns/${D.accessKey}/${otherKey}`)).body.userCount as number;
      expect(await eventually(otherCount, (c) => c === 1, 1500)).toBe(1);
      // Its own events reach its own viewers only.
      expectOk(
        await other.http
          .put(`/v1/goods/${D.accessKey}/campaign/${otherKey}/salesStatus/id`)
          .set('Authorization', D.auth())
          .send({ goodsId: item.body.id, salesStatus: 'SOLD_OUT' }),
      );
      expect(await elsewhere.next('goods.salesStatus')).toMatchObject({ seq: e0 + 1, salesStatus: 'SOLD_OUT' });
      await onA.settle(300);
      expect(onA.unread).toEqual([]);
    } finally {
      closeAllViewers();
      await other.close();
      await dropDatabase(otherDb);
    }
  });

  it('deleting the campaign through A tells the viewers on B NOT_EXIST and disconnects them', async () => {
    const { key } = await campaign(1);
    const onB = await viewerOn(B, key);
    const s0 = (await onB.next('campaign.snapshot')).seq;
    const res = await ops(A).remove(key);
    expectOk(res);
    const last: Payload = await onB.next('campaign.status');
    expect(last).toMatchObject({ seq: s0 + 1, campaignStatus: 'NOT_EXIST' });
    expect(await onB.disconnected(3000)).toBe('io server disconnect');
  });

  it('a campaign deleted while a node holds events behind a gap, and another node is cut from Redis: every viewer still gets what the node held and one final NOT_EXIST', async () => {
    // D: a third node whose Redis link the test cuts (A and B keep theirs).
    const redis = new URL(cluster.env.REDIS_URL);
    const proxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
    const D = await startNode(AppConfig.fromEnv({ ...cluster.env, REDIS_URL: `redis://127.0.0.1:${proxy.port}` }));
    try {
      const { key } = await campaign(1);
      const onD = await viewerOn(D, key);
      const onB = await viewerOn(B, key);
      const s0 = (await onD.next('campaign.snapshot')).seq;
      expect((await onB.next('campaign.snapshot')).seq).toBe(s0);
      proxy.cut();
      await new Promise((r) => setTimeout(r, 2500));
      // s0 + 1 through D: B never hears of it over Redis. s0 + 2 through B: B holds it behind that gap,
      // and the deletion through B (s0 + 3) comes before B reads the log (gone with the campaign then).
      expectOk(await ops(D).chat(key, 'through D, cut off'));
      expectOk(await ops(B).chat(key, 'through B'));
      expectOk(await ops(B).remove(key));
      const seqs = (v: Viewer) => v.events.map((e) => [e.type === 'campaign.status' ? `status ${e.payload.campaignStatus}` : e.type, e.payload.seq]);
      expect(await onB.disconnected(5000)).toBe('io server disconnect');
      // B: what it held, past the gap it can no longer fill, then the deletion under its own seq.
      const onBSeen = seqs(onB);
      expect(onBSeen[0]).toEqual(['campaign.snapshot', s0]);
      expect(onBSeen).toContainEqual(['chat.message', s0 + 2]);
      expect(onBSeen[onBSeen.length - 1]).toEqual(['status NOT_EXIST', s0 + 3]);
      // D finds the campaign gone in the database (its sweep): its own NOT_EXIST, next after what its
      // viewers had (it cannot know the seq B gave the deletion).
      expect(await onD.disconnected(10_000)).toBe('io server disconnect');
      expect(seqs(onD)).toEqual([
        ['campaign.snapshot', s0],
        ['chat.message', s0 + 1],
        ['status NOT_EXIST', s0 + 2],
      ]);
    } finally {
      closeAllViewers();
      proxy.restore();
      await D.close();
      await proxy.close();
    }
  });
});
