import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsDate, IsIn, IsOptional } from 'class-validator';
import { toDate } from '../../campaigns/dto/campaign-requests.dto';
import { booleanText, IntQuery } from '../../common/validation/decorators';

const STATUSES = ['READY', 'ONAIR', 'CLOSED'];

export class PublicCampaignListQuery {
  @ApiPropertyOptional({ description: 'Comma-separated statuses', example: 'READY,ONAIR', default: 'READY,ONAIR,CLOSED' })
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' ? value.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean) : value,
  )
  @IsOptional()
  @IsIn(STATUSES, { each: true, message: 'status must list READY, ONAIR or CLOSED' })
  status?: string[];

  @ApiPropertyOptional({ description: 'scheduledAt at or after (epoch ms or ISO-8601)', example: 1763683200000 })
  @Transform(toDate)
  @IsOptional()
  @IsDate({ message: 'from must be epoch milliseconds or an ISO-8601 date-time' })
  from?: Date;

  @ApiPropertyOptional({ description: 'scheduledAt at or before (epoch ms or ISO-8601)', example: '2026-12-31T23:59:59Z' })
  @Transform(toDate)
  @IsOptional()
  @IsDate({ message: 'to must be epoch milliseconds or an ISO-8601 date-time' })
  to?: Date;

  @IntQuery('page', 1, 1_000_000, { default: 1 })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 10 })
  count: number = 10;

  @ApiPropertyOptional({ default: false, description: 'Add description and the goods with their statuses' })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: 'detail must be true or false' })
  detail?: boolean;
}

export class UpcomingQuery {
  @ApiPropertyOptional({ default: true, description: 'Answer the running campaign when there is one' })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: 'includeOnAir must be true or false' })
  includeOnAir?: boolean;

  @ApiPropertyOptional({ default: false, description: 'Consider campaigns that are not collection-visible too' })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: 'includePrivate must be true or false' })
  includePrivate?: boolean;
}
