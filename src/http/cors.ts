import type { NextFunction, Request, RequestHandler, Response } from 'express';
import cors, { CorsOptions } from 'cors';

/** The public read endpoints (campaign lists and details) and the stored images: readable from any page. */
const PUBLIC_PATH = /^\/(v1\/campaigns|media)(\/|$)/;

/** ETag: a page may keep an answer's tag and ask again with If-None-Match (304 when unchanged). */
const EXPOSED = ['X-Request-Id', 'Retry-After', 'ETag'];
/** Request headers a page may set on a read: besides Content-Type, the conditional ones (If-None-Match, Cache-Control). */
const CONDITIONAL = ['If-None-Match', 'Cache-Control'];
/** The authenticated routes also tell pages whether an answer was replayed for an Idempotency-Key. */
const EXPOSED_LISTED = [...EXPOSED, 'Idempotent-Replayed'];

/**
 * CORS (the `cors` package), per route family:
 * - `/v1/campaigns/...` and `/media/...` answer `Access-Control-Allow-Origin: *` on every response (with or
 *   without an Origin header, so a shared cache never keeps a copy without it), and preflights;
 * - both let a page read an answer's `ETag` and send it back in `If-None-Match` (with `Cache-Control`), so
 *   a page on another site can ask for a 304 as one on the service's own origin can;
 * - every other route (authenticated) answers only the origins of CORS_ORIGINS: their origin echoed,
 *   `Authorization` and `Idempotency-Key` allowed; any other origin gets no CORS header at all (the browser then refuses to
 *   let the page read the answer). `Vary: Origin` tells caches the answer depends on it.
 * The /live Socket.IO namespace takes every origin (its own CORS setting, see LiveGateway).
 */
export function corsMiddleware(allowedOrigins: readonly string[]): RequestHandler {
  const listed = new Set(allowedOrigins);
  const publicCors = cors({
    origin: '*',
    methods: ['GET', 'HEAD', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'X-Request-Id', ...CONDITIONAL],
    exposedHeaders: EXPOSED,
    maxAge: 600,
  });
  const listedOptions: CorsOptions = {
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'Idempotency-Key', ...CONDITIONAL],
    exposedHeaders: EXPOSED_LISTED,
    maxAge: 600,
  };
  const byOrigin = new Map<string, RequestHandler>();
  return (req: Request, res: Response, next: NextFunction): void => {
    if (PUBLIC_PATH.test(req.path)) return publicCors(req, res, next);
    if (!listed.size) return next();
    res.vary('Origin');
    const origin = req.headers.origin;
    if (!origin || !listed.has(origin)) return next();
    let handler = byOrigin.get(origin);
    if (!handler) {
      handler = cors({ ...listedOptions, origin });
      byOrigin.set(origin, handler);
    }
    handler(req, res, next);
  };
}
