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
  return compression({
    threshold: COMPRESSION_THRESHOLD,
    filter: (req: Request, res: Response) => !NEVER.some((re) => re.test(req.path)) && compression.filter(req, res),
  });
}
