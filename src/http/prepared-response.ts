import type { Response } from 'express';

/**
 * A complete answer, ready to send, that an interceptor gives instead of running the route (a stored
 * answer replayed for an Idempotency-Key). Thrown, so that Nest skips the handler and its own reply;
 * the exception filter sends it byte for byte.
 */
export class PreparedResponse extends Error {
  constructor(
    readonly statusCode: number,
    readonly headers: Record<string, string | string[]>,
    readonly body: Buffer,
  ) {
    super(`prepared response ${statusCode}`);
    this.name = 'PreparedResponse';
  }

  send(res: Response): void {
    for (const [name, value] of Object.entries(this.headers)) res.setHeader(name, value);
    res.setHeader('Content-Length', String(this.body.length));
    res.status(this.statusCode).end(this.body);
  }
}
