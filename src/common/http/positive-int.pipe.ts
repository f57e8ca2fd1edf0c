import { Injectable, PipeTransform } from '@nestjs/common';
import { ApiException } from '../errors/api.exception';

/** Parses an int64 path segment; anything else is 400 -510. */
@Injectable()
export class PositiveIntPipe implements PipeTransform<string, number> {
  transform(value: string): number {
    if (!/^\d{1,16}$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
      throw ApiException.invalid(`'${value}' is not a valid goods id`, [
        { field: 'goodsId', message: 'goodsId must be a positive integer' },
      ]);
    }
    return Number(value);
  }
}
