import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { REFUSED_BY } from '../metrics/http-metrics';
import { clientIp, COUNTED_PER_IP, IP_LIMIT, RateLimiter } from './rate-limiter';

/**
 * The per-IP limit for requests no controller answers, so that no guard sees them: the API docs
 * (Swagger UI, its assets, /docs-json) and paths no route matches (404). Same counter as
 * IpRateLimitGuard (RateLimiter.hitIp); a request already counted is let through, so none counts twice.
 * A refusal is 429 -429 with Retry-After, passed on to the app's error handler (ApiExceptionFilter), and
 * counted by the HTTP metrics as a refusal of the `ip` limit.
 */
export function ipRateLimitMiddleware(limiter: RateLimiter): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const marks = req as unknown as Record<symbol, unknown>;
    if (!limiter.enabled || marks[COUNTED_PER_IP]) return next();
    marks[COUNTED_PER_IP] = true;
    limiter.hitIp(clientIp(req)).then(
      ({ allowed, retryAfterSeconds }) => {
        if (allowed) return next();
        marks[REFUSED_BY] = IP_LIMIT;
        next(ApiException.rateLimited(limiter.ipRefusal(retryAfterSeconds), retryAfterSeconds));
      },
      (err: unknown) => next(err),
    );
  };
}
