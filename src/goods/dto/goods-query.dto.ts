import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { IntQuery } from '../../common/validation/decorators';
import { GoodsLimits } from '../goods.limits';

export class ListGoodsQuery {
  @ApiPropertyOptional({ description: 'Matches name, brand or sku containing it, case-insensitively', example: '워치' })
  @IsOptional()
  @IsString()
  @MaxLength(GoodsLimits.keyword)
  searchKeyword?: string;

  @IntQuery('page', 1, 1_000_000, { default: 1 })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 30 })
  count: number = 30;
}

/** `?value=` of the look-ups and deletes by sku or url. */
export class KeyValueQuery {
  @ApiProperty({ description: 'The registered goods code or goods URL', example: 'SW-7' })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsDefined({ message: 'value is required' })
  @IsString({ message: 'value must be a single string' })
  @MinLength(1, { message: 'value must not be empty' })
  @MaxLength(GoodsLimits.url)
  value: string;
}
