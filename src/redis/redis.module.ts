import { Global, Injectable, Logger, Module, OnModuleDestroy } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../config/app-config';

/**
 * The shared Redis connection when REDIS_URL is set (null otherwise): viewer counts across nodes and the
 * readiness check. The Socket.IO adapter opens its own pub/sub pair (see LiveIoAdapter).
 */
@Injectable()
export class RedisConnection implements OnModuleDestroy {
  private readonly logger = new Logger('Redis');
  readonly client: Redis | null;

  constructor(config: AppConfig) {
    this.client = config.redis.url ? RedisConnection.open(config.redis.url, this.logger) : null;
  }

  static open(url: string, logger: Logger): Redis {
    const client = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
    client.on('error', (err: Error) => logger.warn(`redis: ${err.message}`));
    return client;
  }

  async onModuleDestroy(): Promise<void> {
    await this.client?.quit().catch(() => undefined);
  }
}

@Global()
@Module({ providers: [RedisConnection], exports: [RedisConnection] })
export class RedisModule {}
