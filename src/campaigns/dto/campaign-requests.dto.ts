import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDate,
  IsDefined,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';
import { booleanText, HttpUrlField, IntQuery, TextField } from '../../common/validation/decorators';
import { CAMPAIGN_STATUSES, CampaignStatus } from '../entities/campaign.entity';
import { SALES_STATUSES, SalesStatus } from '../entities/campaign-goods.entity';

/** Epoch milliseconds (number or numeric text) or an ISO-8601 date-time; becomes a Date. null clears. */
export function toDate({ value }: { value: unknown }): unknown {
  if (value === null || value === undefined || value instanceof Date) return value;
  if (typeof value === 'number' || (typeof value === 'string' && /^\d{1,15}$/.test(value.trim()))) {
    const d = new Date(Number(value));
    return Number.isNaN(d.getTime()) ? value : d;
  }
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value.trim())) {
    const d = new Date(value.trim());
    return Number.isNaN(d.getTime()) ? value : d;
  }
  return value;
}


class CampaignFields {
  @ApiPropertyOptional({ nullable: true, type: String, maxLength: 10000 })
  @ValidateIf((o: CampaignFields) => o.description !== undefined && o.description !== null)
  @IsString()
  @MaxLength(10_000)
  description?: string | null;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'epoch ms or ISO-8601', example: 1763712000000 })
  @Transform(toDate)
  @ValidateIf((o: CampaignFields) => o.scheduledAt !== undefined && o.scheduledAt !== null)
  @IsDate({ message: 'scheduledAt must be epoch milliseconds or an ISO-8601 date-time' })
  scheduledAt?: Date | null;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'epoch ms or ISO-8601', example: 1763719200000 })
  @Transform(toDate)
  @ValidateIf((o: CampaignFields) => o.scheduledEndAt !== undefined && o.scheduledEndAt !== null)
  @IsDate({ message: 'scheduledEndAt must be epoch milliseconds or an ISO-8601 date-time' })
  scheduledEndAt?: Date | null;

  @HttpUrlField('posterUrl', 2048, { nullable: true }, { example: 'https://cdn.example.com/poster.jpg' })
  posterUrl?: string | null;

  @ApiPropertyOptional({ nullable: true, type: String, maxLength: 2048, description: 'Free text: the stream URL or id' })
  @ValidateIf((o: CampaignFields) => o.liveUrl !== undefined && o.liveUrl !== null)
  @IsString()
  @MaxLength(2048)
  liveUrl?: string | null;

  @ApiPropertyOptional({ nullable: true, type: String, maxLength: 255, example: 'Mina' })
  @ValidateIf((o: CampaignFields) => o.operatorName !== undefined && o.operatorName !== null)
  @IsString()
  @MaxLength(255)
  operatorName?: string | null;

  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Listed publicly (collection-view visibility)' })
  @booleanText
  @IsOptional()
  @IsBoolean()
  collectionVisible?: boolean;
}

export class CreateCampaignDto extends CampaignFields {
  @TextField('title', 255, { required: true }, { example: 'Friday night deals' })
  title: string;
}

export class UpdateCampaignDto extends CampaignFields {
  @TextField('title', 255, {}, { example: 'Friday night deals' })
  title?: string;
}

export class CampaignStatusDto {
  @ApiProperty({ enum: ['ONAIR', 'CLOSED'], example: 'ONAIR' })
  @IsDefined({ message: 'campaignStatus is required' })
  @IsIn(CAMPAIGN_STATUSES, { message: 'campaignStatus must be READY, ONAIR or CLOSED' })
  campaignStatus: CampaignStatus;
}

export class ListCampaignsQuery {
  @IntQuery('page', 1, 1_000_000, { default: 1 })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 30 })
  count: number = 30;
}

/** Goods named by id, by sku or by url (exactly one of the three lists). */
export class CampaignGoodsRefsDto {
  @ApiPropertyOptional({ type: [Number], example: [1024, 1025] })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsInt({ each: true })
  @Min(1, { each: true })
  goodsIds?: number[];

  @ApiPropertyOptional({ type: [String], example: ['SW-7'] })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  skus?: string[];

  @ApiPropertyOptional({ type: [String], example: ['https://shop.example.com/goods/SW-7'] })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  urls?: string[];
}

export class GoodsOrderDto {
  @ApiProperty({ type: [Number], example: [1025, 1024], description: 'The new order; ids not listed keep their relative order after these' })
  @IsDefined({ message: 'goodsIds is required' })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(10_000)
  @IsInt({ each: true })
  goodsIds: number[];
}

export class ShowingDto {
  @ApiProperty({ example: true })
  @booleanText
  @IsDefined({ message: 'showingNow is required' })
  @IsBoolean({ message: 'showingNow must be true or false' })
  showingNow: boolean;
}

export class ChatDto {
  @ApiProperty({ example: 'Only 10 left!', description: 'With pinned=true, an empty message unpins the notice' })
  @IsDefined({ message: 'message is required' })
  @IsString()
  @MaxLength(2000)
  message: string;

  @ApiPropertyOptional({ default: false, description: 'Pin as the notice instead of a chat line' })
  @booleanText
  @IsOptional()
  @IsBoolean()
  pinned?: boolean;

  @ApiPropertyOptional({ example: 'Mina', description: "Operator name; default: the token's name claim, then the campaign's operatorName" })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  name?: string;
}

/** Parameters of the three sales-status operations: from the query string, a form body or a JSON body. */
export class SalesStatusParams {
  @ApiProperty({ enum: SALES_STATUSES, example: 'SOLD_OUT' })
  @IsDefined({ message: 'salesStatus is required' })
  @IsIn(SALES_STATUSES, { message: 'salesStatus must be ON_SALE, ALMOST_SOLD_OUT or SOLD_OUT' })
  salesStatus: SalesStatus;

  @ApiPropertyOptional({ default: true, description: 'Push the change to viewers now' })
  @booleanText
  @IsOptional()
  @IsBoolean({ message: 'notify must be true or false' })
  notify?: boolean;

  @ApiPropertyOptional({ example: 'Mina', description: 'Operator name for adminName and the messages' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  name?: string;

  @ApiPropertyOptional({ example: 'Only a few left!', description: 'Pinned operator notice' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  adminChatNotice?: string;

  @ApiPropertyOptional({ example: 'Sold out, thank you!', description: 'Operator chat message' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  chatMessage?: string;

  @ApiPropertyOptional({ type: Number, format: 'int64', description: 'Locator of …/salesStatus/id' })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value))
  @IsOptional()
  @IsInt({ message: 'goodsId must be an integer' })
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  goodsId?: number;

  @ApiPropertyOptional({ description: 'Locator of …/salesStatus/url' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ description: 'Locator of …/salesStatus/sku' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  sku?: string;
}
