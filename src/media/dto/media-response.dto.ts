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
      '120, 240 and 480 px wide, smallest first. Never enlarged: a width the image does not reach is made at the ' +
      "image's own width, and each width is listed once (a 300 px image lists 120, 240, 300; a 100 px one lists 100).",
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
    // One entry per distinct width: an image narrower than a thumbnail size is not enlarged, so several
    // sizes can come out at the image's own width (the same file); a client picking by width needs it once.
    thumbnails: media.thumbnails
      .filter((t, i, all) => all.findIndex((o) => o.width === t.width) === i)
      .map((t) => ({
        imageUrl: mediaFileUrl(baseUrl, t.key),
        original: false,
        width: t.width,
        height: t.height,
        size: t.size,
        ...(withFileSize ? { fileSize: t.size } : {}),
      })),
  };
}
