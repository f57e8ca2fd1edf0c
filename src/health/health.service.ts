import { monitorEventLoopDelay, IntervalHistogram } from 'node:perf_hooks';
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { RedisConnection } from '../redis/redis.module';

export interface ReadinessReport {
  status: 'ok' | 'error';
  checks: Record<string, string>;
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
  /** Event-loop delay since start or since the last reset, in milliseconds. */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;

/** Readiness checks and process metrics. Redis joins the checks when the live channel (REDIS_URL) is configured. */
@Injectable()
export class HealthService implements OnModuleDestroy {
  private readonly loopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly redis: RedisConnection,
  ) {
    this.loopDelay.enable();
  }

  onModuleDestroy(): void {
    this.loopDelay.disable();
  }

  metrics(reset: boolean): ProcessMetrics {
    const memory = process.memoryUsage();
    const h = this.loopDelay;
    const metrics = {
      uptimeSeconds: Math.round(process.uptime()),
      rssMb: mb(memory.rss),
      heapUsedMb: mb(memory.heapUsed),
      eventLoopDelayMs: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) },
    };
    if (reset) h.reset();
    return metrics;
  }

  async readiness(): Promise<ReadinessReport> {
    const checks: Record<string, string> = {};
    try {
      await withTimeout(this.dataSource.query('SELECT 1'), 'database');
      checks.database = 'up';
    } catch (err) {
      checks.database = `down: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (this.redis.client) {
      try {
        await withTimeout(this.redis.client.ping(), 'redis');
        checks.redis = 'up';
      } catch (err) {
        checks.redis = `down: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    const ok = Object.values(checks).every((v) => v === 'up');
    return { status: ok ? 'ok' : 'error', checks };
  }
}
