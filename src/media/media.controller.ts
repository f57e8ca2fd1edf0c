import { Controller, Get, Param, Res, StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/decorators';
import { ApiErrors } from '../http/api-docs.decorators';
import { ApiException } from '../common/errors/api.exception';
import { MediaStorage } from './media-storage';

const KEY = /^[0-9a-f]{2}\/[0-9a-f]{64}(-\d{1,4})?\.(jpg|png|webp|gif|avif|heic|tiff)$/;
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
@Controller('media')
export class MediaController {
  constructor(private readonly storage: MediaStorage) {}

  @Get('*key')
  @ApiOperation({ summary: 'A hosted image or thumbnail (URLs come from Goods.medias)' })
  @ApiParam({ name: 'key', example: '3f/3fa4….jpg' })
  @ApiProduces('image/jpeg', 'image/png', 'image/webp')
  @ApiOkResponse({ description: 'The file' })
  @ApiErrors(404)
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
