import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  MinLength,
  ValidationArguments,
} from 'class-validator';
import { BooleanField, booleanText, IdField, sent, WellFormedText } from '../../common/validation/decorators';
import { SALES_STATUSES, SalesStatus } from '../../campaigns/entities/campaign-goods.entity';

/** Goods named by id, by sku or by url (exactly one of the three lists). */
export class CampaignGoodsRefsDto {
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'integer', format: 'int64', minimum: 1 },
    minItems: 1,
    maxItems: 1000,
    example: [1024, 1025],
    description: 'Goods ids (exactly one of goodsIds, skus, urls)',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsInt({ each: true })
  @Min(1, { each: true })
  goodsIds?: number[];

  @ApiPropertyOptional({ type: [String], minItems: 1, maxItems: 1000, example: ['SW-7'], description: 'Goods codes (exactly one of goodsIds, skus, urls)' })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  skus?: string[];

  @ApiPropertyOptional({
    type: [String],
    minItems: 1,
    maxItems: 1000,
    example: ['https://shop.example.com/goods/SW-7'],
    description: 'Goods URLs (exactly one of goodsIds, skus, urls)',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  urls?: string[];
}

export class GoodsOrderDto {
  @ApiProperty({
    type: 'array',
    items: { type: 'integer', format: 'int64' },
    minItems: 1,
    maxItems: 10000,
    example: [1025, 1024],
    description: 'The new order; ids not listed keep their relative order after these',
  })
  @IsDefined({ message: 'goodsIds is required' })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(10_000)
  @IsInt({ each: true })
  goodsIds: number[];
}

export class ShowingDto {
  @ApiProperty({ type: Boolean, example: true, description: 'true: this item shows now (clears it on the others); false: it does not' })
  @booleanText
  @IsDefined({ message: 'showingNow is required' })
  @IsBoolean({ message: 'showingNow must be true or false' })
  showingNow: boolean;
}

/** Parameters of the three sales-status operations: from the query string, a form body or a JSON body. */
export class SalesStatusParams {
  @ApiProperty({ enum: SALES_STATUSES, example: 'SOLD_OUT' })
  @IsDefined({ message: 'salesStatus is required' })
  @IsIn(SALES_STATUSES, { message: (args: ValidationArguments) => `salesStatus must be ${SALES_STATUSES.join(', ')}; got ${sent(args.value)}` })
  salesStatus: SalesStatus;

  @BooleanField('notify', {}, { default: true, description: 'Push the change to viewers now: true/false, 1/0, yes/no or on/off; empty = true' })
  notify?: boolean;

  @ApiPropertyOptional({ example: 'Mina', description: 'Operator name for adminName and the messages' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  @WellFormedText('name')
  name?: string;

  @ApiPropertyOptional({ example: 'Only a few left!', description: 'Pinned operator notice' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @WellFormedText('adminChatNotice')
  adminChatNotice?: string;

  @ApiPropertyOptional({ example: 'Sold out, thank you!', description: 'Operator chat message' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @WellFormedText('chatMessage')
  chatMessage?: string;

  @IdField('goodsId', {}, { description: 'Locator of …/salesStatus/id' })
  goodsId?: number;

  @ApiPropertyOptional({ description: 'Locator of …/salesStatus/url' })
  @IsOptional()
  @IsString({ message: (args: ValidationArguments) => `url must be a string; got ${sent(args.value)}` })
  @MinLength(1, { message: 'url must not be empty' })
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ description: 'Locator of …/salesStatus/sku' })
  @IsOptional()
  @IsString({ message: (args: ValidationArguments) => `sku must be a string; got ${sent(args.value)}` })
  @MinLength(1, { message: 'sku must not be empty' })
  @MaxLength(128)
  sku?: string;
}
