import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { Media } from '../entities/media.entity';

export class ThumbnailResponse {
  @ApiProperty({ example: 'https://live.example.com/media/3f/3fa4…-120.jpg' }) imageUrl: string;
  @ApiProperty({ enum: [false], example: false, description: 'Always false' }) original: boolean;
  @ApiProperty({ type: 'integer', format: 'int32', example: 120, description: 'pixels' }) width: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 120, description: 'pixels' }) height: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 5120, description: 'bytes' }) size: number;
  @ApiPropertyOptional({ type: 'integer', format: 'int64', example: 5120, description: 'bytes, the same as size; only in the answer of register' })
  fileSize?: number;
}

export class MediaResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 77 }) id: number;
  @ApiProperty({ enum: ['IMAGE'], example: 'IMAGE' }) mediaType: string;
  @ApiProperty({ example: 'https://live.example.com/media/3f/3fa4….jpg', description: 'The service-hosted copy' }) url: string;
  @ApiProperty({ type: 'integer', format: 'int64', example: 183422, description: 'bytes' }) size: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1200, description: 'pixels (after EXIF orientation)' }) width: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1200, description: 'pixels (after EXIF orientation)' }) height: number;
  @ApiProperty({
    type: [ThumbnailResponse],
    description:
      'Always three: 120, 240 and 480 px wide, in that order, aspect ratio kept (height rounded, at least 1); an image ' +
      'narrower than a width is enlarged to it (a 100 x 50 image lists 120 x 60, 240 x 120 and 480 x 240). Only an image ' +
      'stored before thumbnails were enlarged and not stored again since lists its three files at their real, smaller widths.',
  })
  thumbnails: ThumbnailResponse[];
}

export function mediaFileUrl(baseUrl: string, key: string): string {
  return `${baseUrl}/media/${key}`;
}

export function toMediaResponse(media: Media, baseUrl: string, withFileSize = false): MediaResponse {
  return {
    id: media.id,
    mediaType: media.mediaType,
    url: mediaFileUrl(baseUrl, media.fileKey),
    size: media.size,
    width: media.width,
    height: media.height,
    // The stored thumbnails as they are, in THUMBNAIL_WIDTHS order: 120, 240 and 480 px wide (enlarged when the
    // image is narrower). A row stored before enlarging lists its three files at their real widths (never
    // fewer entries: thumbnails[2] is always the largest, and every URL handed out is one of these files).
    thumbnails: media.thumbnails.map((t) => ({
      imageUrl: mediaFileUrl(baseUrl, t.key),
      original: false,
      width: t.width,
      height: t.height,
      size: t.size,
      ...(withFileSize ? { fileSize: t.size } : {}),
    })),
  };
}
