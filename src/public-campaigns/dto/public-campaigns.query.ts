import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, registerDecorator } from 'class-validator';
import { booleanRefusal, booleanText, DateField, IntQuery } from '../../common/validation/decorators';

const STATUSES = ['READY', 'ONAIR', 'CLOSED'];

/** A query parameter the request gave more than once (`status=READY&status=ONAIR`), kept to be refused. */
/**
 * The status list: one comma-separated parameter of READY, ONAIR, CLOSED. Given twice it is refused
 * like every other query parameter (400 -510, ApiValidationPipe), not read as a union.
 */
function StatusList(): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'statusList',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown) => Array.isArray(value) && value.every((s) => typeof s === 'string' && STATUSES.includes(s)),
        defaultMessage: () => 'status must list READY, ONAIR or CLOSED',
      },
    });
}

export class PublicCampaignListQuery {
  @ApiPropertyOptional({ description: 'Comma-separated statuses', example: 'READY,ONAIR', default: 'READY,ONAIR,CLOSED' })
  @Transform(({ value }: { value: unknown }) => {
    return typeof value === 'string'
      ? value
          .split(',')
          .map((s) => s.trim().toUpperCase())
          .filter(Boolean)
      : value;
  })
  @IsOptional()
  @StatusList()
  status?: string[];

  @DateField('from', {}, { description: 'scheduledAt at or after (epoch ms or ISO-8601; no offset = UTC)', example: 1763683200000 }, { emptyIsAbsent: true })
  from?: Date;

  @DateField(
    'to',
    {},
    { description: 'scheduledAt at or before (epoch ms or ISO-8601; no offset = UTC)', example: '2026-12-31T23:59:59Z' },
    { emptyIsAbsent: true },
  )
  to?: Date;

  @IntQuery('page', 1, 1_000_000, { default: 1, description: 'Page number, from 1' })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 10, description: 'Items per page' }, { clamp: true })
  count: number = 10;

  @ApiPropertyOptional({ default: false, description: 'Add description and the goods with their statuses' })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: booleanRefusal('detail') })
  detail?: boolean;
}

/**
 * Parameters of `…/upcoming`. There is deliberately no way to ask for private campaigns here: this
 * endpoint needs no token, so it only ever answers collection-visible ones (an unknown parameter such
 * as the former `includePrivate` is dropped by the validation pipe's whitelist).
 */
export class UpcomingQuery {
  @ApiPropertyOptional({ default: true, description: 'Answer the running campaign when there is one' })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: booleanRefusal('includeOnAir') })
  includeOnAir?: boolean;
}
