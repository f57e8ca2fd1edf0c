import { Controller, Get, Param, Res, StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/decorators';
import { ApiError, PublicRoute } from '../http/api-docs.decorators';
import { ApiException } from '../common/errors/api.exception';
import { MediaStorage } from './media-storage';

const KEY = /^[0-9a-f]{2}\/[0-9a-f]{64}(-\d{1,4}(-up)?)?\.(jpg|png|webp|gif|avif|heic|tiff)$/;
const TYPES: Record<string, string> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  avif: 'image/avif',
  heic: 'image/heif',
  tiff: 'image/tiff',
};

/** Serves stored media files. Their names are their checksums, so they never change: cached for a year. */
@ApiTags('Media')
@Public()
@PublicRoute(429)
@Controller('media')
export class MediaController {
  constructor(private readonly storage: MediaStorage) {}

  @Get('*key')
  @ApiOperation({
    summary: 'A hosted image or thumbnail (URLs come from Goods.medias)',
    description:
      "The bytes of a stored image or thumbnail, named by its content's SHA-256, so it never changes (cached for a year). " +
      'Media.url and Thumbnail.imageUrl give the whole address; the key is its part after /media/. An unknown key is ' +
      'a JSON 404 -404.',
  })
  @ApiParam({
    name: 'key',
    description:
      'The file key: two hex digits, a slash, the SHA-256 in hex, an optional -<width> (-<width>-up for a thumbnail enlarged from a narrower image) and the extension. The slash may be ' +
      'sent as is (as in Media.url) or percent-encoded (%2F, as generated clients send it).',
    schema: { type: 'string', pattern: KEY.source, example: `b1/${'b110286a'.repeat(8)}-240.jpg` },
  })
  @ApiOkResponse({
    description: 'The file, its Content-Type following the format',
    headers: {
      'Cache-Control': {
        description: 'Named by its checksum, a file never changes',
        schema: { type: 'string', example: 'public, max-age=31536000, immutable' },
      },
    },
    content: Object.fromEntries([...new Set(Object.values(TYPES))].map((type) => [type, { schema: { type: 'string', format: 'binary' } }])),
  })
  @ApiError(404, '-404 no media file with that key')
  async file(@Param('key') raw: string | string[], @Res({ passthrough: true }) res: Response): Promise<StreamableFile> {
    const key = Array.isArray(raw) ? raw.join('/') : raw;
    const file = KEY.test(key) ? await this.storage.open(key) : null;
    if (!file) throw ApiException.notFound(`No media file ${key}`);
    // Named by their checksum, files never change: only a found file may be cached for good.
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const ext = key.slice(key.lastIndexOf('.') + 1);
    return new StreamableFile(file.stream, { type: TYPES[ext], length: file.size });
  }
}
