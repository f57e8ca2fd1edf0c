import { Global, Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../config/app-config';
import { RedisConnection } from '../redis/redis.module';
import { CUSTOMER_THROTTLER, IP_THROTTLER } from './rate-limit.guards';
import { ResilientThrottlerStorage } from './rate-limit.storage';
import { RateLimiter, rateLimitKey } from './rate-limiter';

/**
 * Rate limits (@nestjs/throttler), per window of RATE_LIMIT_WINDOW_MS: requests per client IP
 * (RATE_LIMIT_IP, every route), authenticated requests per customer (RATE_LIMIT_CUSTOMER), refused
 * authentications per IP (RATE_LIMIT_AUTH_FAILURES) and new /live connections per IP
 * (RATE_LIMIT_LIVE_CONNECTIONS). Counted in Redis when REDIS_URL is set, so they hold across nodes.
 * The guards are registered, in order, by AuthModule: IP limit, authentication, customer limit.
 */
@Global()
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [AppConfig, RedisConnection],
      useFactory: (config: AppConfig, redis: RedisConnection) => {
        const { enabled, windowMs, ip, customer } = config.rateLimit;
        return {
          throttlers: [
            { name: IP_THROTTLER, ttl: windowMs, limit: ip },
            { name: CUSTOMER_THROTTLER, ttl: windowMs, limit: customer },
          ],
          storage: new ResilientThrottlerStorage(redis),
          // Counted per tracker for the whole API, not per route.
          generateKey: (_context, tracker, name) => rateLimitKey(config, name, tracker),
          // Retry-After comes with the 429 itself (ApiException.rateLimited).
          setHeaders: false,
          enabled,
        };
      },
    }),
  ],
  providers: [RateLimiter],
  exports: [RateLimiter, ThrottlerModule],
})
export class RateLimitModule {}
