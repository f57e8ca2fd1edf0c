import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { sent } from '../common/validation/decorators';

const INT64_MAX = 9223372036854775807n;

/** What each id path parameter names, for the 404 of an id no row can have. */
const NOUNS: Record<string, string> = { goodsId: 'Goods', webhookId: 'Webhook endpoint', deliveryId: 'Webhook delivery', jobId: 'Import job' };

/**
 * Parses an int64 path segment: a positive whole number, as text. One above 2^53 - 1 (the largest id this
 * service gives) is still an int64 but names nothing: 404 -404 naming it as sent (as a number it would
 * lose its last digits, and the message would name another id).
 */
export function parseIdSegment(name: string, raw: unknown): number {
  const ok = typeof raw === 'string' && /^\d{1,19}$/.test(raw) && BigInt(raw) >= 1n && BigInt(raw) <= INT64_MAX;
  if (!ok) {
    const message = `${name} must be a positive integer; got ${sent(raw)}`;
    throw ApiException.invalid(`Invalid argument: ${message}`, [{ field: name, message }]);
  }
  if (BigInt(raw) > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw ApiException.notFound(`${NOUNS[name] ?? name} not found: id ${raw} (ids go up to ${Number.MAX_SAFE_INTEGER})`);
  }
  return Number(raw);
}

/**
 * An int64 path parameter (`@IdParam('goodsId')`), read from the path as sent: anything but a positive
 * whole number is 400 -510 naming the parameter and the text sent. (A `@Param()` of type number would
 * be converted by the global ValidationPipe first, and `abc` would arrive as NaN.)
 */
export const IdParam = createParamDecorator((name: string, ctx: ExecutionContext): number =>
  parseIdSegment(name, ctx.switchToHttp().getRequest<Request>().params?.[name]),
);
