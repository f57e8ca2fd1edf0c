import { Injectable } from '@nestjs/common';
import sharp, { FormatEnum, Metadata } from 'sharp';
import { AppConfig } from '../config/app-config';
import { MediaError } from './media.errors';

export const THUMBNAIL_WIDTHS = [120, 240, 480] as const;

export interface ImageFile {
  data: Buffer;
  width: number;
  height: number;
  ext: string;
}

export interface ProcessedImage {
  contentType: string;
  ext: string;
  /** Displayed size (EXIF orientation applied). */
  width: number;
  height: number;
  thumbnails: ImageFile[];
}

const ACCEPTED: Record<string, { ext: string; contentType: string }> = {
  jpeg: { ext: 'jpg', contentType: 'image/jpeg' },
  png: { ext: 'png', contentType: 'image/png' },
  webp: { ext: 'webp', contentType: 'image/webp' },
  gif: { ext: 'gif', contentType: 'image/gif' },
  avif: { ext: 'avif', contentType: 'image/avif' },
  heif: { ext: 'heic', contentType: 'image/heif' },
  tiff: { ext: 'tiff', contentType: 'image/tiff' },
};

/**
 * Turns fetched bytes into thumbnails with sharp (libvips, off the event loop). The header is read
 * first: no decoding happens for a non-image or for one over the pixel cap or the side cap. Thumbnails are 120, 240 and
 * 480 px wide, EXIF orientation applied, aspect ratio kept, never enlarged: a small image yields three
 * thumbnails of its own size. JPEG, PNG and WebP keep their format; others become PNG (with alpha) or JPEG.
 */
@Injectable()
export class ImageProcessor {
  constructor(private readonly config: AppConfig) {}

  async process(bytes: Buffer): Promise<ProcessedImage> {
    let meta: Metadata;
    try {
      meta = await sharp(bytes, { limitInputPixels: false }).metadata();
    } catch {
      throw new MediaError('the file is not an image (its header cannot be read)');
    }
    const kind = meta.format ? ACCEPTED[meta.format] : undefined;
    if (!kind || !meta.width || !meta.height) {
      throw new MediaError(`unsupported image format: ${meta.format ?? 'unknown'}`);
    }
    const pixels = meta.width * (meta.pageHeight ?? meta.height);
    const { maxPixels, maxSide } = this.config.media;
    if (pixels > maxPixels) {
      throw new MediaError(
        `image is ${meta.width}x${meta.pageHeight ?? meta.height} (${(pixels / 1e6).toFixed(1)} megapixels); ` +
          `the limit is ${(maxPixels / 1e6).toFixed(0)} megapixels`,
      );
    }
    // A very long side is what costs: a 10,000,000 x 4 PNG (40 megapixels, 117 KB) took 12 s and 3.5 GB
    // to scale to 480 px wide, a 1 x 20,000,000 one 11 s of a thread; at 16,384 px a side, 20 ms and 1 MB.
    if (meta.width > maxSide || (meta.pageHeight ?? meta.height) > maxSide) {
      throw new MediaError(`image is ${meta.width}x${meta.pageHeight ?? meta.height}; the limit is ${maxSide} px a side`);
    }
    const rotated = (meta.orientation ?? 1) >= 5;
    const width = rotated ? meta.height : meta.width;
    const height = rotated ? meta.width : (meta.pageHeight ?? meta.height);

    const out: keyof FormatEnum = meta.format === 'jpeg' || meta.format === 'png' || meta.format === 'webp' ? meta.format : meta.hasAlpha ? 'png' : 'jpeg';
    try {
      // Decode once, at the largest thumbnail size (JPEG shrink-on-load makes that cheap), then derive
      // the three thumbnails from those pixels.
      const largest = THUMBNAIL_WIDTHS[THUMBNAIL_WIDTHS.length - 1];
      const decoded = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error', autoOrient: true })
        .resize({ width: largest, withoutEnlargement: true })
        .raw()
        .toBuffer({ resolveWithObject: true });
      const raw = { width: decoded.info.width, height: decoded.info.height, channels: decoded.info.channels };
      const thumbnails = await Promise.all(
        THUMBNAIL_WIDTHS.map(async (w) => {
          const { data, info } = await sharp(decoded.data, { raw })
            .resize({ width: w, withoutEnlargement: true })
            .toFormat(out, out === 'jpeg' ? { quality: 82 } : out === 'webp' ? { quality: 80 } : {})
            .toBuffer({ resolveWithObject: true });
          return { data, width: info.width, height: info.height, ext: ACCEPTED[out].ext };
        }),
      );
      return { contentType: kind.contentType, ext: kind.ext, width, height, thumbnails };
    } catch (err) {
      throw new MediaError(`the image cannot be decoded: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    }
  }
}
