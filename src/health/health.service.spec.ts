import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import type { Transactions } from '../database/transactions';
import type { Lifecycle } from '../lifecycle/lifecycle.service';
import type { RedisConnection } from '../redis/redis.module';
import { HealthService } from './health.service';

/** A database and a Redis that answer, or fail with a message full of internals. */
function service(
  database: () => Promise<unknown>,
  redis?: () => Promise<unknown>,
  draining = false,
  connection = redisWith(redis),
  redisRequired = true,
): HealthService {
  const db = { manager: { query: database } } as unknown as Transactions;
  const config = { redis: { requiredForReadiness: redisRequired } } as AppConfig;
  return new HealthService(db, connection as unknown as RedisConnection, { isDraining: draining } as Lifecycle, config);
}

/** A RedisConnection answering PINGs with `ping` (none without it), taken as away or not, that records failures. */
function redisWith(ping?: () => Promise<unknown>, isAway = false) {
  return { client: ping ? { ping } : null, isAway, failed: jest.fn() };
}

const INTERNALS = "connect ECONNREFUSED 10.20.30.40:3306 (user 'livegoods'@'app-7', database livegoods_prod)";

describe('HealthService.readiness', () => {
  let services: HealthService[] = [];
  let warn: jest.SpyInstance;
  const make = (...args: Parameters<typeof service>) => {
    const s = service(...args);
    services.push(s);
    return s;
  };

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => {
    warn.mockRestore();
    for (const s of services) s.onModuleDestroy();
    services = [];
  });

  it('answers up for each dependency that answers', async () => {
    expect(await make(async () => [{ 1: 1 }]).readiness()).toEqual({ status: 'ok', checks: { database: 'up' } });
    expect(
      await make(
        async () => [],
        async () => 'PONG',
      ).readiness(),
    ).toEqual({ status: 'ok', checks: { database: 'up', redis: 'up' } });
    expect(warn).not.toHaveBeenCalled();
  });

  it('answers only "down" for a failing dependency; the reason goes to the log', async () => {
    const report = await make(
      async () => {
        throw new Error(INTERNALS);
      },
      async () => {
        throw new Error('connect ECONNREFUSED 10.9.9.9:6379 (redis://:hunter2@cache)');
      },
    ).readiness();
    expect(report).toEqual({ status: 'error', checks: { database: 'down', redis: 'down' } });
    expect(JSON.stringify(report)).not.toMatch(/ECONNREFUSED|10\.|hunter2|livegoods/);
    const logged = warn.mock.calls.map((c) => String(c[0])).join('\n');
    expect(logged).toContain(`database is down: ${INTERNALS}`);
    expect(logged).toContain('redis is down: connect ECONNREFUSED 10.9.9.9:6379');
  });

  it('a Redis whose PING fails is reported to the connection as away; one known to be away is down at once, without a PING', async () => {
    const failing = redisWith(async () => {
      throw new Error('Command timed out');
    });
    expect((await make(async () => [], undefined, false, failing).readiness()).checks.redis).toBe('down');
    expect(failing.failed).toHaveBeenCalledTimes(1);
    const ping = jest.fn(async () => 'PONG');
    const away = redisWith(ping, true);
    expect(await make(async () => [], undefined, false, away).readiness()).toEqual({ status: 'error', checks: { database: 'up', redis: 'down' } });
    expect(ping).not.toHaveBeenCalled();
  });

  it('one dependency down makes the whole report an error', async () => {
    const report = await make(
      async () => [],
      async () => {
        throw new Error('NOAUTH Authentication required');
      },
    ).readiness();
    expect(report).toEqual({ status: 'error', checks: { database: 'up', redis: 'down' } });
  });

  it('READY_REQUIRES_REDIS=false: a Redis that is down is reported, and the node stays ready; the database still counts', async () => {
    const noRedis = async () => {
      throw new Error('connect ECONNREFUSED');
    };
    expect(await make(async () => [], noRedis, false, undefined, false).readiness()).toEqual({ status: 'ok', checks: { database: 'up', redis: 'down' } });
    expect(await make(async () => [], undefined, false, redisWith(undefined, true), false).readiness()).toMatchObject({ status: 'ok' });
    const noDatabase = async () => {
      throw new Error(INTERNALS);
    };
    expect(await make(noDatabase, noRedis, false, undefined, false).readiness()).toEqual({ status: 'error', checks: { database: 'down', redis: 'down' } });
  });
});

describe('HealthService.metrics', () => {
  it('takes no arguments and reports memory and event-loop delay', () => {
    const s = service(async () => []);
    try {
      expect(s.metrics.length).toBe(0);
      expect(s.metrics()).toEqual({
        uptimeSeconds: expect.any(Number),
        rssMb: expect.any(Number),
        heapUsedMb: expect.any(Number),
        eventLoopDelayMs: { p50: expect.any(Number), p99: expect.any(Number), max: expect.any(Number) },
      });
    } finally {
      s.onModuleDestroy();
    }
  });

  it('a node shutting down is not ready, whatever its dependencies say', async () => {
    const s = service(async () => [1], undefined, true);
    expect(await s.readiness()).toEqual({ status: 'error', checks: { node: 'down' } });
    s.onModuleDestroy();
  });
});
