import { ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import { ApiException } from '../errors/api.exception';
import { validationException } from '../errors/validation';
import { sent } from './decorators';

/**
 * The global ValidationPipe (transform, whitelist, errors in the API's shape), and one rule for every query
 * string: a parameter is given once. `count=2&count=3` reaches a handler as a list, which each field
 * would refuse in its own words ("must be an integer; got [...]"); every parameter given twice is told
 * the same way instead, as the sales-status parameters are.
 */
export class ApiValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidUnknownValues: false,
      stopAtFirstError: true,
      validateCustomDecorators: true,
      exceptionFactory: validationException,
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'query') refuseRepeated(value, metadata.data);
    return super.transform(value, metadata);
  }
}

/** 400 -510 for the first parameter of a query (or the one named parameter) that was given more than once. */
export function refuseRepeated(value: unknown, name?: string): void {
  const entries: Array<[string, unknown]> =
    name !== undefined ? [[name, value]] : value && typeof value === 'object' ? Object.entries(value as Record<string, unknown>) : [];
  for (const [param, given] of entries) {
    if (!Array.isArray(given)) continue;
    const message = `${param} was given ${given.length} times; give it once`;
    throw ApiException.invalid(`Invalid argument: ${message}; got ${sent(given)}`, [{ field: param, message }]);
  }
}
