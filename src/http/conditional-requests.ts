import fresh from 'fresh';
import type { Request } from 'express';

/**
 * When an answer is still the client's copy (`req.fresh`, which Express's `res.send` turns into a 304):
 * a GET or HEAD whose answer would be 2xx and whose If-None-Match (or If-Modified-Since) matches the
 * answer's ETag (or Last-Modified), as Express decides it, except that the request's
 * `Cache-Control: no-cache` does not make every such request stale.
 *
 * Express answers 200 to a conditional request that also says `Cache-Control: no-cache`, reading it as
 * an end-to-end reload. But a page's `fetch()` given an If-None-Match by hand sends exactly that (the
 * Fetch standard adds `Cache-Control: no-cache` to such requests), so a player revalidating its copy of
 * a public campaign would never get the 304 the API reference promises. `no-cache` tells caches on the
 * way not to answer from a stored copy without asking the origin; the origin, asked, may still say the
 * copy is current.
 */
export function freshDespiteNoCache(req: Request): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const res = req.res;
  if (!res) return false;
  const status = res.statusCode;
  if (!((status >= 200 && status < 300) || status === 304)) return false;
  const headers: Record<string, string | string[] | undefined> = { ...req.headers };
  delete headers['cache-control'];
  const etag = res.getHeader('ETag');
  const lastModified = res.getHeader('Last-Modified');
  return fresh(headers, {
    etag: typeof etag === 'string' ? etag : undefined,
    'last-modified': typeof lastModified === 'string' ? lastModified : undefined,
  });
}

/** Makes `req.fresh` of the Express app whose request prototype this is follow freshDespiteNoCache. */
export function answerConditionalRequests(requestPrototype: object): void {
  Object.defineProperty(requestPrototype, 'fresh', {
    configurable: true,
    enumerable: true,
    get(this: Request): boolean {
      return freshDespiteNoCache(this);
    },
  });
}
