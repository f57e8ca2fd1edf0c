import { monitorEventLoopDelay, IntervalHistogram } from 'node:perf_hooks';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { Lifecycle } from '../lifecycle/lifecycle.service';
import { redactCredentials } from '../common/util/redact';
import { RedisConnection } from '../redis/redis.module';

export interface ReadinessReport {
  status: 'ok' | 'error';
  /** Each dependency: 'up' or 'down'. Why one is down goes to the log only (this endpoint is public). */
  checks: Record<string, 'up' | 'down'>;
}

const TIMEOUT_MS = 2000;

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export interface ProcessMetrics {
  uptimeSeconds: number;
  rssMb: number;
  heapUsedMb: number;
  /** Event-loop delay since the process started, in milliseconds. */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;

/**
 * Readiness checks and process metrics. Redis joins the checks when the live channel (REDIS_URL) is
 * configured; with READY_REQUIRES_REDIS=false a Redis that is down is reported without failing readiness.
 */
@Injectable()
export class HealthService implements OnModuleDestroy {
  private readonly logger = new Logger(HealthService.name);
  private readonly loopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });

  constructor(
    private readonly db: Transactions,
    private readonly redis: RedisConnection,
    private readonly lifecycle: Lifecycle,
    private readonly config: AppConfig,
  ) {
    this.loopDelay.enable();
  }

  onModuleDestroy(): void {
    this.loopDelay.disable();
  }

  /** Read-only: nothing here changes what the next caller sees (the endpoint needs no token). */
  metrics(): ProcessMetrics {
    const memory = process.memoryUsage();
    const h = this.loopDelay;
    return {
      uptimeSeconds: Math.round(process.uptime()),
      rssMb: mb(memory.rss),
      heapUsedMb: mb(memory.heapUsed),
      eventLoopDelayMs: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) },
    };
  }

  async readiness(): Promise<ReadinessReport> {
    // A node shutting down is not ready, whatever its dependencies say: load balancers stop sending to it.
    if (this.lifecycle.isDraining) return { status: 'error', checks: { node: 'down' } };
    const checks: ReadinessReport['checks'] = {};
    checks.database = await this.check('database', () => this.db.manager.query('SELECT 1'));
    const redis = this.redis.client;
    // Known to be away (a command failed and no PING has answered since): down at once.
    if (redis)
      checks.redis = this.redis.isAway
        ? 'down'
        : await this.check(
            'redis',
            () => redis.ping(),
            (err) => this.redis.failed(err),
          );
    // READY_REQUIRES_REDIS=false: Redis is reported, but the node serves without it, so it stays ready.
    const required = Object.entries(checks).filter(([name]) => name !== 'redis' || this.config.redis.requiredForReadiness);
    const ok = required.every(([, state]) => state === 'up');
    return { status: ok ? 'ok' : 'error', checks };
  }

  /** 'up' or 'down'; the reason for 'down' (server names, addresses, driver messages) is logged, never answered. */
  private async check(name: string, probe: () => Promise<unknown>, onDown?: (err: unknown) => void): Promise<'up' | 'down'> {
    try {
      await withTimeout(probe(), name);
      return 'up';
    } catch (err) {
      onDown?.(err);
      this.logger.warn(redactCredentials(`readiness: ${name} is down: ${err instanceof Error ? err.message : String(err)}`));
      return 'down';
    }
  }
}
