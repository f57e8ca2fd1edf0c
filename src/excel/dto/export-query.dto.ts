import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, MaxLength, ValidationArguments } from 'class-validator';
import { sent } from '../../common/validation/decorators';
import { GoodsLimits } from '../../goods/goods.limits';
import type { ExportFormat } from '../goods-export';

export class ExportQuery {
  @ApiPropertyOptional({
    enum: ['xlsx', 'csv'],
    default: 'xlsx',
    description: 'xlsx (an Excel workbook) or csv (UTF-8 with a byte order mark); an empty value is xlsx',
  })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim().toLowerCase() || undefined : value))
  @IsOptional()
  @IsIn(['xlsx', 'csv'], { message: (args: ValidationArguments) => `format must be xlsx or csv; got ${sent(args.value)}` })
  format: ExportFormat = 'xlsx';

  @ApiPropertyOptional({
    description: 'Exports only the goods whose name, brand or sku contains it, case-insensitively (as the list does)',
    example: '워치',
    maxLength: GoodsLimits.keyword,
  })
  @IsOptional()
  @MaxLength(GoodsLimits.keyword, { message: `searchKeyword must be at most ${GoodsLimits.keyword} characters` })
  @IsString({ message: (args: ValidationArguments) => `searchKeyword must be a single string; got ${sent(args.value)}` })
  searchKeyword?: string;
}
