import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

const ACCEPTABLE = /^[A-Za-z0-9._:@-]{1,128}$/;

/**
 * Gives every request an id: the caller's `X-Request-Id` when it is a sane token, else a new UUID.
 * Echoed on every response (errors included); every log line the request causes carries it as `requestId`
 * (see LoggingModule).
 */
export function requestIdMiddleware(req: Request & { id?: string }, res: Response, next: NextFunction): void {
  const incoming = req.header('x-request-id');
  const id = incoming && ACCEPTABLE.test(incoming) ? incoming : randomUUID();
  req.id = id;
  res.setHeader('X-Request-Id', id);
  next();
}
