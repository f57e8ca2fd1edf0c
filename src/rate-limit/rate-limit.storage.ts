import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorage, ThrottlerStorageService } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import type { RedisConnection } from '../redis/redis.module';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * Where rate-limit counters live: in Redis when REDIS_URL is set (@nest-lab/throttler-storage-redis, one
 * atomic script per hit), so that the limits hold for the whole deployment; in this process otherwise.
 * A Redis that does not answer never fails a request: while it is away each node counts on its own
 * (the limits then hold per node), and goes back to Redis as soon as it answers again. A Redis that hangs
 * costs one command's timeout, not one per request: the first failure takes it as away for every caller
 * (RedisConnection.failed) until a PING answers.
 */
export class ResilientThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');
  private readonly local = new ThrottlerStorageService();
  private readonly shared: ThrottlerStorageRedisService | null;

  constructor(private readonly redis: RedisConnection) {
    this.shared = redis.client ? new ThrottlerStorageRedisService(redis.client) : null;
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    // While Redis is taken as away, counted here at once (not after a command's timeout on every request).
    if (this.shared && this.redis.usable) {
      try {
        return await this.shared.increment(key, ttl, limit, blockDuration, throttlerName);
      } catch (err) {
        // Said once per outage: from here on Redis is taken as away (RedisConnection logs when it answers again).
        if (!this.redis.isAway) {
          this.logger.warn(`Redis unreachable (${err instanceof Error ? err.message : String(err)}): rate limits are counted per node until it answers again`);
        }
        this.redis.failed(err);
      }
    }
    return this.local.increment(key, ttl, limit, blockDuration, throttlerName);
  }

  onApplicationShutdown(): void {
    this.local.onApplicationShutdown();
  }
}
