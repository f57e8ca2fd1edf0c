import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { Media } from '../../media/entities/media.entity';
import { MediaResponse, toMediaResponse } from '../../media/dto/media-response.dto';
import type { Goods } from '../entities/goods.entity';

/** A goods item as the API returns it (docs/api-reference.md, Goods). */
export class GoodsResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 1024, description: 'Assigned by the service' }) id: number;
  @ApiProperty({ example: '스마트 워치 7' }) name: string;
  @ApiProperty({ nullable: true, type: String, example: 'Sampletech' }) brand: string | null;
  @ApiProperty({ nullable: true, type: String, example: '45 mm case, GPS' }) description: string | null;
  @ApiProperty({ example: 'https://shop.example.com/goods/SW-7' }) url: string;
  @ApiProperty({ example: 'SW-7' }) sku: string;
  @ApiPropertyOptional({
    nullable: true,
    type: String,
    description: 'Returned by register, update, sync and the look-ups; absent in list items',
    example: 'https://cdn.example.com/sw7.jpg',
  })
  mediaUrl?: string | null;
  @ApiProperty({ type: [MediaResponse] }) medias: MediaResponse[];
  @ApiProperty({ type: Number, example: 399000, description: '0 when the item has no price' }) originalPrice: number;
  @ApiProperty({ type: Number, example: 359100, description: '0 when the item has no price' }) discountedPrice: number;
  @ApiProperty({ example: 'KRW', description: "The customer's currency (ISO 4217)" }) currency: string;
  @ApiProperty({ type: Number, example: 10, description: '0 when none is set' }) discountPercentage: number;
}

export class GoodsListResponse {
  @ApiProperty({ type: [GoodsResponse] }) results: GoodsResponse[];
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Number of all matches, not only this page' }) totalCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

export class DeleteResponse {
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

/** What a response needs besides the item: the customer's currency and the base of absolute URLs. */
export interface GoodsView {
  currency: string;
  baseUrl: string;
}

export interface GoodsResponseOptions {
  media?: Media | null;
  /** false for list items (list items omit mediaUrl). */
  withMediaUrl?: boolean;
  /** true on the register response (thumbnails carry fileSize). */
  withFileSize?: boolean;
}

export function toGoodsResponse(goods: Goods, view: GoodsView, options: GoodsResponseOptions = {}): GoodsResponse {
  const mediaUrl = options.withMediaUrl === false ? {} : { mediaUrl: goods.mediaUrl };
  return {
    id: goods.id,
    name: goods.name,
    brand: goods.brand,
    description: goods.description,
    url: goods.url,
    sku: goods.sku,
    ...mediaUrl,
    medias: options.media ? [toMediaResponse(options.media, view.baseUrl, options.withFileSize)] : [],
    // Numbers, as the interface types them: a price or percentage never set (or cleared) reads 0.
    originalPrice: goods.originalPrice ?? 0,
    discountedPrice: goods.discountedPrice ?? 0,
    currency: view.currency,
    discountPercentage: goods.discountPercentage ?? 0,
  };
}
