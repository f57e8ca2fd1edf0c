import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { sent } from '../common/validation/decorators';

const INT64_MAX = 9223372036854775807n;

/**
 * Parses an int64 path segment: a positive whole number, as text. One above 2^53 - 1 (the largest id this
 * service gives) is still an int64, so it is looked up like any other and found by none: the route's 404.
 */
export function parseIdSegment(name: string, raw: unknown): number {
  const ok = typeof raw === 'string' && /^\d{1,19}$/.test(raw) && BigInt(raw) >= 1n && BigInt(raw) <= INT64_MAX;
  if (!ok) {
    const message = `${name} must be a positive integer; got ${sent(raw)}`;
    throw ApiException.invalid(message, [{ field: name, message }]);
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
