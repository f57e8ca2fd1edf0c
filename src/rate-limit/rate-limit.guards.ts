import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail, ThrottlerRequest } from '@nestjs/throttler';
import type { Request } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { REFUSED_BY } from '../metrics/http-metrics';
import { clientIp, COUNTED_PER_IP, IP_LIMIT, ipRefusal } from './rate-limiter';

/** What the customer limit needs of a request: the tenant authentication put on it. */
interface TenantRequest {
  tenant?: { id: number };
}

/** The two throttlers of ThrottlerModule (see RateLimitModule): each guard applies one of them. */
export const IP_THROTTLER = IP_LIMIT;
export const CUSTOMER_THROTTLER = 'customer';

/** Both guards: skipped when rate limits are off; a refusal is 429 -429 with Retry-After. */
abstract class OneThrottlerGuard extends ThrottlerGuard {
  protected abstract readonly throttlerName: string;

  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    return Promise.resolve(context.getType() !== 'http' || !(this.options as { enabled?: boolean }).enabled);
  }

  protected override async handleRequest(request: ThrottlerRequest): Promise<boolean> {
    if (request.throttler.name !== this.throttlerName) return true;
    return super.handleRequest(request);
  }

  protected override throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    // Counted by the HTTP metrics when the refusal is answered (livegoods_rate_limit_refusals_total).
    context.switchToHttp().getRequest<Record<symbol, unknown>>()[REFUSED_BY] = this.throttlerName;
    return Promise.reject(ApiException.rateLimited(this.refusal(detail), detail.timeToBlockExpire));
  }

  protected abstract refusal(detail: ThrottlerLimitDetail): string;
}

/**
 * Every request a controller answers, public ones included, counts against its client IP; runs before
 * authentication. (Requests no controller answers, the API docs and unmatched paths, are counted by
 * ipRateLimitMiddleware, in the same counter.)
 */
@Injectable()
export class IpRateLimitGuard extends OneThrottlerGuard {
  protected readonly throttlerName = IP_THROTTLER;

  protected override async handleRequest(request: ThrottlerRequest): Promise<boolean> {
    if (request.throttler.name !== this.throttlerName) return true;
    const req = request.context.switchToHttp().getRequest<Record<symbol, unknown>>();
    if (req[COUNTED_PER_IP]) return true;
    req[COUNTED_PER_IP] = true;
    return super.handleRequest(request);
  }

  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    return Promise.resolve(clientIp(req as unknown as Request));
  }

  protected refusal(detail: ThrottlerLimitDetail): string {
    return ipRefusal(detail.limit, detail.ttl, detail.timeToBlockExpire);
  }
}

/** Authenticated requests count against their customer (all its clients together); runs after authentication. */
@Injectable()
export class CustomerRateLimitGuard extends OneThrottlerGuard {
  protected readonly throttlerName = CUSTOMER_THROTTLER;

  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    if (await super.shouldSkip(context)) return true;
    return !context.switchToHttp().getRequest<TenantRequest>().tenant;
  }

  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    return Promise.resolve(String((req as TenantRequest).tenant?.id));
  }

  protected refusal(detail: ThrottlerLimitDetail): string {
    return `Too many requests for this customer (${detail.limit} per ${Math.round(detail.ttl / 1000)} s); retry after ${detail.timeToBlockExpire} s`;
  }
}
