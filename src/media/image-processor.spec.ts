import sharp from 'sharp';
import { pngBomb } from '../../test/support/image-server';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics.service';
import { WorkGate } from '../common/util/work-gate';
import { HEIF_MAX_PIXELS, ImageProcessor, MAX_WAITING, ProcessedImage, THUMBNAIL_WIDTHS, thumbnailSize } from './image-processor';
import { MediaError } from './media.errors';

const RED = [220, 20, 20];
const BLUE = [20, 20, 220];
const FORMAT_OF_EXT: Record<string, string> = { jpg: 'jpeg', png: 'png', webp: 'webp' };

/** Shared by every processor of this file; the last one made is what livegoods_work_slots reads. */
const metrics = new Metrics();
afterAll(() => metrics.onModuleDestroy());

function processor(maxPixels = 40_000_000, maxSide = 16_384, processConcurrency = 2, processTimeoutMs = 10_000): ImageProcessor {
  return new ImageProcessor({ media: { maxPixels, maxSide, processConcurrency, processTimeoutMs } } as unknown as AppConfig, metrics);
}

/** livegoods_work_refusals_total{work="image",reason} so far. */
async function refusals(reason: 'full' | 'waited' | 'ran'): Promise<number> {
  const { values } = await metrics.workRefusals.get();
  return values.find((v) => v.labels.work === 'image' && v.labels.reason === reason)?.value ?? 0;
}

