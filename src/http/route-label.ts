import type { Request } from 'express';

/** The label of a request that matched no route (its path goes to the access log, never to a metric label). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The route pattern that answered a request (`/v1/goods/:accessKey`), for logs and metric labels: bounded
 * (one per route, never the URL itself), so that no URL value (a key, a token) reaches a label. Requests
 * no route answered (404s, static files of the docs) are `unmatched`.
 */
export function routeOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  // Module middleware (the access log's) is mounted as a catch-all route: matching only it is matching nothing.
  if (typeof path !== 'string' || path.startsWith('/{*')) return UNMATCHED_ROUTE;
  return `${req.baseUrl ?? ''}${path}`;
}

/** The accessKey a request named in its path, if any (for the access log: it identifies the customer, it is no secret). */
export function accessKeyOf(req: Request): string | undefined {
  const key = (req.params as Record<string, unknown> | undefined)?.accessKey;
  return typeof key === 'string' && key.length <= 128 ? key : undefined;
}
