import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line a request causes carries: its id (the X-Request-Id it is answered with). */
export interface RequestContext {
  requestId: string;
}

/**
 * The request a line is logged in, for pino's `mixin` (see root-logger.ts): one AsyncLocalStorage run per
 * request, and no per-request child logger.
 */
export const requestContext = new AsyncLocalStorage<RequestContext>();
