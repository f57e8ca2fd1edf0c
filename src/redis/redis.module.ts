import { Global, Injectable, Logger, Module, OnModuleDestroy } from '@nestjs/common';
import Redis, { RedisOptions } from 'ioredis';
import { redactCredentials } from '../common/util/redact';
import { AppConfig } from '../config/app-config';

/** Longest a Redis command may wait for its answer; Redis answers in well under a millisecond when up. */
export const REDIS_COMMAND_TIMEOUT_MS = 2000;

export interface RedisClientOptions {
  /**
   * Queue commands while disconnected (and send them on reconnect) instead of failing them at once.
   * Subscribers need it (their subscriptions are replayed); publishers and counters do not: a command
   * that cannot be sent fails immediately and the caller copes.
   */
  offlineQueue?: boolean;
}

/**
 * The shared Redis connection when REDIS_URL is set (null otherwise): viewer counts across nodes, rate
 * limits and the readiness check. The Socket.IO adapter opens its own pub/sub pair (see LiveIoAdapter).
 * Every client reconnects by itself forever (with backoff) and never takes the process down: errors are
 * logged, each command has a timeout, and callers treat a failed command as "Redis is away for now".
 */
@Injectable()
export class RedisConnection implements OnModuleDestroy {
  private readonly logger = new Logger('Redis');
  readonly client: Redis | null;

  constructor(config: AppConfig) {
    this.client = config.redis.url ? RedisConnection.open(config.redis.url, this.logger) : null;
  }

  static open(url: string, logger: Logger, options: RedisClientOptions = {}): Redis {
    const settings: RedisOptions = {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: options.offlineQueue ?? false,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 5000,
      retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 3000),
      lazyConnect: false,
    };
    const client = new Redis(url, settings);
    let down = false;
    client.on('error', (err: Error) => {
      if (!down) logger.warn(redactCredentials(`redis: ${err.message}`));
      down = true;
    });
    client.on('ready', () => {
      if (down) logger.log('redis: connected again');
      down = false;
    });
    return client;
  }

  /**
   * Makes `publish` of this client never reject: libraries that publish and forget (the Socket.IO Redis
   * adapter does) would otherwise leave a rejected promise behind each time Redis is unreachable.
   */
  static neverRejectingPublish(client: Redis, onError: (err: Error) => void): Redis {
    const publish: (channel: string | Buffer, message: string | Buffer) => Promise<number> = client.publish.bind(client);
    const safe = (channel: string | Buffer, message: string | Buffer): Promise<number> =>
      publish(channel, message).catch((err: Error) => {
        onError(err);
        return 0;
      });
    (client as unknown as { publish: typeof safe }).publish = safe;
    return client;
  }

  async onModuleDestroy(): Promise<void> {
    await this.client?.quit().catch(() => this.client?.disconnect());
  }
}

@Global()
@Module({ providers: [RedisConnection], exports: [RedisConnection] })
export class RedisModule {}
