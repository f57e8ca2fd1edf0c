import type { Request, RequestHandler, Response } from 'express';
import compression from 'compression';

/** Answers never compressed: stored images (already compressed, served with ranges) and the .xlsx template (a zip). */
const NEVER = [/^\/media\//, /^\/v1\/goods\/[^/]+\/excel\/template$/];

/** Bodies smaller than this are sent as they are: compressing them costs more than it saves. */
export const COMPRESSION_THRESHOLD = 1024;

/**
 * gzip / br (the `compression` package) for JSON, the API docs and the pages, when the client accepts it
 * and the body is at least COMPRESSION_THRESHOLD bytes; never for /media files or the spreadsheet template.
 * Socket.IO is not concerned (it answers before Express; engine.io's own httpCompression is off).
 */
export function compressionMiddleware(): RequestHandler {
  const never = (req: Request) => NEVER.some((re) => re.test(req.path));
  const compress = compression({
    threshold: COMPRESSION_THRESHOLD,
    filter: (req: Request, res: Response) => !never(req) && compression.filter(req, res),
  });
  // A client that accepts no encoding (most API clients) skips the wrapper and its per-request hooks
  // (about 20 µs of CPU); the answer still says that it varies with Accept-Encoding, for shared caches.
  return (req, res, next) => {
    if (req.headers['accept-encoding']) return compress(req, res, next);
    if (!never(req)) res.vary('Accept-Encoding');
    next();
  };
}
