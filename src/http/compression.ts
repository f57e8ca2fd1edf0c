import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Request, RequestHandler, Response } from 'express';
import compression from 'compression';
import Negotiator from 'negotiator';

/**
 * Answers never compressed: stored images (already compressed, served with ranges), the .xlsx template (a
 * zip) and the export (an .xlsx is a zip; a CSV export is streamed page by page as the client reads, and
 * a compressor in between would hold pages back and blur that backpressure).
 */
const NEVER = [/^\/media\//, /^\/v1\/goods\/[^/]+\/excel\/(template|export)$/];

/** Bodies smaller than this are sent as they are: compressing them costs more than it saves. */
export const COMPRESSION_THRESHOLD = 1024;

/**
 * Whole bodies up to this size (most API answers: a list page is a few kB) are compressed at once on the
 * event loop, well under a millisecond, instead of in zlib's thread pool: each round trip there is a
 * turn of the event loop the answer waits for, which under load (a bulk write running in slices) adds
 * a slice's time per turn to every small answer.
 */
export const SYNC_COMPRESSION_MAX = 64 * 1024;

/** The same choice and settings as the `compression` package: br (quality 4) before gzip. */
const ENCODINGS = ['br', 'gzip', 'identity'];
const PREFERRED = ['br', 'gzip'];
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } };

/**
 * Wraps `res.send` so that a whole string or Buffer body of COMPRESSION_THRESHOLD to SYNC_COMPRESSION_MAX
 * bytes of a compressible type is compressed right there; the `compression` middleware then sees it
 * already encoded and leaves it alone (larger and streamed bodies stay its work).
 */
function compressSmallBodies(req: Request, res: Response): void {
  const send = res.send.bind(res) as (body?: unknown) => Response;
  res.send = function sendCompressed(body?: unknown): Response {
    const size = typeof body === 'string' ? Buffer.byteLength(body) : Buffer.isBuffer(body) ? body.length : -1;
    if (size < COMPRESSION_THRESHOLD || size > SYNC_COMPRESSION_MAX || req.method === 'HEAD' || res.getHeader('Content-Encoding')) return send(body);
    if (typeof body === 'string') {
      // What res.send does for text before it sends it: a type (html) and the charset it encodes with.
      if (!res.getHeader('Content-Type')) res.type('html');
      const type = String(res.getHeader('Content-Type'));
      if (!/;\s*charset=/i.test(type)) res.setHeader('Content-Type', `${type}; charset=utf-8`);
    }
    const cacheControl = res.getHeader('Cache-Control');
    if (!compression.filter(req, res) || (typeof cacheControl === 'string' && /(?:^|,)\s*no-transform\s*(?:,|$)/i.test(cacheControl))) return send(body);
    const method = new Negotiator(req).encoding(ENCODINGS, { preferred: PREFERRED });
    if (method !== 'br' && method !== 'gzip') return send(body);
    const raw = typeof body === 'string' ? Buffer.from(body) : (body as Buffer);
    res.vary('Accept-Encoding');
    res.setHeader('Content-Encoding', method);
    res.removeHeader('Content-Length');
    return send(method === 'br' ? brotliCompressSync(raw, BROTLI) : gzipSync(raw));
  } as Response['send'];
}

/**
 * gzip / br (the `compression` package) for JSON, the API docs and the pages, when the client accepts it
 * and the body is at least COMPRESSION_THRESHOLD bytes; never for /media files, the spreadsheet template or the export.
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
    if (req.headers['accept-encoding']) {
      if (!never(req)) compressSmallBodies(req, res);
      return compress(req, res, next);
    }
    if (!never(req)) res.vary('Accept-Encoding');
    next();
  };
}
