import type { NextFunction, Request, Response } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { REFUSED_BY } from '../metrics/http-metrics';
import { ipRateLimitMiddleware } from './ip-rate-limit.middleware';
import { COUNTED_PER_IP, RateLimiter, RateLimitVerdict } from './rate-limiter';

function limiterOf(verdict: RateLimitVerdict, enabled = true) {
  const hitIp = jest.fn((_tracker: string) => Promise.resolve(verdict));
  const limiter = { enabled, hitIp, ipRefusal: (s: number) => `retry after ${s} s` } as unknown as RateLimiter;
  return { limiter, hitIp };
}

function run(limiter: RateLimiter, req: Record<string | symbol, unknown>): Promise<unknown> {
  return new Promise((resolve) => {
    const next: NextFunction = (err?: unknown) => resolve(err);
    ipRateLimitMiddleware(limiter)(req as unknown as Request, {} as Response, next);
  });
}

describe('ipRateLimitMiddleware', () => {
  it('counts a request against its client IP once, and lets it through while under the limit', async () => {
    const { limiter, hitIp } = limiterOf({ allowed: true, retryAfterSeconds: 0 });
    const req: Record<string | symbol, unknown> = { ip: '203.0.113.9' };
    expect(await run(limiter, req)).toBeUndefined();
    expect(await run(limiter, req)).toBeUndefined();
    expect(hitIp.mock.calls).toEqual([['203.0.113.9']]);
    expect(req[COUNTED_PER_IP]).toBe(true);
  });

  it('a refusal is 429 -429 with Retry-After, passed on to the error handler and marked for the metrics', async () => {
    const { limiter } = limiterOf({ allowed: false, retryAfterSeconds: 7 });
    const req: Record<string | symbol, unknown> = { ip: '203.0.113.10' };
    const err = await run(limiter, req);
    expect(err).toBeInstanceOf(ApiException);
    expect({ code: (err as ApiException).code, headers: (err as ApiException).headers }).toEqual({ code: -429, headers: { 'Retry-After': '7' } });
    expect(req[REFUSED_BY]).toBe('ip');
  });

  it('does nothing when rate limits are off, or when the guard already counted the request', async () => {
    const off = limiterOf({ allowed: false, retryAfterSeconds: 1 }, false);
    expect(await run(off.limiter, { ip: '203.0.113.11' })).toBeUndefined();
    const counted = limiterOf({ allowed: false, retryAfterSeconds: 1 });
    expect(await run(counted.limiter, { ip: '203.0.113.12', [COUNTED_PER_IP]: true })).toBeUndefined();
    expect([off.hitIp.mock.calls.length, counted.hitIp.mock.calls.length]).toEqual([0, 0]);
  });
});
