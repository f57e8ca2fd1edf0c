import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsOptional, IsString, MaxLength, Min, MinLength, ValidateIf, ValidationArguments } from 'class-validator';
import { idTooLarge, IntQuery, sent } from '../../common/validation/decorators';
import { GoodsLimits } from '../goods.limits';

export class ListGoodsQuery {
  @ApiPropertyOptional({
    description: 'Matches name, brand or sku containing it, case-insensitively; white space at its ends is ignored (white space only is the same as none)',
    example: '워치',
    maxLength: GoodsLimits.keyword,
  })
  @IsOptional()
  @MaxLength(GoodsLimits.keyword, { message: `searchKeyword must be at most ${GoodsLimits.keyword} characters` })
  // Listed last, so checked first: a repeated parameter (an array) is named as such, not measured.
  @IsString({ message: (args: ValidationArguments) => `searchKeyword must be a single string; got ${sent(args.value)}` })
  searchKeyword?: string;

  @IntQuery('page', 1, 1_000_000, { default: 1, description: 'Page number, from 1' })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 30, description: 'Items per page' }, { clamp: true })
  count: number = 30;

  @AfterId()
  after?: number;
}

/**
 * `after`, the cursor of the list: the last id seen (0 to start). Digits only; an empty value is absent.
 * Messages name the value sent.
 */
function AfterId(): PropertyDecorator {
  const message = (args: ValidationArguments) =>
    idTooLarge('after', args.value) ?? `after must be a goods id (an integer from 0) as last seen; got ${sent(args.value)}`;
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => {
      if (typeof value !== 'string') return value;
      const text = value.trim();
      if (text === '') return undefined;
      if (!/^\d+$/.test(text)) return value;
      // Digits beyond the largest id stay text, so that the message names them as sent (idTooLarge).
      return Number.isSafeInteger(Number(text)) ? Number(text) : text;
    }),
    IsOptional(),
    IsInt({ message }),
    Min(0, { message }),
    ApiPropertyOptional({
      type: 'integer',
      format: 'int64',
      minimum: 0,
      example: 1024,
      description:
        'Cursor paging: answers the next `count` goods with an id above `after`, in ascending id order (0 starts at the ' +
        'beginning; pass the last id of each answer to get the next), combined with searchKeyword; `page` must then be ' +
        'absent or 1. totalCount still counts all matches. An empty value is absent (page paging, newest first).',
    }),
  );
}

const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

/** A key parameter: a single, non-empty string of at most `max` characters (optional unless `required` says when). */
function KeyText(property: string, max: number, description: string, requiredUnless?: string): PropertyDecorator {
  return applyDecorators(
    trimmed,
    ...(requiredUnless
      ? [
          ValidateIf((q: Record<string, unknown>) => q[requiredUnless] === undefined || q[property] !== undefined),
          IsDefined({ message: `${property} (or ${requiredUnless}) is required` }),
        ]
      : [IsOptional()]),
    IsString({ message: (args: ValidationArguments) => `${property} must be a single string; got ${sent(args.value)}` }),
    MinLength(1, { message: `${property} must not be empty` }),
    MaxLength(max, { message: `${property} must be at most ${max} characters` }),
    ApiPropertyOptional({ description, maxLength: max }),
  );
}

/**
 * `?value=` of the look-up and deletes by goods code; `?sku=` is accepted in its place (clients ported
 * from other services name the parameter after the key). `value` wins when both are sent.
 */
export class SkuQuery {
  @KeyText('value', GoodsLimits.url, 'The registered goods code (or send it as sku)', 'sku')
  value?: string;

  @KeyText('sku', GoodsLimits.url, 'The registered goods code, in place of value')
  sku?: string;

  get key(): string {
    return (this.value ?? this.sku) as string;
  }
}

/** `?value=` of the look-up and deletes by goods URL; `?url=` is accepted in its place (`value` wins). */
export class UrlQuery {
  @KeyText('value', GoodsLimits.url, 'The registered goods URL (or send it as url)', 'url')
  value?: string;

  @KeyText('url', GoodsLimits.url, 'The registered goods URL, in place of value')
  url?: string;

  get key(): string {
    return (this.value ?? this.url) as string;
  }
}