/** livegoods_work_slots{work="image"} as a scrape reads it. */
async function slots(): Promise<Record<string, number>> {
  const text = await metrics.registry.getSingleMetricAsString('livegoods_work_slots');
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^livegoods_work_slots\{work="image",state="(\w+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** The processor's gate (at most MEDIA_PROCESS_CONCURRENCY images at once), to fill it from a test. */
function gateOf(p: ImageProcessor): WorkGate {
  return (p as unknown as { gate: WorkGate }).gate;
}

/** A w x h picture: left half red, right half blue (so orientation can be checked by colour). */
function halves(width: number, height: number): sharp.Sharp {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i += 1) raw.set(i % width < width / 2 ? RED : BLUE, i * 3);
  return sharp(raw, { raw: { width, height, channels: 3 } });
}

function plain(width: number, height: number, channels: 3 | 4 = 3): sharp.Sharp {
  return sharp({ create: { width, height, channels, background: { r: 40, g: 120, b: 200, alpha: 0.5 } } });
}

async function pixel(data: Buffer, x: number, y: number): Promise<number[]> {
  const { data: raw, info } = await sharp(data).raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return [...raw.subarray(i, i + 3)];
}

function near(actual: number[], expected: number[]): boolean {
  return actual.every((v, i) => Math.abs(v - expected[i]) <= 40);
}

async function failure(work: Promise<unknown>): Promise<MediaError> {
  try {
    await work;
  } catch (err) {
    expect(err).toBeInstanceOf(MediaError);
    return err as MediaError;
  }
  throw new Error('expected a MediaError');
}

/** Every thumbnail decodes as its claimed format and size, carries no orientation, keeps the ratio. */
async function checkThumbnails(out: ProcessedImage, expected: Array<[number, number]>): Promise<void> {
  expect(out.thumbnails.map((t) => [t.width, t.height])).toEqual(expected);
  for (const t of out.thumbnails) {
    const meta = await sharp(t.data).metadata();
    expect({ width: meta.width, height: meta.height, format: meta.format }).toEqual({
      width: t.width,
      height: t.height,
      format: FORMAT_OF_EXT[t.ext],
    });
    expect(meta.orientation ?? 1).toBe(1);
    expect(Math.abs(t.height - (t.width * out.height) / out.width)).toBeLessThanOrEqual(1);
    expect(t.height).toBeGreaterThanOrEqual(1);
  }
  expect(out.thumbnails.map((t) => t.width)).toEqual([...THUMBNAIL_WIDTHS]);
}

describe('ImageProcessor', () => {
  it('makes 120, 240 and 480 px wide JPEG thumbnails of a landscape JPEG', async () => {
    const bytes = await halves(800, 600).jpeg().toBuffer();
    const out = await processor().process(bytes);
    expect({ contentType: out.contentType, ext: out.ext, width: out.width, height: out.height }).toEqual({
      contentType: 'image/jpeg',
      ext: 'jpg',
      width: 800,
      height: 600,
    });
    expect(out.thumbnails.map((t) => t.ext)).toEqual(['jpg', 'jpg', 'jpg']);
    await checkThumbnails(out, [
      [120, 90],
      [240, 180],
      [480, 360],
    ]);
    // The picture itself is scaled, not cropped: left stays red, right stays blue.
    expect(near(await pixel(out.thumbnails[2].data, 10, 180), RED)).toBe(true);
    expect(near(await pixel(out.thumbnails[2].data, 470, 180), BLUE)).toBe(true);
  });

  it('keeps PNG (with its alpha channel) and WebP as they are', async () => {
    const png = await processor().process(await plain(1000, 500, 4).png().toBuffer());
    expect([png.contentType, png.ext, png.width, png.height]).toEqual(['image/png', 'png', 1000, 500]);
    expect(png.thumbnails.map((t) => t.ext)).toEqual(['png', 'png', 'png']);
    expect((await sharp(png.thumbnails[0].data).metadata()).hasAlpha).toBe(true);
    await checkThumbnails(png, [
      [120, 60],
      [240, 120],
      [480, 240],
    ]);

    const webp = await processor().process(await plain(640, 480).webp().toBuffer());
    expect([webp.contentType, webp.ext, webp.width, webp.height]).toEqual(['image/webp', 'webp', 640, 480]);
    expect(webp.thumbnails.map((t) => t.ext)).toEqual(['webp', 'webp', 'webp']);
    await checkThumbnails(webp, [
      [120, 90],
      [240, 180],
      [480, 360],
    ]);
  });

  it('keeps the aspect ratio of odd sizes and of portraits', async () => {
    const wide = await processor().process(await plain(1000, 333).jpeg().toBuffer());
    await checkThumbnails(wide, [
      [120, 40],
      [240, 80],
      [480, 160],
    ]);
    const tall = await processor().process(await plain(500, 1500).png().toBuffer());
    await checkThumbnails(tall, [
      [120, 360],
      [240, 720],
      [480, 1440],
    ]);
  });

  it('enlarges smaller images: always three thumbnails, 120, 240 and 480 px wide (docs/api-reference.md, Media and Thumbnail)', async () => {
    const small = await processor().process(await halves(100, 50).png().toBuffer());
    expect([small.width, small.height]).toEqual([100, 50]);
    await checkThumbnails(small, [
      [120, 60],
      [240, 120],
      [480, 240],
    ]);
    // Enlarged, not padded: the picture fills the thumbnail (left red, right blue).
    expect(near(await pixel(small.thumbnails[2].data, 10, 120), RED)).toBe(true);
    expect(near(await pixel(small.thumbnails[2].data, 470, 120), BLUE)).toBe(true);
    const tiny = await processor().process(await plain(50, 30).png().toBuffer());
    await checkThumbnails(tiny, [
      [120, 72],
      [240, 144],
      [480, 288],
    ]);
    const mid = await processor().process(await plain(300, 200).jpeg().toBuffer());
    await checkThumbnails(mid, [
      [120, 80],
      [240, 160],
      [480, 320],
    ]);
    const exact = await processor().process(await plain(120, 80).jpeg().toBuffer());
    await checkThumbnails(exact, [
      [120, 80],
      [240, 160],
      [480, 320],
    ]);
    // Heights rounded (7 x 3: 51.4, 102.9, 205.7), and at least 1 (4000 x 1).
    await checkThumbnails(await processor().process(await plain(7, 3).png().toBuffer()), [
      [120, 51],
      [240, 103],
      [480, 206],
    ]);
    await checkThumbnails(await processor().process(await plain(4000, 1).png().toBuffer()), [
      [120, 1],
      [240, 1],
      [480, 1],
    ]);
    expect(thumbnailSize(1, 1, 480)).toEqual({ width: 480, height: 480 });
  });

  it('refuses from its header an image whose enlarged 480 px thumbnail would be over the side cap (1 x 16,384)', async () => {
    const needle = await plain(1, 16_384).png({ compressionLevel: 9 }).toBuffer();
    const started = Date.now();
    expect((await failure(processor().process(needle))).message).toBe(
      'image is 1x16384; its 480 px wide thumbnail would be 480x7864320, over the limit of 16384 px a side',
    );
    expect(Date.now() - started).toBeLessThan(1000);
    // 480 x 16,384 exactly is taken (the tallest thumbnail an image at the side cap already had), one pixel more is not.
    const atCap = await processor().process(await plain(15, 512).png().toBuffer());
    await checkThumbnails(atCap, [
      [120, 4096],
      [240, 8192],
      [480, 16384],
    ]);
    expect((await failure(processor().process(await plain(15, 513).png().toBuffer()))).message).toBe(
      'image is 15x513; its 480 px wide thumbnail would be 480x16416, over the limit of 16384 px a side',
    );
  });

  it('refuses an image whose 480 px thumbnail would be over the pixel cap', async () => {
    // 100 x 500 is 0.05 megapixels, its 480 x 2400 thumbnail 1.15: over a cap of 1 megapixel.
    const bytes = await plain(100, 500).png().toBuffer();
    expect((await failure(processor(1_000_000).process(bytes))).message).toBe(
      'image is 100x500; its 480 px wide thumbnail would be 480x2400, over the limit of 1 megapixels',
    );
    expect((await processor(1_152_000).process(bytes)).thumbnails[2].height).toBe(2400);
  });

  it('applies EXIF orientation 6 (rotate 90° clockwise): size and pixels as displayed', async () => {
    const bytes = await halves(600, 400).jpeg({ quality: 95 }).withMetadata({ orientation: 6 }).toBuffer();
    const out = await processor().process(bytes);
    expect([out.width, out.height]).toEqual([400, 600]);
    await checkThumbnails(out, [
      [120, 180],
      [240, 360],
      [480, 720],
    ]);
    for (const t of out.thumbnails) {
      // The stored left (red) half is displayed on top.
      expect(near(await pixel(t.data, Math.floor(t.width / 2), 5), RED)).toBe(true);
      expect(near(await pixel(t.data, Math.floor(t.width / 2), t.height - 5), BLUE)).toBe(true);
    }
  });

  it('applies EXIF orientations 8 and 3 as well', async () => {
    const eight = await processor().process(await halves(600, 400).jpeg({ quality: 95 }).withMetadata({ orientation: 8 }).toBuffer());
    expect([eight.width, eight.height]).toEqual([400, 600]);
    const t8 = eight.thumbnails[0];
    expect([t8.width, t8.height]).toEqual([120, 180]);
    expect(near(await pixel(t8.data, 60, 5), BLUE)).toBe(true);
    expect(near(await pixel(t8.data, 60, 174), RED)).toBe(true);

    const three = await processor().process(await halves(600, 400).jpeg({ quality: 95 }).withMetadata({ orientation: 3 }).toBuffer());
    expect([three.width, three.height]).toEqual([600, 400]);
    const t3 = three.thumbnails[1];
    expect([t3.width, t3.height]).toEqual([240, 160]);
    expect(near(await pixel(t3.data, 5, 80), BLUE)).toBe(true);
    expect(near(await pixel(t3.data, 234, 80), RED)).toBe(true);
  });

  it('turns formats other than JPEG, PNG and WebP into PNG or JPEG thumbnails', async () => {
    const gif = await plain(200, 100).gif().toBuffer();
    const out = await processor().process(gif);
    expect([out.contentType, out.ext, out.width, out.height]).toEqual(['image/gif', 'gif', 200, 100]);
    for (const t of out.thumbnails) expect(['png', 'jpg']).toContain(t.ext);
    await checkThumbnails(out, [
      [120, 60],
      [240, 120],
      [480, 240],
    ]);
  });

  it('refuses a pixel bomb from its header alone, before decoding', async () => {
    const bomb = pngBomb(20000, 20000);
    expect(bomb.length).toBeLessThan(1024);
    const started = Date.now();
    const err = await failure(processor().process(bomb));
    expect(err.message).toBe('image is 20000x20000 (400.0 megapixels); the limit is 40 megapixels');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('enforces the configured pixel cap exactly', async () => {
    const bytes = await plain(1000, 1000).jpeg().toBuffer();
    const err = await failure(processor(999_999).process(bytes));
    expect(err.message).toMatch(/^image is 1000x1000 \(1\.0 megapixels\); the limit is 1 megapixels$/);
    const ok = await processor(1_000_000).process(bytes);
    expect([ok.width, ok.height]).toEqual([1000, 1000]);
  });

  it('refuses an image with a side over the cap from its header, however few its pixels (wide and tall)', async () => {
    // 20,000 x 2 and 2 x 20,000: 40,000 pixels each, far under the pixel cap; the files are a few hundred bytes.
    const wide = await plain(20_000, 2).png({ compressionLevel: 9 }).toBuffer();
    const tall = await plain(2, 20_000).png({ compressionLevel: 9 }).toBuffer();
    expect((await failure(processor().process(wide))).message).toBe('image is 20000x2; the limit is 16384 px a side');
    expect((await failure(processor().process(tall))).message).toBe('image is 2x20000; the limit is 16384 px a side');
  });

  it('enforces the configured side cap exactly, and takes an image at the cap', async () => {
    const bytes = await plain(1000, 10).png().toBuffer();
    expect((await failure(processor(40_000_000, 999).process(bytes))).message).toBe('image is 1000x10; the limit is 999 px a side');
    const ok = await processor(40_000_000, 1000).process(bytes);
    expect([ok.width, ok.height]).toEqual([1000, 10]);
    // A tall image at the cap is taken when its 480 px thumbnail fits the cap too (500 x 1000 -> 480 x 960) ...
    const tall = await processor(40_000_000, 1000).process(await plain(500, 1000).png().toBuffer());
    expect([tall.width, tall.height, tall.thumbnails[2].height]).toEqual([500, 1000, 960]);
    // ... and refused when the enlarged thumbnail would not (10 x 1000 -> 480 x 48,000).
    expect((await failure(processor(40_000_000, 1000).process(await plain(10, 1000).png().toBuffer()))).message).toBe(
      'image is 10x1000; its 480 px wide thumbnail would be 480x48000, over the limit of 1000 px a side',
    );
  });

  it('refuses an AVIF over 16 megapixels from its header (libheif decodes it whole: ~17 bytes a pixel)', async () => {
    expect(HEIF_MAX_PIXELS).toBe(16_000_000);
    const avif = await plain(4001, 4000).avif({ effort: 0 }).toBuffer();
    expect(avif.length).toBeLessThan(4096);
    const err = await failure(processor().process(avif));
    expect(err.message).toBe('image is 4001x4000 AVIF/HEIF (16.0 megapixels); the limit for AVIF and HEIF is 16 megapixels');
    const small = await processor().process(await plain(400, 300).avif({ effort: 0 }).toBuffer());
    expect([small.width, small.height]).toEqual([400, 300]);
    // Kept and served as AVIF (sharp names AVIF and HEIF both "heif"; the codec tells them apart).
    expect([small.ext, small.contentType]).toEqual(['avif', 'image/avif']);
  });

  it('decodes at most MEDIA_PROCESS_CONCURRENCY images at once; the others wait for a turn, in order', async () => {
    const p = processor(40_000_000, 16_384, 1);
    const gate = gateOf(p);
    const bytes = await plain(640, 480).jpeg().toBuffer();
    const seen: Array<[number, number]> = [];
    const watch = setInterval(() => seen.push([gate.active, gate.queued]), 1);
    const all = await Promise.all([1, 2, 3, 4].map(() => p.process(bytes)));
    clearInterval(watch);
    expect(all.map((o) => [o.width, o.height])).toEqual(Array(4).fill([640, 480]));
    expect(Math.max(...seen.map(([active]) => active))).toBe(1);
    expect(gate.active).toBe(0);
  });

  it('an image that gets no turn before MEDIA_PROCESS_TIMEOUT_MS is refused, and never decoded', async () => {
    const p = processor(40_000_000, 16_384, 1, 100);
    let release!: () => void;
    const held = gateOf(p).run(Date.now() + 60_000, () => new Promise<void>((resolve) => (release = resolve)));
    const bytes = await plain(640, 480).jpeg().toBuffer();
    const before = await refusals('waited');
    const err = await failure(p.process(bytes));
    expect(err.message).toBe('no turn to process the image within 100 ms (the server is busy); try again later');
    expect(gateOf(p).queued).toBe(0);
    expect(await refusals('waited')).toBe(before + 1);
    release();
    await held;
    expect((await p.process(bytes)).width).toBe(640);
  });

  it(`refuses at once when ${MAX_WAITING} images already wait for a turn`, async () => {
    const p = processor(40_000_000, 16_384, 1, 60_000);
    const gate = gateOf(p);
    let release!: () => void;
    const held = gate.run(Date.now() + 60_000, () => new Promise<void>((resolve) => (release = resolve)));
    const bytes = await plain(64, 48).png().toBuffer();
    const waiting = Array.from({ length: MAX_WAITING }, () => p.process(bytes));
    expect(gate.queued).toBe(MAX_WAITING);
    expect(await slots()).toEqual({ active: 1, waiting: MAX_WAITING, limit: 1 });
    const before = await refusals('full');
    const err = await failure(p.process(bytes));
    expect(err.message).toBe('too many images are waiting to be processed on this server; try again later');
    expect(await refusals('full')).toBe(before + 1);
    release();
    await held;
    expect((await Promise.all(waiting)).length).toBe(MAX_WAITING);
  });

  it('an image still decoding at the deadline is refused then; its turn is given back when libvips lets go', async () => {
    const p = processor(40_000_000, 16_384, 1, 1);
    const gate = gateOf(p);
    const bytes = await plain(3000, 3000).png().toBuffer();
    const err = await failure(p.process(bytes));
    expect(err.message).toMatch(/^(processing the image took more than 1 ms|no turn to process the image within 1 ms.*)$/);
    // The decode is not abandoned on its thread: the turn stays taken until it ends.
    for (let i = 0; i < 500 && gate.active > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(gate.active).toBe(0);
  });

  it('refuses what is not an image, with a clear message', async () => {
    const text = await failure(processor().process(Buffer.from('hello, I am not a picture at all')));
    expect(text.message).toBe('the file is not an image (its header cannot be read)');
    const empty = await failure(processor().process(Buffer.alloc(0)));
    expect(empty.message).toMatch(/not an image/);
    const html = await failure(processor().process(Buffer.from('<!doctype html><html><body>404</body></html>')));
    expect(html.message).toMatch(/not an image/);
  });

  it('refuses SVG (not an accepted format)', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100"/></svg>');
    const err = await failure(processor().process(svg));
    expect(err.message).toBe('unsupported image format: svg');
  });

  it('refuses a truncated JPEG whose header is fine', async () => {
    const jpeg = await halves(800, 600).jpeg().toBuffer();
    const err = await failure(processor().process(jpeg.subarray(0, Math.floor(jpeg.length / 2))));
    expect(err.message).toMatch(/^the image cannot be decoded: .*(premature end|truncated)/i);
  });
});
