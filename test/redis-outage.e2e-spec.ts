import { rmSync } from 'node:fs';
import Redis from 'ioredis';
import { closeAllViewers, eventually, Viewer } from './support/live-client';
import { insertCustomer, ProcessCustomer, ServerProcess } from './support/server-process';
import { TcpProxy } from './support/tcp-proxy';
import { dropDatabase, engineUnavailable, testConfig } from './support/test-app';

/**
 * Two nodes (processes of their own) sharing MariaDB and a Redis reached through a TCP proxy that the
 * test cuts: a Redis outage never ends a process, each node's viewers keep receiving what is done on
 * that node, and once Redis is back every viewer on every node has every event, in seq order, once.
 */

const REDIS = new URL(process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379');
const down = [engineUnavailable('mysql') && `MariaDB/MySQL: ${engineUnavailable('mysql')}`, process.env.LG_REDIS_DOWN && `Redis: ${process.env.LG_REDIS_DOWN}`]
  .filter(Boolean)
  .join('; ');
const required = process.env.REQUIRE_SERVICES === '1';

(down && !required ? describe.skip : describe)(`a Redis outage under two nodes [mysql]${down ? ` (skipped: ${down})` : ''}`, () => {
  let proxy: TcpProxy;
  let A: ServerProcess | undefined;
  let B: ServerProcess | undefined;
  let C: ProcessCustomer;
  let setup: Awaited<ReturnType<typeof testConfig>>;
  const prefix = `lgtest-outage-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    if (down) throw new Error(`MariaDB and Redis are required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
    proxy = await TcpProxy.start({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    setup = await testConfig('mysql', __filename, {
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      REDIS_PREFIX: prefix,
      LOG_LEVEL: 'warn',
    });
    A = await ServerProcess.start(setup.env);
    // B is set to report Redis in its readiness without failing it (A keeps the default).
    B = await ServerProcess.start({ ...setup.env, READY_REQUIRES_REDIS: 'false' });
    C = await insertCustomer(setup.env, 'Outage');
  }, 180_000);

  afterAll(async () => {
    closeAllViewers();
    await A?.kill();
    await B?.kill();
    await proxy?.close();
    rmSync(setup.dataDir, { recursive: true, force: true });
    await dropDatabase(setup.database);
  });

  async function api(node: ServerProcess, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${node.base}${path}`, {
      method,
      headers: { authorization: C.auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  const seqsOf = (v: Viewer) => v.events.filter((e) => e.type !== 'campaign.snapshot').map((e) => Number(e.payload.seq));

  it('nodes stay up, local viewers keep receiving, and after Redis returns every viewer converges gap-free', async () => {
    const nodeA = A as ServerProcess;
    const nodeB = B as ServerProcess;
    const console = `/v1/console/${C.accessKey}/campaigns`;
    const campaign = await api(nodeA, 'POST', console, { title: 'Through the outage' });
    const key = campaign.campaignKey as string;
    const item = await api(nodeA, 'POST', `/v1/goods/${C.accessKey}`, { name: 'Watch', sku: 'RO-1', url: 'https://shop.example.com/ro/1' });
    await api(nodeB, 'POST', `${console}/${key}/goods`, { goodsIds: [item.id] });

    const onA = await Viewer.connect(nodeA.base, { accessKey: C.accessKey, campaignKey: key });
    const onB = await Viewer.connect(nodeB.base, { accessKey: C.accessKey, campaignKey: key });
    const s0 = Number((await onA.next('campaign.snapshot')).seq);
    expect(Number((await onB.next('campaign.snapshot')).seq)).toBe(s0);

    const logFrom = [nodeA.output.length, nodeB.output.length];
    proxy.cut();
    // Changes through both nodes while they cannot reach Redis: every request succeeds.
    const statuses = ['SOLD_OUT', 'ON_SALE', 'ALMOST_SOLD_OUT'];
    for (let i = 0; i < 6; i += 1) {
      if (i % 2 === 0) await api(nodeA, 'POST', `${console}/${key}/chat`, { message: `from A ${i}` });
      else await api(nodeB, 'PUT', `/v1/goods/${C.accessKey}/campaign/${key}/salesStatus/id`, { goodsId: item.id, salesStatus: statuses[i % 3] });
    }
    const last = s0 + 6;
    // A's viewer sees A's own changes at once, even with Redis away.
    expect(
      await eventually(
        async () => seqsOf(onA).filter((s) => s === s0 + 1).length,
        (n) => n === 1,
        3000,
      ),
    ).toBe(1);
    await new Promise((r) => setTimeout(r, 3000));
    expect([nodeA.alive, nodeB.alive]).toEqual([true, true]);
    // Readiness: A (READY_REQUIRES_REDIS=true, the default) is not ready; B reports Redis down and stays ready.
    const ready = async (node: ServerProcess) => {
      const res = await fetch(`${node.base}/health/ready`);
      return { status: res.status, body: await res.json() };
    };
    expect(await ready(nodeA)).toEqual({ status: 503, body: { status: 'error', checks: { database: 'up', redis: 'down' } } });
    expect(await ready(nodeB)).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'up', redis: 'down' } } });

    // An outage is logged once per connection, not once per reconnection attempt (BullMQ's queue and
    // worker passed on every attempt's error: about 1.5 lines a second).
    for (const [i, node] of [nodeA, nodeB].entries()) {
      const during = node.output.slice(logFrom[i]);
      expect(during.match(/(worker|queue): /g) ?? []).toEqual([]);
      expect((during.match(/a subscription command for the other nodes' events failed/g) ?? []).length).toBeLessThanOrEqual(1);
    }
    proxy.restore();
    const complete = (v: Viewer) => async () => seqsOf(v);
    const expected = Array.from({ length: 6 }, (_, i) => s0 + i + 1);
    for (const v of [onA, onB]) expect(await eventually(complete(v), (seqs) => seqs.length >= 6, 15_000, 100)).toEqual(expected);

    // And the live path works again across nodes: a change through B reaches A's viewer.
    await api(nodeB, 'POST', `${console}/${key}/chat`, { message: 'after' });
    for (const v of [onA, onB]) expect(await eventually(complete(v), (seqs) => seqs.length >= 7, 10_000, 100)).toEqual([...expected, last + 1]);

    expect([nodeA.alive, nodeB.alive]).toEqual([true, true]);
    const readyAgain = { status: 200, body: { status: 'ok', checks: { database: 'up', redis: 'up' } } };
    for (const node of [nodeA, nodeB])
      expect(
        await eventually(
          () => ready(node),
          (r) => JSON.stringify(r) === JSON.stringify(readyAgain),
          15_000,
          200,
        ),
      ).toEqual(readyAgain);
    for (const node of [nodeA, nodeB]) expect(node.output).not.toMatch(/MaxRetriesPerRequestError|unhandled promise rejection/i);
  });

  it("a campaign deleted while Redis is away: the other node's viewers still get campaign.status NOT_EXIST and are disconnected", async () => {
    const nodeA = A as ServerProcess;
    const nodeB = B as ServerProcess;
    const campaign = await api(nodeA, 'POST', `/v1/console/${C.accessKey}/campaigns`, { title: 'Deleted in the dark' });
    const key = campaign.campaignKey as string;
    const onB = await Viewer.connect(nodeB.base, { accessKey: C.accessKey, campaignKey: key });
    const s0 = Number((await onB.next('campaign.snapshot')).seq);
    proxy.cut();
    try {
      // Deleted through A, which cannot tell B's viewers through Redis: B finds it gone in the database.
      await api(nodeA, 'DELETE', `/v1/console/${C.accessKey}/campaigns/${key}`);
      const last = await eventually(
        () => Promise.resolve(onB.events.find((e) => e.type === 'campaign.status')),
        (e) => e !== undefined,
        15_000,
        100,
      );
      expect(last?.payload).toEqual({ seq: s0 + 1, campaignStatus: 'NOT_EXIST', startedAt: null, endedAt: null });
      expect(
        await eventually(
          () => Promise.resolve(onB.disconnectReason),
          (r) => r !== null,
          5_000,
          100,
        ),
      ).toBe('io server disconnect');
    } finally {
      proxy.restore();
    }
  });

  it('a node started while Redis is away subscribes to the other nodes once Redis is back (not only its event-log polls)', async () => {
    // Redis itself, not through the proxy: who listens on the Socket.IO adapter's request channel.
    const redis = new Redis(`redis://${REDIS.host}`, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    const listeners = async () => {
      const [, count] = (await redis.pubsub('NUMSUB', `${prefix}:socket.io-request#/live#`)) as [string, number];
      return Number(count);
    };
    let D: ServerProcess | undefined;
    try {
      expect(await eventually(listeners, (n) => n === 2, 15_000, 200)).toBe(2);
      proxy.cut();
      try {
        // Ready without Redis (READY_REQUIRES_REDIS=false). Its connections are refused and retried, and
        // the commands queued meanwhile fail (maxRetriesPerRequest), its first subscriptions among them.
        D = await ServerProcess.start({ ...setup.env, READY_REQUIRES_REDIS: 'false' });
        await new Promise((r) => setTimeout(r, 3000));
      } finally {
        proxy.restore();
      }
      // A, B and D, once each has reconnected.
      expect(await eventually(listeners, (n) => n === 3, 45_000, 250)).toBe(3);
    } finally {
      await D?.kill();
      redis.disconnect();
    }
  }, 150_000);
});
