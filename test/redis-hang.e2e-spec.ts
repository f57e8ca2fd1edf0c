import { rmSync } from 'node:fs';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { HealthService } from '../src/health/health.service';
import type Redis from 'ioredis';
import type { Namespace } from 'socket.io';
import { ImportJobRunner } from '../src/excel/import-job-runner';
import { GoodsSearchCorpus } from '../src/goods/goods-search-corpus';
import { LiveGateway } from '../src/live/live.gateway';
import { RedisConnection } from '../src/redis/redis.module';
import { eventually } from './support/eventually';
import { minimalXlsx } from './support/sheet-fixtures';
import { sheetUploads } from './support/sheet-uploads';
import { TcpProxy } from './support/tcp-proxy';
import { createTestApp, TestApp } from './support/test-app';

/**
 * A Redis that hangs (packets lost, nobody told: a frozen server or a network partition) rather than one
 * that refuses: the first command that runs out of time takes Redis as away for every caller, so the
 * requests after it count their rate limits on the node and read this node's viewers at once instead of
 * each waiting for a command's timeout; a PING every second asks whether Redis answers again, and a
 * connection lost in the partition is opened anew, so the node goes back to Redis once it has healed,
 * and takes import jobs (BullMQ) again.
 */

const REDIS = new URL(process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379');
const down = process.env.LG_REDIS_DOWN;
const required = process.env.REQUIRE_SERVICES === '1';

(down && !required ? describe.skip : describe)(`a Redis that hangs [sqlite]${down && !required ? ` (skipped: Redis: ${down})` : ''}`, () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let auth: string;
  let accessKey: string;

  beforeAll(async () => {
    if (down) throw new Error(`Redis is required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
    proxy = await TcpProxy.start({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    t = await createTestApp('sqlite', __filename, {
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      REDIS_PREFIX: `lgtest-hang-${process.pid}-${Date.now().toString(36)}`,
      RATE_LIMIT_ENABLED: 'true',
    });
    const c = await t.createCustomer('Hang');
    auth = c.auth();
    accessKey = c.accessKey;
  }, 60_000);

  afterAll(async () => {
    await t?.app.close();
    await proxy?.close();
    if (t) rmSync(t.config.dataDir, { recursive: true, force: true });
  });

  it('after the first command that runs out of time, requests go without Redis until it answers again; then they use it again', async () => {
    const shared = jest.spyOn(ThrottlerStorageRedisService.prototype, 'increment');
    const redis = t.app.get(RedisConnection);
    const health = t.app.get(HealthService);
    const list = () => t.http.get(`/v1/goods/${accessKey}`).set('Authorization', auth);
    const campaigns = () => t.http.get(`/v1/campaigns/${accessKey}`);
    try {
      // The node does not wait for Redis to start: a command sent while its connection is still being
      // opened (a loaded machine) takes Redis as away until the next PING answers. Wait until it is used.
      expect(
        (
          await eventually(
            () => health.readiness(),
            (r) => r.checks.redis === 'up',
            10_000,
            100,
          )
        ).checks.redis,
      ).toBe('up');
      expect((await list()).status).toBe(200);
      expect(shared).toHaveBeenCalled();
      expect(redis.isAway).toBe(false);

      proxy.blackhole();
      // The first request's count runs out of time (REDIS_COMMAND_TIMEOUT_MS), and is counted on the node.
      expect((await list()).status).toBe(200);
      expect(redis.isAway).toBe(true);
      // From then on nothing waits for Redis: no command is sent for the requests' limits or viewer counts.
      shared.mockClear();
      const answers = await Promise.all([...Array.from({ length: 10 }, list), ...Array.from({ length: 5 }, campaigns)]);
      expect(answers.map((r) => r.status)).toEqual(Array(15).fill(200));
      expect(shared).not.toHaveBeenCalled();
      expect(await health.readiness()).toMatchObject({ status: 'error', checks: { redis: 'down' } });

      // Healed: the connection lost in the partition is opened anew, a PING answers, and Redis is used again.
      proxy.restore();
      expect(
        await eventually(
          () => Promise.resolve(redis.isAway),
          (away) => !away,
          30_000,
        ),
      ).toBe(false);
      expect((await list()).status).toBe(200);
      expect(shared).toHaveBeenCalled();
      expect((await health.readiness()).checks.redis).toBe('up');
      // The connections that only listen or publish (Socket.IO's adapter, the search corpus's subscriber)
      // were lost in the partition too, and nothing they send would tell: they are opened anew, and answer.
      const gateway: unknown = t.app.get(LiveGateway);
      const adapter = (gateway as { namespace: Namespace }).namespace.adapter as unknown as { pubClient: Redis; subClient: Redis };
      const search: unknown = t.app.get(GoodsSearchCorpus);
      const corpus = (search as { subscriber: Redis }).subscriber;
      const answersPing = (client: Redis) =>
        Promise.race([client.ping().then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000))]).catch(() => false);
      for (const client of [adapter.pubClient, adapter.subClient, corpus]) {
        expect(await eventually(() => answersPing(client), Boolean, 30_000, 500)).toBe(true);
      }
      expect(proxy.openLinks).toBeGreaterThanOrEqual(4);
    } finally {
      shared.mockRestore();
    }
  }, 60_000);

  it('a partition longer than BullMQ waits for its blocking command: once healed, the node takes import jobs again', async () => {
    const { upload, ended } = sheetUploads(() => t);
    const c = await t.createCustomer('Jobs');
    const file = await minimalXlsx(['sku', 'name', 'url'], 3, (i) => [`J-${i}`, 'Job', `https://shop.example.com/j/${i}`]);
    proxy.blackhole();
    try {
      // Taken (the database keeps the job); Redis cannot be told of it yet.
      const accepted = await upload(c, file, 'jobs.xlsx', '?async=true');
      expect(accepted.status).toBe(202);
      // Longer than BullMQ's watch of its blocking command (5 s + 1 s): it opens that connection anew, into
      // the partition, where its handshake never ends. The queue's and the worker's connections are lost.
      await new Promise((r) => setTimeout(r, 12_000));
      proxy.restore();
      const job = await ended(c, accepted);
      expect(job).toMatchObject({ state: 'succeeded', rowsDone: 3, createCount: 3 });
    } finally {
      proxy.restore();
    }
  }, 90_000);

  it('a queue that hands nothing out: the job is claimed from the database once it could have been for IMPORT_JOB_LEASE_MS', async () => {
    const own = await createTestApp('sqlite', __filename, {
      REDIS_URL: REDIS.href,
      REDIS_PREFIX: `lgtest-hang-stuck-${process.pid}-${Date.now().toString(36)}`,
      IMPORT_JOB_LEASE_MS: '3000',
    });
    try {
      // A worker stuck for good (whatever the cause): it takes no job from the queue.
      const runner: unknown = own.app.get(ImportJobRunner);
      const worker = (runner as { queue: { worker: { pause: (doNotWaitActive: boolean) => Promise<void> } } }).queue.worker;
      await worker.pause(true);
      const { upload, ended } = sheetUploads(() => own);
      const c = await own.createCustomer('Stuck');
      const file = await minimalXlsx(['sku', 'name', 'url'], 3, (i) => [`S-${i}`, 'Stuck', `https://shop.example.com/s/${i}`]);
      const job = await ended(c, await upload(c, file, 'stuck.xlsx', '?async=true'), 30_000);
      expect(job).toMatchObject({ state: 'succeeded', rowsDone: 3, createCount: 3 });
    } finally {
      await own.app.close();
      rmSync(own.config.dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
