import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { Goods } from '../entities/goods.entity';

export class ThumbnailResponse {
  @ApiProperty({ example: 'https://live.example.com/media/ab/abcd-120.jpg' }) imageUrl: string;
  @ApiProperty({ example: false }) original: boolean;
  @ApiProperty({ example: 120 }) width: number;
  @ApiProperty({ example: 120 }) height: number;
  @ApiProperty({ example: 5120, description: 'bytes' }) size: number;
  @ApiPropertyOptional({ example: 5120, description: 'bytes; on the register response' }) fileSize?: number;
}

export class MediaResponse {
  @ApiProperty({ format: 'int64', example: 77 }) id: number;
  @ApiProperty({ example: 'IMAGE' }) mediaType: string;
  @ApiProperty({ example: 'https://live.example.com/media/ab/abcd.jpg' }) url: string;
  @ApiProperty({ example: 183422, description: 'bytes' }) size: number;
  @ApiProperty({ example: 1200 }) width: number;
  @ApiProperty({ example: 1200 }) height: number;
  @ApiProperty({ type: [ThumbnailResponse] }) thumbnails: ThumbnailResponse[];
}

/** A goods item as the interface returns it. */
export class GoodsResponse {
  @ApiProperty({ format: 'int64', example: 1024 }) id: number;
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
  @ApiProperty({ nullable: true, type: Number, example: 399000 }) originalPrice: number | null;
  @ApiProperty({ nullable: true, type: Number, example: 359100 }) discountedPrice: number | null;
  @ApiProperty({ example: 'KRW', description: "The customer's currency (ISO 4217)" }) currency: string;
  @ApiProperty({ nullable: true, type: Number, example: 10 }) discountPercentage: number | null;
}

export class GoodsListResponse {
  @ApiProperty({ type: [GoodsResponse] }) results: GoodsResponse[];
  @ApiProperty({ example: 1, description: 'Number of all matching goods' }) totalCount: number;
  @ApiProperty({ example: 0 }) _s: number;
}

export class DeleteResponse {
  @ApiProperty({ example: 0 }) _s: number;
}

export function toGoodsResponse(goods: Goods, currency: string, withMediaUrl = true): GoodsResponse {
  const mediaUrl = withMediaUrl ? { mediaUrl: goods.mediaUrl } : {};
  return {
    id: goods.id,
    name: goods.name,
    brand: goods.brand,
    description: goods.description,
    url: goods.url,
    sku: goods.sku,
    ...mediaUrl,
    medias: [],
    originalPrice: goods.originalPrice,
    discountedPrice: goods.discountedPrice,
    currency,
    discountPercentage: goods.discountPercentage,
  };
}
