import type { NextFunction, Request, Response } from 'express';
import { routeOf } from '../http/route-label';
import type { Metrics } from './metrics.service';

/** Set on a request by the rate-limit guards when they refuse it: which limit did. */
export const REFUSED_BY = Symbol('refusedBy');

/**
 * Express middleware: each answered request's duration by method, route pattern (never the URL) and
 * status; counts rate-limit refusals of the HTTP guards. (Requests in flight are Lifecycle's count.)
 */
export function httpMetrics(metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      metrics.httpDuration.observe({ method: req.method, route: routeOf(req), status: String(res.statusCode) }, seconds);
      const refusedBy = (req as unknown as Record<symbol, unknown>)[REFUSED_BY];
      if (typeof refusedBy === 'string') metrics.rateLimitRefusals.inc({ limit: refusedBy });
    };
    res.once('finish', finish);
    res.once('close', finish);
    next();
  };
}
