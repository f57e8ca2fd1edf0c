import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** Letters, digits and the punctuation trace ids use (`Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1`, base64), up to 128 characters. */
const ACCEPTABLE = /^[A-Za-z0-9._:@=;/+,-]{1,128}$/;

/**
 * The id of a request: the caller's `X-Request-Id` when it is a sane token, else a new UUID. Given once
 * and kept on the request (`req.id`), so that every part of the server that answers it (the Express
 * app, Socket.IO's HTTP answers, see LiveIoAdapter) tells the same id.
 */
export function requestIdOf(req: IncomingMessage): string {
  const tagged = req as IncomingMessage & { id?: unknown };
  if (typeof tagged.id === 'string' && tagged.id) return tagged.id;
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && ACCEPTABLE.test(incoming) ? incoming : randomUUID();
  tagged.id = id;
  return id;
}

/** Sets the request's id on its response (before anything is written), for answers outside Express. */
export function tagResponse(req: IncomingMessage, res: ServerResponse): void {
  if (!res.headersSent) res.setHeader(REQUEST_ID_HEADER, requestIdOf(req));
}

/**
 * Gives every request an id (requestIdOf). Echoed on every response (errors included); every log line
 * the request causes carries it as `requestId` (see LoggingModule). The answers that never reach
 * Express get it too: Socket.IO's (LiveIoAdapter) and Node's own to a request it could not read
 * (answerClientErrors).
 */
export function requestIdMiddleware(req: Request & { id?: string }, res: Response, next: NextFunction): void {
  res.setHeader(REQUEST_ID_HEADER, requestIdOf(req));
  next();
}
