import { Injectable } from '@nestjs/common';
import sharp, { FormatEnum, Metadata } from 'sharp';
import { WorkGate, WorkGateError } from '../common/util/work-gate';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics.service';
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
 * AVIF and HEIF are decoded whole by libheif, whatever the thumbnail needs: about 17 bytes a pixel (a
 * 784-byte AVIF of 6000 x 6000 cost 3 s and 615 MB), where a PNG or JPEG of 40 megapixels is read
 * sequentially in about 50 MB. So they get a lower pixel cap: 16 megapixels (4000 x 4000; phone photos are 12).
 */
export const HEIF_MAX_PIXELS = 16_000_000;

/**
 * The size of the thumbnail `width` px wide of a displayed `srcWidth` x `srcHeight` image: the aspect ratio
 * kept, the height rounded and at least 1. Enlarges when the image is narrower.
 */
export function thumbnailSize(srcWidth: number, srcHeight: number, width: number): { width: number; height: number } {
  return { width, height: Math.max(1, Math.round((width * srcHeight) / srcWidth)) };
}

/** Images waiting for a turn to be decoded, all requests together; one more is refused at once. */
export const MAX_WAITING = 256;

/**
 * Turns fetched bytes into thumbnails with sharp (libvips, off the event loop). The header is read
 * first: no decoding happens for a non-image or for one over the pixel cap or the side cap. Thumbnails are always
 * three, exactly 120, 240 and 480 px wide (docs/api-reference.md, Media and Thumbnail), EXIF orientation applied, aspect ratio kept (height
 * rounded, at least 1): an image narrower than a width is enlarged to it (a 100 x 50 image gives 120 x 60,
 * 240 x 120 and 480 x 240). No thumbnail may be larger than an original may be: an image whose 480 px thumbnail
 * would be taller than MEDIA_MAX_SIDE or over MEDIA_MAX_PIXELS (a shape over about 34:1, e.g. 1 x 16,384 -> 480 x
 * 7,864,320) is refused from its header, so the item is saved without image. JPEG, PNG and WebP keep their format;
 * others become PNG (with alpha) or JPEG.
 *
 * Each image holds one thread of libuv's pool from its header to its last thumbnail (the steps run one
 * after another), and at most MEDIA_PROCESS_CONCURRENCY images are in that state at once in this
 * process, so the pool (UV_THREADPOOL_SIZE, 4 by default) always has threads left for file reads, DNS
 * and compression. An image's wait for its turn and its decoding share one deadline
 * (MEDIA_PROCESS_TIMEOUT_MS): past it the caller gets a MediaError at once, libvips is told to stop
 * (sharp's timeout), and the turn is given back only when libvips has really let go of its thread.
 */
@Injectable()
export class ImageProcessor {
  private readonly gate: WorkGate;

  constructor(
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    this.gate = new WorkGate(config.media.processConcurrency, MAX_WAITING);
    metrics.countGate('image', this.gate);
  }

  async process(bytes: Buffer): Promise<ProcessedImage> {
    const timeoutMs = this.config.media.processTimeoutMs;
    try {
      return await this.gate.run(Date.now() + timeoutMs, (remainingMs) => this.processNow(bytes, remainingMs));
    } catch (err) {
      if (!(err instanceof WorkGateError)) throw err;
      this.metrics.workRefusals.inc({ work: 'image', reason: err.reason });
      if (err.reason === 'full') throw new MediaError('too many images are waiting to be processed on this server; try again later');
      if (err.reason === 'waited') throw new MediaError(`no turn to process the image within ${timeoutMs} ms (the server is busy); try again later`);
      throw new MediaError(`processing the image took more than ${timeoutMs} ms`);
    }
  }

