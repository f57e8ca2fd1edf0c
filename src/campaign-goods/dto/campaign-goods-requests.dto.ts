import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsDefined, IsIn, IsInt, IsString, Max, Min, ValidateIf, ValidationArguments } from 'class-validator';
import { Transform } from 'class-transformer';
import { BooleanField, booleanRefusal, booleanText, IdField, IdListField, OptionalField, sent, TextRules } from '../../common/validation/decorators';
import { SALES_STATUSES, SalesStatus } from '../../campaigns/entities/campaign-goods.entity';
import { CAMPAIGN_MAX_GOODS_CEILING } from '../../config/env.validation';

/** A list of 1 to 1,000 texts (goods codes or URLs), checked in this order: a list, its size, each entry; null is absent. */
function TextList(property: string): PropertyDecorator {
  return applyDecorators(
    OptionalField(),
    IsArray({ message: (args: ValidationArguments) => `${property} must be a list; got ${sent(args.value)}` }),
    ArrayMinSize(1, { message: `${property} must list at least 1 entry` }),
    ArrayMaxSize(1000, { message: `${property} must list at most 1,000 entries` }),
    IsString({ each: true, message: `every entry of ${property} must be a string` }),
  );
}

/** Goods named by id, by sku or by url (exactly one of the three lists). */
export class CampaignGoodsRefsDto {
  @IdListField(
    'goodsIds',
    1,
    1000,
    {},
    { example: [1024, 1025], description: 'Goods ids, as numbers or as text ("1024") (exactly one of goodsIds, skus, urls)' },
  )
  goodsIds?: number[];

  @ApiPropertyOptional({ type: [String], minItems: 1, maxItems: 1000, example: ['SW-7'], description: 'Goods codes (exactly one of goodsIds, skus, urls)' })
  @TextList('skus')
  skus?: string[];

  @ApiPropertyOptional({
    type: [String],
    minItems: 1,
    maxItems: 1000,
    example: ['https://shop.example.com/goods/SW-7'],
    description: 'Goods URLs (exactly one of goodsIds, skus, urls)',
  })
  @TextList('urls')
  urls?: string[];
}

export class GoodsOrderDto {
  // As many ids as a campaign may ever hold (CAMPAIGN_MAX_GOODS's ceiling), so that a full order of any
  // campaign passes whatever the setting: the DTO's bounds are fixed when the class loads, before the
  // settings are read. A longer list than the campaign holds cannot pass anyway (an id not in it is 404
  // -711; an id listed twice is 400), and 10,000 ids are checked in well under a millisecond.
  @IdListField(
    'goodsIds',
    1,
    CAMPAIGN_MAX_GOODS_CEILING,
    { required: true },
    {
      example: [1025, 1024],
      description: 'The new order, ids as numbers or as text ("1025"), each once; ids not listed keep their relative order after these',
    },
    true,
  )
  goodsIds: number[];
}

export class ShowingDto {
  @ApiProperty({ type: Boolean, example: true, description: 'true: this item shows now (clears it on the others); false: it does not' })
  @booleanText
  @IsDefined({ message: 'showingNow is required' })
  @IsBoolean({ message: booleanRefusal('showingNow') })
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
  @OptionalField()
  @TextRules('name', 255)
  name?: string;

  @ApiPropertyOptional({ example: 'Only a few left!', description: 'Pinned operator notice' })
  @OptionalField()
  @TextRules('adminChatNotice', 2000)
  adminChatNotice?: string;

  @ApiPropertyOptional({ example: 'Sold out, thank you!', description: 'Operator chat message' })
  @OptionalField()
  @TextRules('chatMessage', 2000)
  chatMessage?: string;

  @IdField('goodsId', {}, { description: 'Locator of …/salesStatus/id' })
  goodsId?: number;

  @ApiPropertyOptional({ description: 'Locator of …/salesStatus/url' })
  @OptionalField()
  @TextRules('url', 2048, 1)
  url?: string;

  @ApiPropertyOptional({ description: 'Locator of …/salesStatus/sku' })
  @OptionalField()
  @TextRules('sku', 128, 1)
  sku?: string;
}

/** The largest stock an item may hold (the column is a 32-bit integer). */
export const MAX_STOCK = 1_000_000_000;

/** In the query string or a form there is no null: an empty value, or `null`, means null. */
const nullText = Transform(({ value }: { value: unknown }) => (value === '' || value === 'null' ? null : value));
const numericText = Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value));

/** A count of units: an integer from `min` to MAX_STOCK (numeric text accepted); messages name the value sent. */
function UnitsField(property: string, min: number): PropertyDecorator[] {
  const message = (args: ValidationArguments) => `${property} must be an integer from ${min} to ${MAX_STOCK}; got ${sent(args.value)}`;
  return [IsInt({ message }), Min(min, { message }), Max(MAX_STOCK, { message })];
}

/** Parameters of the stock operations (query string, form or JSON body, as for the sales-status ones). */
export class StockParams {
  @IdField('goodsId', {}, { description: 'Locator of …/stock/id' })
  goodsId?: number;

  @ApiPropertyOptional({ description: 'Locator of …/stock/url' })
  @OptionalField()
  @TextRules('url', 2048, 1)
  url?: string;

  @ApiPropertyOptional({ description: 'Locator of …/stock/sku' })
  @OptionalField()
  @TextRules('sku', 128, 1)
  sku?: string;

  @BooleanField('notify', {}, { default: true, description: 'Push a derived status change to viewers now: true/false, 1/0, yes/no or on/off; empty = true' })
  notify?: boolean;

  @ApiPropertyOptional({ example: 'Mina', description: 'Operator name for adminName on a derived status change' })
  @OptionalField()
  @TextRules('name', 255)
  name?: string;
}

/** PUT …/stock/{id|url|sku}: the stock (required; null stops tracking) and, optionally, the threshold. */
export class SetStockParams extends StockParams {
  @ApiProperty({ nullable: true, type: 'integer', minimum: 0, maximum: MAX_STOCK, example: 20, description: 'Units left; null (or empty text) stops tracking' })
  @nullText
  @numericText
  @IsDefined({ message: 'stock is required (null stops tracking)' })
  @ValidateIf((o: SetStockParams) => o.stock !== null)
  @applyAll(UnitsField('stock', 0))
  stock: number | null;

  @ApiPropertyOptional({
    nullable: true,
    type: 'integer',
    minimum: 0,
    maximum: MAX_STOCK,
    example: 5,
    description: 'ALMOST_SOLD_OUT at this many units left or fewer; null (or empty text): no such stage; absent: unchanged',
  })
  @nullText
  @numericText
  @ValidateIf((o: SetStockParams) => o.almostSoldOutAt !== undefined && o.almostSoldOutAt !== null)
  @applyAll(UnitsField('almostSoldOutAt', 0))
  almostSoldOutAt?: number | null;
}

/** POST …/stock/{id|url|sku}/decrement and …/increment: by how many units (default 1). */
export class StockDeltaParams extends StockParams {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_STOCK, default: 1, example: 1, description: 'Units (default 1)' })
  @numericText
  @ValidateIf((o: StockDeltaParams) => o.quantity !== undefined)
  @applyAll(UnitsField('quantity', 1))
  quantity?: number;
}

function applyAll(decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, key) => decorators.forEach((d) => d(target, key));
}