  private async processNow(bytes: Buffer, remainingMs: number): Promise<ProcessedImage> {
    // sharp counts whole seconds (at least 1); the gate answers at the deadline itself.
    const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
    let meta: Metadata;
    try {
      meta = await sharp(bytes, { limitInputPixels: false }).metadata();
    } catch {
      throw new MediaError('the file is not an image (its header cannot be read)');
    }
    // libheif reads AVIF and HEIF alike and sharp names both `heif`; the codec tells them apart (an AVIF
    // served as image/heif with nosniff is not shown by browsers that show AVIF).
    const format = meta.format === 'heif' && meta.compression === 'av1' ? 'avif' : meta.format;
    const kind = format ? ACCEPTED[format] : undefined;
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
    if (meta.format === 'heif' && pixels > HEIF_MAX_PIXELS) {
      throw new MediaError(
        `image is ${meta.width}x${meta.height} AVIF/HEIF (${(pixels / 1e6).toFixed(1)} megapixels); ` +
          `the limit for AVIF and HEIF is ${(HEIF_MAX_PIXELS / 1e6).toFixed(0)} megapixels`,
      );
    }
    const rotated = (meta.orientation ?? 1) >= 5;
    const width = rotated ? meta.height : meta.width;
    const height = rotated ? meta.width : (meta.pageHeight ?? meta.height);
    const largest = THUMBNAIL_WIDTHS[THUMBNAIL_WIDTHS.length - 1];
    // Thumbnails are enlarged to their width, so a narrow, tall image makes a thumbnail taller than itself
    // (1 x 16,384 would give 480 x 7,864,320): none may exceed the limits an original must meet.
    const big = thumbnailSize(width, height, largest);
    const over =
      big.width > maxSide || big.height > maxSide
        ? `${maxSide} px a side`
        : big.width * big.height > maxPixels
          ? `${(maxPixels / 1e6).toFixed(0)} megapixels`
          : null;
    if (over) {
      throw new MediaError(`image is ${width}x${height}; its ${largest} px wide thumbnail would be ${big.width}x${big.height}, over the limit of ${over}`);
    }

    const out: keyof FormatEnum = meta.format === 'jpeg' || meta.format === 'png' || meta.format === 'webp' ? meta.format : meta.hasAlpha ? 'png' : 'jpeg';
    try {
      // Decode once, scaled down to the largest thumbnail size when wider (JPEG shrink-on-load makes that
      // cheap), at its own size when narrower (the pixels are never more than the original's), then derive
      // the three thumbnails from those pixels, enlarging where needed. sequentialRead: rows are read top to
      // bottom and dropped once scaled (sharp's default, kept explicit).
      let decoder = sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error', autoOrient: true, sequentialRead: true }).timeout({ seconds });
      if (width > largest) decoder = decoder.resize({ width: largest });
      const decoded = await decoder.raw().toBuffer({ resolveWithObject: true });
      const raw = { width: decoded.info.width, height: decoded.info.height, channels: decoded.info.channels };
      const thumbnails: ImageFile[] = [];
      // One after another: this image holds one thread of the pool, not three.
      for (const w of THUMBNAIL_WIDTHS) {
        // Scaled down: by width, as before this change (the same file as then, under the same key). Enlarged
        // (the image is narrower than w, decoded at its own size): to exactly thumbnailSize(), the size the
        // check above was made with.
        const size = thumbnailSize(width, height, w);
        const { data, info } = await sharp(decoded.data, { raw })
          .timeout({ seconds })
          .resize(w <= raw.width ? { width: w } : { width: size.width, height: size.height, fit: 'fill' })
          .toFormat(out, out === 'jpeg' ? { quality: 82 } : out === 'webp' ? { quality: 80 } : {})
          .toBuffer({ resolveWithObject: true });
        thumbnails.push({ data, width: info.width, height: info.height, ext: ACCEPTED[out].ext });
      }
      return { contentType: kind.contentType, ext: kind.ext, width, height, thumbnails };
    } catch (err) {
      throw new MediaError(`the image cannot be decoded: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    }
  }
}
