import { readdirSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join, relative } from 'node:path';
import sharp from 'sharp';
import type { Response } from 'supertest';
import { Media } from '../src/media/entities/media.entity';
import { HUGE_DECLARED_BYTES, ImageServer, startImageServer, watchConnections } from './support/image-server';
import { describeEngines, mysqlServer, TestApp, TestCustomer } from './support/test-app';

/**
 * Media (docs/api-reference.md, Media and Thumbnail) against a real image server on loopback:
 * stored copies and thumbnails, serving, refetch rules, replacement and removal, hostile inputs, and
 * the address guard with private hosts refused.
 */

type Body = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CACHE_CONTROL = 'public, max-age=31536000, immutable';
const MEDIA_KEYS = ['height', 'id', 'mediaType', 'size', 'thumbnails', 'url', 'width'];
const THUMB_KEYS = ['height', 'imageUrl', 'original', 'size', 'width'];
const CONTENT_TYPE: Record<string, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };
const EXT: Record<string, string> = { jpeg: 'jpg', png: 'png', webp: 'webp' };

interface Expected {
  bytes: Buffer;
  format: 'jpeg' | 'png' | 'webp';
  width: number;
  height: number;
  thumbs: Array<[number, number]>;
}

let images: ImageServer;
let connections: ReturnType<typeof watchConnections>;

beforeAll(async () => {
  images = await startImageServer();
  connections = watchConnections([mysqlServer.host]);
});

afterAll(async () => {
  connections?.restore();
  await images?.close();
});

const PHOTO = (): Expected => ({
  bytes: images.fixtures.photo,
  format: 'jpeg',
  width: 800,
  height: 600,
  thumbs: [
    [120, 90],
    [240, 180],
    [480, 360],
  ],
});
const VARIANT = (tag: string): Expected => ({ ...PHOTO(), bytes: images.variant(tag) });

function item(n: number | string, extra: Body = {}): Body {
  return { name: `Item ${n}`, sku: `SKU-${n}`, url: `https://shop.example.com/goods/${n}`, ...extra };
}

function binary(res: NodeJS.ReadableStream, done: (err: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}

/** GETs a media URL from the app under test (by its path; the host part is checked separately). */
function download(t: TestApp, url: string) {
  return t.http
    .get(new URL(url).pathname)
    .buffer(true)
    .parse(binary as unknown as Parameters<ReturnType<TestApp['http']['get']>['parse']>[0]);
}

function keyOf(url: string): string {
  return new URL(url).pathname.replace(/^\/media\//, '');
}

/** Every media file URL of a Media response: the original, then the three thumbnails. */
function fileUrls(media: Body): string[] {
  return [media.url, ...media.thumbnails.map((t: Body) => t.imageUrl)];
}

function filesOnDisk(t: TestApp): string[] {
  const root = t.config.media.dir;
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else out.push(relative(root, join(dir, e.name)));
    }
  };
  walk(root);
  return out.sort();
}

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Checks one Media object completely: shape, sizes, absolute URLs under `base`, and every file served
 * back (original byte for byte; thumbnails decoded: true width/height/format, size = served bytes).
 */
async function checkMedia(t: TestApp, medias: Body[], e: Expected, opts: { base: string | RegExp; fileSize?: boolean }): Promise<Body> {
  expect(medias).toHaveLength(1);
  const m = medias[0];
  expect(Object.keys(m).sort()).toEqual(MEDIA_KEYS);
  expect(Number.isSafeInteger(m.id)).toBe(true);
  expect({ mediaType: m.mediaType, size: m.size, width: m.width, height: m.height }).toEqual({
    mediaType: 'IMAGE',
    size: e.bytes.length,
    width: e.width,
    height: e.height,
  });
  const base = typeof opts.base === 'string' ? escapeRe(opts.base) : opts.base.source;
  expect(m.url).toMatch(new RegExp(`^${base}/media/[^?#]+\\.${EXT[e.format]}$`));

  const original = await download(t, m.url);
  expect(original.status).toBe(200);
  expect(original.headers['content-type']).toBe(CONTENT_TYPE[e.format]);
  expect(original.headers['cache-control']).toBe(CACHE_CONTROL);
  expect(Number(original.headers['content-length'])).toBe(e.bytes.length);
  expect(Buffer.isBuffer(original.body)).toBe(true);
  expect((original.body as Buffer).equals(e.bytes)).toBe(true);

  expect(m.thumbnails).toHaveLength(e.thumbs.length);
  expect(m.thumbnails.map((th: Body) => [th.width, th.height])).toEqual(e.thumbs);
  for (const th of m.thumbnails as Body[]) {
    expect(Object.keys(th).sort()).toEqual(opts.fileSize ? [...THUMB_KEYS, 'fileSize'].sort() : THUMB_KEYS);
    expect(th.original).toBe(false);
    if (opts.fileSize) expect(th.fileSize).toBe(th.size);
    expect(th.imageUrl).toMatch(new RegExp(`^${base}/media/[^?#]+\\.${EXT[e.format]}$`));
    const file = await download(t, th.imageUrl);
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe(CONTENT_TYPE[e.format]);
    expect(file.headers['cache-control']).toBe(CACHE_CONTROL);
    const body = file.body as Buffer;
    expect(body.length).toBe(th.size);
    const meta = await sharp(body).metadata();
    expect({ width: meta.width, height: meta.height, format: meta.format, orientation: meta.orientation ?? 1 }).toEqual({
      width: th.width,
      height: th.height,
      format: e.format,
      orientation: 1,
    });
  }
  expect(new Set(fileUrls(m)).size).toBe(1 + e.thumbs.length); // the copy and one file per listed thumbnail
  return m;
}

async function expectGone(t: TestApp, media: Body): Promise<void> {
  for (const url of fileUrls(media)) {
    const res = await download(t, url);
    expect({ url, status: res.status }).toEqual({ url, status: 404 });
  }
  const disk = filesOnDisk(t);
  for (const url of fileUrls(media)) expect(disk).not.toContain(keyOf(url));
}

async function expectServed(t: TestApp, media: Body): Promise<void> {
  for (const url of fileUrls(media)) {
    const res = await download(t, url);
    expect({ url, status: res.status }).toEqual({ url, status: 200 });
  }
}

function api(t: () => TestApp, c: TestCustomer) {
  const path = `/v1/goods/${c.accessKey}`;
  return {
    register: (body: Body) => t().http.post(path).set('Authorization', c.auth()).send(body),
    update: (body: Body, by: '' | '/sku' | '/url' = '', query: Body = {}) =>
      t().http.put(`${path}${by}`).query(query).set('Authorization', c.auth()).send(body),
    sync: (body: Body[], query: Body = {}) => t().http.post(`${path}/sync`).query(query).set('Authorization', c.auth()).send(body),
    bySku: (sku: string) => t().http.get(`${path}/sku`).query({ value: sku }).set('Authorization', c.auth()),
    list: () => t().http.get(path).set('Authorization', c.auth()),
    remove: (id: number) => t().http.delete(`${path}/${id}`).set('Authorization', c.auth()),
    removeBySku: (sku: string) => t().http.delete(`${path}/sku`).query({ value: sku }).set('Authorization', c.auth()),
  };
}

async function ok(res: Promise<Response> | Response): Promise<Body> {
  const r = await res;
  expect({ status: r.status, body: r.status === 200 ? 'ok' : r.body }).toEqual({ status: 200, body: 'ok' });
  return r.body as Body;
}

/** The base URL the app derives from a supertest request (its Host header is 127.0.0.1:<port>). */
const REQUEST_HOST = /http:\/\/127\.0\.0\.1:\d+/;

describeEngines(
  'media',
  __filename,
  (ctx) => {
    describe('register: stored copy, thumbnails and served files', () => {
      it('JPEG: original byte for byte, 120/240/480 thumbnails, absolute URLs on the request host, fileSize', async () => {
        const c = await ctx().createCustomer();
        const before = images.hits('/photo.jpg');
        const mediaUrl = images.url1('/photo.jpg');
        const res = await api(ctx, c).register(item(1, { mediaUrl })).set('Host', 'shop.test:8080');
        const body = await ok(res);
        expect(body.mediaUrl).toBe(mediaUrl);
        const m = await checkMedia(ctx(), body.medias, PHOTO(), { base: 'http://shop.test:8080', fileSize: true });
        expect(images.hits('/photo.jpg')).toBe(before + 1);

        // Look-ups and lists show the same media (no fileSize there), on their own request's host.
        const read = await ok(api(ctx, c).bySku('SKU-1'));
        const again = await checkMedia(ctx(), read.medias, PHOTO(), { base: REQUEST_HOST });
        expect(again.id).toBe(m.id);
        expect(fileUrls(again).map(keyOf)).toEqual(fileUrls(m).map(keyOf));
        const list = await ok(api(ctx, c).list());
        const listed = list.results[0].medias as Body[];
        expect(listed).toHaveLength(1);
        expect(Object.keys(listed[0]).sort()).toEqual(MEDIA_KEYS);
        expect({
          ...listed[0],
          url: keyOf(listed[0].url),
          thumbnails: listed[0].thumbnails.map((th: Body) => ({ ...th, imageUrl: keyOf(th.imageUrl) })),
        }).toEqual({
          ...again,
          url: keyOf(again.url),
          thumbnails: again.thumbnails.map((th: Body) => ({ ...th, imageUrl: keyOf(th.imageUrl) })),
        });
        expect(images.hits('/photo.jpg')).toBe(before + 1);
      });

      it('PNG with alpha: PNG thumbnails that keep the alpha channel, the 480 px one enlarged from 300 px', async () => {
        const c = await ctx().createCustomer();
        const body = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/logo.png') })));
        const m = await checkMedia(
          ctx(),
          body.medias,
          {
            bytes: images.fixtures.logo,
            format: 'png',
            width: 300,
            height: 200,
            thumbs: [
              [120, 80],
              [240, 160],
              [480, 320],
            ],
          },
          { base: REQUEST_HOST, fileSize: true },
        );
        for (const th of m.thumbnails) {
          const meta = await sharp((await download(ctx(), th.imageUrl)).body as Buffer).metadata();
          expect(meta.hasAlpha).toBe(true);
        }
      });

      it('WebP: WebP thumbnails', async () => {
        const c = await ctx().createCustomer();
        const body = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url2('/pic.webp') })));
        await checkMedia(
          ctx(),
          body.medias,
          {
            bytes: images.fixtures.webp,
            format: 'webp',
            width: 640,
            height: 480,
            thumbs: [
              [120, 90],
              [240, 180],
              [480, 360],
            ],
          },
          { base: REQUEST_HOST, fileSize: true },
        );
      });

      it('EXIF orientation 6: displayed size 400x600, thumbnails turned upright, original kept as sent', async () => {
        const c = await ctx().createCustomer();
        const body = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/rotated.jpg') })));
        const m = await checkMedia(
          ctx(),
          body.medias,
          {
            bytes: images.fixtures.rotated,
            format: 'jpeg',
            width: 400,
            height: 600,
            thumbs: [
              [120, 180],
              [240, 360],
              [480, 720],
            ],
          },
          { base: REQUEST_HOST, fileSize: true },
        );
        for (const th of m.thumbnails) {
          const { data, info } = await sharp((await download(ctx(), th.imageUrl)).body as Buffer)
            .raw()
            .toBuffer({ resolveWithObject: true });
          const at = (y: number) => [
            ...data.subarray((y * info.width + (info.width >> 1)) * info.channels, (y * info.width + (info.width >> 1)) * info.channels + 3),
          ];
          // Stored left half red, right half blue; orientation 6 shows the left half on top.
          const [top, bottom] = [at(4), at(info.height - 5)];
          expect(top[0]).toBeGreaterThan(150);
          expect(top[2]).toBeLessThan(100);
          expect(bottom[2]).toBeGreaterThan(150);
          expect(bottom[0]).toBeLessThan(100);
        }
      });

      it('images narrower than 120 px (100x50, 50x30): three thumbnails enlarged to 120, 240 and 480 px wide (docs/api-reference.md, Media and Thumbnail)', async () => {
        const c = await ctx().createCustomer();
        const small = (): Expected => ({
          bytes: images.fixtures.small,
          format: 'png',
          width: 100,
          height: 50,
          thumbs: [
            [120, 60],
            [240, 120],
            [480, 240],
          ],
        });
        const body = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/small.png') })));
        const m = await checkMedia(ctx(), body.medias, small(), { base: REQUEST_HOST, fileSize: true });
        // Enlarged thumbnails have keys of their own (-<width>-up): see thumbnailKey.
        expect(m.thumbnails.map((th: Body) => keyOf(th.imageUrl).replace(/^.*-(\d+(-up)?)\..*$/, '$1'))).toEqual(['120-up', '240-up', '480-up']);
        await checkMedia(ctx(), (await ok(api(ctx, c).bySku('SKU-1'))).medias, small(), { base: REQUEST_HOST });
        const listed = (await ok(api(ctx, c).list())).results[0].medias;
        await checkMedia(ctx(), listed, small(), { base: REQUEST_HOST });
        const tiny = await ok(api(ctx, c).register(item(2, { mediaUrl: images.url1('/tiny.png') })));
        await checkMedia(
          ctx(),
          tiny.medias,
          {
            bytes: images.fixtures.tiny,
            format: 'png',
            width: 50,
            height: 30,
            thumbs: [
              [120, 72],
              [240, 144],
              [480, 288],
            ],
          },
          { base: REQUEST_HOST, fileSize: true },
        );
      });

      it('a row stored before enlarging (narrower thumbnails) is listed as stored; the same image stored again gets the three widths', async () => {
        const c = await ctx().createCustomer();
        const t = ctx();
        // An image nobody else uses, then its row turned into what the code before enlarging stored: the three
        // keys -120, -240 and -480, each a file at the image's own size.
        const bytes = await sharp({ create: { width: 90, height: 45, channels: 3, background: '#5080c0' } })
          .png()
          .toBuffer();
        images.setSwap(bytes);
        try {
          const first = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/swap.jpg?legacy') })));
          const repo = t.dataSource.getRepository(Media);
          const row = await repo.findOneByOrFail({ id: first.medias[0].id });
          const dir = row.checksum.slice(0, 2);
          for (const th of row.thumbnails) await unlink(join(t.config.media.dir, th.key));
          const legacy = [120, 240, 480].map((w) => ({ width: 90, height: 45, size: bytes.length, key: `${dir}/${row.checksum}-${w}.png` }));
          for (const th of legacy) await writeFile(join(t.config.media.dir, th.key), bytes);
          await repo.update({ id: row.id }, { thumbnails: legacy });

          // Listed as stored: three entries, every URL a file that exists, at its real size (none dropped,
          // so thumbnails[1] and thumbnails[2] exist, as the viewer summary's thumbnailUrl needs).
          const legacyExpected = (): Expected => ({
            bytes,
            format: 'png',
            width: 90,
            height: 45,
            thumbs: [
              [90, 45],
              [90, 45],
              [90, 45],
            ],
          });
          const old = await checkMedia(t, (await ok(api(ctx, c).bySku('SKU-1'))).medias, legacyExpected(), { base: REQUEST_HOST });

          // The same bytes for another item: processed again (not reused), three widths under new keys; the
          // old row and its files are untouched.
          const again = await ok(api(ctx, c).register(item(2, { mediaUrl: images.url1('/swap.jpg?again') })));
          const fresh = await checkMedia(
            t,
            again.medias,
            {
              bytes,
              format: 'png',
              width: 90,
              height: 45,
              thumbs: [
                [120, 60],
                [240, 120],
                [480, 240],
              ],
            },
            { base: REQUEST_HOST, fileSize: true },
          );
          expect(fileUrls(fresh).slice(1).map(keyOf)).toEqual([120, 240, 480].map((w) => `${dir}/${row.checksum}-${w}-up.png`));
          const oldAgain = await checkMedia(t, (await ok(api(ctx, c).bySku('SKU-1'))).medias, legacyExpected(), { base: REQUEST_HOST });
          expect(fileUrls(oldAgain).map(keyOf)).toEqual(fileUrls(old).map(keyOf));

          // A third item reuses the newest (complete) row's files.
          const third = await ok(api(ctx, c).register(item(3, { mediaUrl: images.url1('/swap.jpg?third') })));
          expect(fileUrls(third.medias[0]).map(keyOf)).toEqual(fileUrls(fresh).map(keyOf));
        } finally {
          images.setSwap(images.fixtures.swapA);
        }
      });

      it('follows a redirect to the image', async () => {
        const c = await ctx().createCustomer();
        const body = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/redirect?to=/v/redirected/photo.jpg') })));
        await checkMedia(ctx(), body.medias, VARIANT('redirected'), { base: REQUEST_HOST, fileSize: true });
      });

      it('update and sync responses carry the media without fileSize', async () => {
        const c = await ctx().createCustomer();
        const created = await ok(api(ctx, c).register(item(1)));
        expect(created.medias).toEqual([]);
        const updated = await ok(api(ctx, c).update({ id: created.id, mediaUrl: images.url1('/v/upd/photo.jpg') }));
        await checkMedia(ctx(), updated.medias, VARIANT('upd'), { base: REQUEST_HOST });
        const synced = await ok(api(ctx, c).sync([item(2, { mediaUrl: images.url1('/v/upd/photo.jpg') })]));
        expect(synced.results[0]).toMatchObject({ status: 'CREATE', message: null });
        await checkMedia(ctx(), synced.results[0].medias, VARIANT('upd'), { base: REQUEST_HOST });
      });
    });

    describe('an unchanged mediaUrl is not fetched again unless refreshMedia=true', () => {
      it('PUT by id, sku and url: no fetch for the same URL or without mediaUrl; refreshMedia=true fetches again', async () => {
        const c = await ctx().createCustomer();
        const mediaUrl = images.url1(`/v/keep-${ctx().engine}/photo.jpg`);
        const created = await ok(api(ctx, c).register(item(1, { mediaUrl })));
        const m = created.medias[0];
        const hits = () => images.hits(`/v/keep-${ctx().engine}/photo.jpg`);
        expect(hits()).toBe(1);

        const same = await ok(api(ctx, c).update({ id: created.id, name: 'Renamed', mediaUrl }));
        expect(same.name).toBe('Renamed');
        const noUrl = await ok(api(ctx, c).update({ sku: 'SKU-1', originalPrice: 1000 }, '/sku'));
        const viaUrl = await ok(api(ctx, c).update({ url: created.url, mediaUrl, description: 'd' }, '/url'));
        expect(hits()).toBe(1);
        for (const r of [same, noUrl, viaUrl]) {
          expect(r.medias).toHaveLength(1);
          expect(r.medias[0].id).toBe(m.id);
          expect(keyOf(r.medias[0].url)).toBe(keyOf(m.url));
        }

        const refreshed = await ok(api(ctx, c).update({ sku: 'SKU-1', mediaUrl }, '/sku', { refreshMedia: 'true' }));
        expect(hits()).toBe(2);
        await checkMedia(ctx(), refreshed.medias, VARIANT(`keep-${ctx().engine}`), { base: REQUEST_HOST });
        // Same bytes: same files.
        expect(fileUrls(refreshed.medias[0]).map(keyOf)).toEqual(fileUrls(m).map(keyOf));
      });

      it('a changed image at the same URL shows only after refreshMedia=true (PUT and sync); the old files go', async () => {
        const c = await ctx().createCustomer();
        images.setSwap(images.fixtures.swapA);
        const mediaUrl = images.url1('/swap.jpg');
        const hits = () => images.hits('/swap.jpg');
        const start = hits();
        const created = await ok(api(ctx, c).register(item(1, { mediaUrl })));
        const a = created.medias[0];
        expect([a.width, a.height, a.size]).toEqual([320, 240, images.fixtures.swapA.length]);

        images.setSwap(images.fixtures.swapB);
        const kept = await ok(api(ctx, c).update({ id: created.id, mediaUrl }));
        expect(keyOf(kept.medias[0].url)).toBe(keyOf(a.url));
        const syncedKept = await ok(api(ctx, c).sync([{ sku: 'SKU-1', mediaUrl }]));
        expect(syncedKept.results[0]).toMatchObject({ status: 'UPDATE', message: null });
        expect(keyOf(syncedKept.results[0].medias[0].url)).toBe(keyOf(a.url));
        expect(hits()).toBe(start + 1);

        const refreshed = await ok(api(ctx, c).update({ id: created.id, mediaUrl }, '', { refreshMedia: 'true' }));
        expect(hits()).toBe(start + 2);
        const b = await checkMedia(
          ctx(),
          refreshed.medias,
          {
            bytes: images.fixtures.swapB,
            format: 'jpeg',
            width: 300,
            height: 300,
            thumbs: [
              [120, 120],
              [240, 240],
              [480, 480],
            ],
          },
          { base: REQUEST_HOST },
        );
        await expectGone(ctx(), a);

        images.setSwap(images.fixtures.swapA);
        const syncRefreshed = await ok(api(ctx, c).sync([{ sku: 'SKU-1', mediaUrl }], { refreshMedia: 'true' }));
        expect(hits()).toBe(start + 3);
        expect(syncRefreshed.results[0]).toMatchObject({ status: 'UPDATE', message: null });
        expect(syncRefreshed.results[0].medias[0]).toMatchObject({ width: 320, height: 240, size: images.fixtures.swapA.length });
        await expectServed(ctx(), syncRefreshed.results[0].medias[0]);
        await expectGone(ctx(), b);
      });

      it('after a failed image, writes without mediaUrl leave it alone; sending the URL again (or refreshMedia) retries', async () => {
        const c = await ctx().createCustomer();
        const mediaUrl = images.url1('/status/404');
        const hits = () => images.hits('/status/404');
        const created = await ok(api(ctx, c).register(item(1, { mediaUrl })));
        expect(created.medias).toEqual([]);
        const start = hits();

        expect(await ok(api(ctx, c).update({ id: created.id, originalPrice: 5 }))).toMatchObject({ originalPrice: 5, mediaUrl, medias: [] });
        const quiet = await ok(api(ctx, c).sync([{ sku: 'SKU-1', name: 'Renamed' }]));
        expect(quiet.results[0]).toMatchObject({ status: 'UPDATE', message: null, mediaUrl, medias: [] });
        expect(hits()).toBe(start);

        const again = await ok(api(ctx, c).sync([{ sku: 'SKU-1', mediaUrl }]));
        expect(again.results[0]).toMatchObject({ status: 'UPDATE', medias: [] });
        expect(again.results[0].message).toMatch(/^saved without image: .*HTTP 404/);
        expect(hits()).toBe(start + 1);
        await ok(api(ctx, c).update({ id: created.id, mediaUrl }));
        expect(hits()).toBe(start + 2);
        await ok(api(ctx, c).update({ id: created.id }, '', { refreshMedia: 'true' }));
        expect(hits()).toBe(start + 3);
      });

      it('refreshMedia must be true or false', async () => {
        const c = await ctx().createCustomer();
        const created = await ok(api(ctx, c).register(item(1)));
        const res = await api(ctx, c).update({ id: created.id, name: 'x' }, '', { refreshMedia: 'maybe' });
        expect({ status: res.status, _s: res.body._s }).toEqual({ status: 400, _s: -510 });
        const sync = await api(ctx, c).sync([item(1)], { refreshMedia: 'maybe' });
        expect({ status: sync.status, _s: sync.body._s }).toEqual({ status: 400, _s: -510 });
      });
    });

    describe('replacement, removal and deletion', () => {
      it('a changed mediaUrl replaces the media; the old files are removed when nothing else uses them', async () => {
        const c = await ctx().createCustomer();
        const created = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/v/repl-a/photo.jpg') })));
        const a = created.medias[0];
        const replaced = await ok(api(ctx, c).update({ id: created.id, mediaUrl: images.url1('/v/repl-b/photo.jpg') }));
        const b = await checkMedia(ctx(), replaced.medias, VARIANT('repl-b'), { base: REQUEST_HOST });
        expect(b.url).not.toBe(a.url);
        await expectGone(ctx(), a);
        expect(
          await ctx()
            .dataSource.getRepository(Media)
            .count({ where: { goodsId: created.id } }),
        ).toBe(1);
      });

      it('old files stay while another item still uses them', async () => {
        const c = await ctx().createCustomer();
        const shared = images.url1('/v/repl-shared/photo.jpg');
        const one = await ok(api(ctx, c).register(item(1, { mediaUrl: shared })));
        const two = await ok(api(ctx, c).register(item(2, { mediaUrl: shared })));
        expect(fileUrls(two.medias[0]).map(keyOf)).toEqual(fileUrls(one.medias[0]).map(keyOf));
        await ok(api(ctx, c).update({ id: one.id, mediaUrl: images.url1('/v/repl-other/photo.jpg') }));
        await expectServed(ctx(), one.medias[0]);
        const removed = await ok(api(ctx, c).update({ id: two.id, mediaUrl: null }));
        expect(removed.medias).toEqual([]);
        await expectGone(ctx(), one.medias[0]);
      });

      it('mediaUrl null removes the media and its files', async () => {
        const c = await ctx().createCustomer();
        const created = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/v/remove/photo.jpg') })));
        const removed = await ok(api(ctx, c).update({ sku: 'SKU-1', mediaUrl: null }, '/sku'));
        expect(removed.mediaUrl).toBeNull();
        expect(removed.medias).toEqual([]);
        expect((await ok(api(ctx, c).bySku('SKU-1'))).medias).toEqual([]);
        await expectGone(ctx(), created.medias[0]);
        expect(
          await ctx()
            .dataSource.getRepository(Media)
            .count({ where: { goodsId: created.id } }),
        ).toBe(0);
      });

      it('deleting a goods item deletes the files no other item uses', async () => {
        const c = await ctx().createCustomer();
        const other = await ctx().createCustomer();
        const mediaUrl = images.url1('/v/delete/photo.jpg');
        const one = await ok(api(ctx, c).register(item(1, { mediaUrl })));
        const two = await ok(api(ctx, other).register(item(1, { mediaUrl })));
        const m = one.medias[0];
        expect(fileUrls(two.medias[0]).map(keyOf)).toEqual(fileUrls(m).map(keyOf));

        expect((await api(ctx, c).remove(one.id)).status).toBe(200);
        await expectServed(ctx(), m);
        expect((await api(ctx, other).removeBySku('SKU-1')).status).toBe(200);
        await expectGone(ctx(), m);
        expect(
          await ctx()
            .dataSource.getRepository(Media)
            .count({ where: { goodsId: one.id } }),
        ).toBe(0);
      });
    });

    describe('sync', () => {
      it("several rows setting one item's mediaUrl: only the last is fetched, and each row reports its own URL's outcome", async () => {
        const c = await ctx().createCustomer();
        const tag = `last-wins-${ctx().engine}`;
        const photo = images.url1(`/v/${tag}/photo.jpg`);
        const missing = images.url1(`/status/404?${tag}`);
        const sku = 'SKU-1';
        // A good image, then a 404: the row naming the good one claims no image of its own.
        const first = await ok(api(ctx, c).sync([item(1, { mediaUrl: photo }), { sku, mediaUrl: missing }]));
        const [a, b] = first.results as Body[];
        expect([a.status, a.mediaUrl, a.medias, a.message]).toEqual([
          'CREATE',
          photo,
          [],
          'image not fetched: row 2 of the same request set another mediaUrl for this item',
        ]);
        expect([b.status, b.mediaUrl, b.medias]).toEqual(['UPDATE', missing, []]);
        expect(b.message).toMatch(/^saved without image: .*HTTP 404/);
        expect(images.hits(`/v/${tag}/photo.jpg`)).toBe(0);

        // The other way round: the 404 row does not claim the image the last row stored.
        const second = await ok(
          api(ctx, c).sync([
            { sku, mediaUrl: missing },
            { sku, mediaUrl: photo },
            { sku, name: 'Renamed' },
          ]),
        );
        const [x, y, z] = second.results as Body[];
        expect([x.mediaUrl, x.medias, x.message]).toEqual([missing, [], 'image not fetched: row 2 of the same request set another mediaUrl for this item']);
        expect([y.mediaUrl, y.medias.length, y.message]).toEqual([photo, 1, null]);
        expect([z.mediaUrl, z.medias, z.message]).toEqual([photo, y.medias, null]);

        // A removal after an image: the image row says it was not fetched; the stored item has none.
        const third = await ok(
          api(ctx, c).sync([
            { sku, mediaUrl: missing },
            { sku, mediaUrl: null },
          ]),
        );
        expect((third.results as Body[]).map((r) => [r.mediaUrl, r.medias, r.message])).toEqual([
          [missing, [], 'image not fetched: row 2 of the same request set another mediaUrl for this item'],
          [null, [], null],
        ]);
        // A dry run names the URL a real call would fetch on the row that carries it only.
        const dry = await ok(
          api(ctx, c).sync(
            [
              { sku, mediaUrl: photo },
              { sku, mediaUrl: missing },
            ],
            { dryRun: 'true' },
          ),
        );
        expect((dry.results as Body[]).map((r) => r.message)).toEqual([
          'image not fetched: row 2 of the same request set another mediaUrl for this item',
          `dry run: image not fetched: ${missing}`,
        ]);
      });

      it('fetches each distinct URL once per call and stores identical bytes once', async () => {
        const c = await ctx().createCustomer();
        const [tagOne, tagTwo] = [`sync-one-${ctx().engine}`, `sync-two-${ctx().engine}`];
        const one = images.url1(`/v/${tagOne}/photo.jpg`);
        const two = images.url1(`/v/${tagTwo}/photo.jpg`);
        const twoAgain = `${two}?again=1`; // another URL, the same bytes
        const filesBefore = filesOnDisk(ctx()).length;
        const body = await ok(
          api(ctx, c).sync([
            item(1, { mediaUrl: one }),
            item(2, { mediaUrl: one }),
            item(3, { mediaUrl: two }),
            item(4, { mediaUrl: twoAgain }),
            item(5, { mediaUrl: one }),
          ]),
        );
        expect(images.hits(`/v/${tagOne}/photo.jpg`)).toBe(1);
        expect(images.hits(`/v/${tagTwo}/photo.jpg`)).toBe(2);
        const rows = body.results as Body[];
        expect(rows.map((r) => [r.status, r.message, r.mediaUrl])).toEqual([
          ['CREATE', null, one],
          ['CREATE', null, one],
          ['CREATE', null, two],
          ['CREATE', null, twoAgain],
          ['CREATE', null, one],
        ]);
        const m1 = await checkMedia(ctx(), rows[0].medias, VARIANT(tagOne), { base: REQUEST_HOST });
        const m3 = await checkMedia(ctx(), rows[2].medias, VARIANT(tagTwo), { base: REQUEST_HOST });
        for (const i of [1, 4]) expect(fileUrls(rows[i].medias[0]).map(keyOf)).toEqual(fileUrls(m1).map(keyOf));
        expect(fileUrls(rows[3].medias[0]).map(keyOf)).toEqual(fileUrls(m3).map(keyOf));
        // One media row per item, one set of files per distinct content.
        expect(new Set(rows.map((r) => r.medias[0].id)).size).toBe(5);
        expect(filesOnDisk(ctx()).length).toBe(filesBefore + 8);

        // A later call with the same URL for a new item fetches it again but still stores nothing new.
        const later = await ok(api(ctx, c).sync([item(6, { mediaUrl: one })]));
        expect(images.hits(`/v/${tagOne}/photo.jpg`)).toBe(2);
        expect(fileUrls(later.results[0].medias[0]).map(keyOf)).toEqual(fileUrls(m1).map(keyOf));
        expect(filesOnDisk(ctx()).length).toBe(filesBefore + 8);
      });

      it('in one call: unchanged kept without fetch, changed replaced, null removed, missing left alone', async () => {
        const c = await ctx().createCustomer();
        const tags = ['s-keep', 's-old', 's-null', 's-untouched', 's-new'].map((t) => `${t}-${ctx().engine}`);
        const [u1, u2, u3, u4] = tags.map((t) => images.url1(`/v/${t}/photo.jpg`));
        const first = await ok(api(ctx, c).sync([item(1, { mediaUrl: u1 }), item(2, { mediaUrl: u2 }), item(3, { mediaUrl: u3 }), item(4, { mediaUrl: u4 })]));
        const before = first.results.map((r: Body) => r.medias[0]);
        const newUrl = images.url1(`/v/${tags[4]}/photo.jpg`);
        const second = await ok(
          api(ctx, c).sync([
            { sku: 'SKU-1', mediaUrl: u1, name: 'kept' },
            { sku: 'SKU-2', mediaUrl: newUrl },
            { sku: 'SKU-3', mediaUrl: null },
            { sku: 'SKU-4', name: 'no media field' },
          ]),
        );
        const rows = second.results as Body[];
        expect(rows.map((r) => [r.status, r.message])).toEqual([
          ['UPDATE', null],
          ['UPDATE', null],
          ['UPDATE', null],
          ['UPDATE', null],
        ]);
        for (const t of tags) expect({ t, hits: images.hits(`/v/${t}/photo.jpg`) }).toEqual({ t, hits: 1 });
        expect(rows[0].medias[0].id).toBe(before[0].id);
        await checkMedia(ctx(), rows[1].medias, VARIANT(tags[4]), { base: REQUEST_HOST });
        await expectGone(ctx(), before[1]);
        expect(rows[2].medias).toEqual([]);
        expect(rows[2].mediaUrl).toBeNull();
        await expectGone(ctx(), before[2]);
        expect(rows[3].medias[0].id).toBe(before[3].id);
        expect(rows[3].mediaUrl).toBe(u4);
        await expectServed(ctx(), before[3]);
      });
    });

    describe('failures never lose goods data', () => {
      it('hostile inputs in one sync: each row saved (CREATE) with a clear message, medias [], no hang', async () => {
        const c = await ctx().createCustomer();
        const cases: Array<[string, RegExp]> = [
          ['/fake.jpg', /not an image/],
          ['/truncated.jpg', /cannot be decoded/],
          ['/huge', /over the 20971520-byte limit/],
          ['/huge-declared', new RegExp(`${HUGE_DECLARED_BYTES} bytes; the limit is 20971520`)],
          ['/bomb.png', /20000x20000 \(400\.0 megapixels\); the limit is 40 megapixels/],
          ['/hang', /no complete answer within 1500 ms/],
          ['/status/404', /HTTP 404/],
        ];
        const started = Date.now();
        const body = await ok(
          api(ctx, c).sync([
            ...cases.map(([path], i) => item(i + 1, { mediaUrl: images.url1(path), originalPrice: 1000 + i })),
            item('good', { mediaUrl: images.url1('/v/hostile-good/photo.jpg') }),
          ]),
        );
        const elapsed = Date.now() - started;
        expect(elapsed).toBeLessThan(6000);
        expect(body).toMatchObject({ totalCount: 8, createCount: 8, updateCount: 0, failCount: 0 });
        const rows = body.results as Body[];
        cases.forEach(([path], i) => {
          expect({ path, status: rows[i].status, medias: rows[i].medias }).toEqual({ path, status: 'CREATE', medias: [] });
          expect(rows[i].message).toMatch(/^saved without image: /);
        });
        expect(rows[7]).toMatchObject({ status: 'CREATE', message: null });
        await checkMedia(ctx(), rows[7].medias, VARIANT('hostile-good'), { base: REQUEST_HOST });

        // Every item is stored with all its data.
        for (let i = 0; i < cases.length; i += 1) {
          const stored = await ok(api(ctx, c).bySku(`SKU-${i + 1}`));
          expect(stored).toMatchObject({ name: `Item ${i + 1}`, mediaUrl: images.url1(cases[i][0]), originalPrice: 1000 + i, medias: [] });
        }
        expect((await ctx().http.get('/health')).status).toBe(200);
        expect((await ctx().http.get('/health/ready')).status).toBe(200);

        // Last, so that everything above is checked even when a message is wrong: each says why.
        expect(cases.map(([path], i) => ({ path, message: rows[i].message }))).toEqual(
          cases.map(([path, reason]) => ({ path, message: expect.stringMatching(reason) })),
        );
      });

      it('an image with a side over MEDIA_MAX_SIDE (20000x2, 2x20000: few pixels) is refused from its header', async () => {
        const c = await ctx().createCustomer();
        await ok(api(ctx, c).register(item('old')));
        const body = await ok(
          api(ctx, c).sync([
            item(1, { mediaUrl: images.url1('/wide.png') }),
            item(2, { mediaUrl: images.url1('/tall.png') }),
            { sku: 'SKU-old', name: 'Changed', mediaUrl: images.url1('/wide.png?again') },
          ]),
        );
        expect(body).toMatchObject({ totalCount: 3, createCount: 2, updateCount: 1, failCount: 0 });
        expect(body.results.map((r: Body) => ({ status: r.status, medias: r.medias, message: r.message }))).toEqual([
          { status: 'CREATE', medias: [], message: 'saved without image: image is 20000x2; the limit is 16384 px a side' },
          { status: 'CREATE', medias: [], message: 'saved without image: image is 2x20000; the limit is 16384 px a side' },
          { status: 'UPDATE', medias: [], message: 'saved without image: image is 20000x2; the limit is 16384 px a side' },
        ]);
        expect(await ok(api(ctx, c).bySku('SKU-old'))).toMatchObject({ name: 'Changed', mediaUrl: images.url1('/wide.png?again'), medias: [] });

        const registered = await ok(api(ctx, c).register(item(3, { mediaUrl: images.url1('/tall.png?register') })));
        expect(registered).toMatchObject({ name: 'Item 3', mediaUrl: images.url1('/tall.png?register'), medias: [] });
        expect(await ok(api(ctx, c).bySku('SKU-3'))).toMatchObject({ id: registered.id, medias: [] });
      });

      it('an image whose enlarged 480 px thumbnail would be over MEDIA_MAX_SIDE (1x16384) is saved without image', async () => {
        const c = await ctx().createCustomer();
        const body = await ok(api(ctx, c).sync([item(1, { mediaUrl: images.url1('/needle.png') })]));
        expect(body.results.map((r: Body) => ({ status: r.status, medias: r.medias, message: r.message }))).toEqual([
          {
            status: 'CREATE',
            medias: [],
            message: 'saved without image: image is 1x16384; its 480 px wide thumbnail would be 480x7864320, over the limit of 16384 px a side',
          },
        ]);
        expect(await ok(api(ctx, c).bySku('SKU-1'))).toMatchObject({ mediaUrl: images.url1('/needle.png'), medias: [] });
      });

      it('an AVIF over 16 megapixels (540 bytes of 4001x4000) is refused from its header', async () => {
        const c = await ctx().createCustomer();
        images.setSwap(
          await sharp({ create: { width: 4001, height: 4000, channels: 3, background: '#123456' } })
            .avif({ effort: 0 })
            .toBuffer(),
        );
        try {
          const body = await ok(api(ctx, c).sync([item(1, { mediaUrl: images.url1('/swap.jpg?avif') })]));
          expect(body.results[0]).toMatchObject({
            status: 'CREATE',
            medias: [],
            message: 'saved without image: image is 4001x4000 AVIF/HEIF (16.0 megapixels); the limit for AVIF and HEIF is 16 megapixels',
          });
        } finally {
          images.setSwap(images.fixtures.swapA);
        }
      });

      it('register: a failed image still saves the item with medias [] (404, non-image, timeout)', async () => {
        const c = await ctx().createCustomer();
        for (const [n, path] of [
          [1, '/status/404'],
          [2, '/fake.jpg'],
          [3, '/bomb.png'],
        ] as const) {
          const body = await ok(api(ctx, c).register(item(n, { mediaUrl: images.url1(path), brand: 'B' })));
          expect(body).toMatchObject({ name: `Item ${n}`, brand: 'B', mediaUrl: images.url1(path), medias: [] });
          expect(await ok(api(ctx, c).bySku(`SKU-${n}`))).toMatchObject({ id: body.id, medias: [] });
        }
        const started = Date.now();
        const hung = await ok(api(ctx, c).register(item(4, { mediaUrl: images.url1('/hang') })));
        expect(Date.now() - started).toBeLessThan(4000);
        expect(hung).toMatchObject({ name: 'Item 4', medias: [] });
        expect((await ctx().http.get('/health')).status).toBe(200);
      });

      it('update: a new URL that fails saves the other changes, leaves no media and frees the old files', async () => {
        const c = await ctx().createCustomer();
        const created = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url1('/v/upd-fail/photo.jpg') })));
        const updated = await ok(api(ctx, c).update({ id: created.id, name: 'New name', discountedPrice: 900, mediaUrl: images.url1('/truncated.jpg') }));
        expect(updated).toMatchObject({ name: 'New name', discountedPrice: 900, mediaUrl: images.url1('/truncated.jpg'), medias: [] });
        expect(await ok(api(ctx, c).bySku('SKU-1'))).toMatchObject({ name: 'New name', medias: [] });
        await expectGone(ctx(), created.medias[0]);
      });

      it('sync update with a failing image keeps UPDATE and says what happened to the image', async () => {
        const c = await ctx().createCustomer();
        await ok(api(ctx, c).register(item(1)));
        const body = await ok(api(ctx, c).sync([{ sku: 'SKU-1', name: 'Changed', mediaUrl: images.url1('/fake.jpg') }]));
        expect(body.results[0]).toMatchObject({ status: 'UPDATE', name: 'Changed', medias: [] });
        expect(body.results[0].message).toMatch(/^saved without image: .*not an image/);
        expect(await ok(api(ctx, c).bySku('SKU-1'))).toMatchObject({ name: 'Changed', mediaUrl: images.url1('/fake.jpg') });
      });
    });

    describe('serving /media', () => {
      it('an unknown or malformed key is a 404 that is not cached for a year', async () => {
        const t = ctx();
        for (const path of [`/media/ab/${'ab'.repeat(32)}.jpg`, `/media/ab/${'ab'.repeat(32)}-120.jpg`, '/media/..%2F..%2Fetc%2Fpasswd', '/media/x.jpg']) {
          const res = await t.http.get(path);
          expect({ path, status: res.status, _s: res.body._s }).toEqual({ path, status: 404, _s: -404 });
          expect({ path, cache: res.headers['cache-control'] ?? '' }).toEqual({ path, cache: expect.not.stringMatching(/immutable|max-age=31536000/) });
        }
      });

      it('storage holds exactly the files that media rows refer to (no orphans, nothing missing)', async () => {
        const rows = await ctx().dataSource.getRepository(Media).find();
        const referenced = new Set(rows.flatMap((m) => [m.fileKey, ...m.thumbnails.map((th) => th.key)]));
        expect(filesOnDisk(ctx())).toEqual([...referenced].sort());
      });
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', MEDIA_FETCH_TIMEOUT_MS: '1500' },
);

describeEngines(
  'media address guard',
  __filename,
  (ctx) => {
    const PUBLIC = 'https://cdn.livegoods.test';

    it('refuses loopback, private, link-local and metadata addresses before connecting, and says why', async () => {
      const c = await ctx().createCustomer();
      const p1 = images.port1;
      const cases: Array<[string, RegExp]> = [
        [`http://127.0.0.1:${p1}/photo.jpg`, /refused to fetch from 127\.0\.0\.1: 127\.0\.0\.1 is a loopback address/],
        ['http://10.0.0.1/x.jpg', /refused to fetch from 10\.0\.0\.1: 10\.0\.0\.1 is a private address/],
        ['http://169.254.169.254/latest/meta-data', /refused to fetch from 169\.254\.169\.254: .*link-?local/i],
        [`http://[::1]:${p1}/photo.jpg`, /refused to fetch from ::1: ::1 is a loopback address/],
        [`http://localhost:${p1}/photo.jpg`, /refused to fetch from localhost: .* is a loopback address/],
        [`http://[::ffff:127.0.0.1]:${p1}/photo.jpg`, /refused to fetch from .*loopback/],
        [images.url2(`/redirect?to=${encodeURIComponent(images.url1('/photo.jpg'))}`), /refused to fetch from 127\.0\.0\.1: .*loopback/],
        [images.url2('/redirect?to=file:///etc/passwd'), /only http and https URLs are fetched \(got file\)/],
      ];
      const photoHits = images.hits('/photo.jpg', 1);
      const redirectHits = images.hits('/redirect', 2);
      const attempts = connections.attempts.length;
      const started = Date.now();
      const body = await ok(api(ctx, c).sync(cases.map(([mediaUrl], i) => item(i + 1, { mediaUrl }))));
      expect(Date.now() - started).toBeLessThan(1000);

      const rows = body.results as Body[];
      cases.forEach(([mediaUrl, reason], i) => {
        expect({ mediaUrl, status: rows[i].status, medias: rows[i].medias, message: rows[i].message }).toEqual({
          mediaUrl,
          status: 'CREATE',
          medias: [],
          message: expect.stringMatching(new RegExp(`^saved without image: .*${reason.source}`, reason.flags)),
        });
      });
      // Nothing reached the loopback listener or left the machine; only the allowed host was asked.
      expect(images.hits('/photo.jpg', 1)).toBe(photoHits);
      expect(images.hits('/redirect', 2)).toBe(redirectHits + 2);
      const made = connections.attempts.slice(attempts);
      // (localhost reaches the resolver, whose loopback answer is refused: no socket is opened.)
      expect(made.filter((a) => isIP(a.host) && (a.port === p1 || /^(10\.|169\.254\.|::1$|::ffff:)/.test(a.host)))).toEqual([]);
      for (let i = 1; i <= cases.length; i += 1) expect((await api(ctx, c).bySku(`SKU-${i}`)).status).toBe(200);
      expect((await ctx().http.get('/health')).status).toBe(200);
    });

    it('a host on MEDIA_ALLOWED_HOSTS is fetched; URLs use PUBLIC_BASE_URL', async () => {
      const c = await ctx().createCustomer();
      const before = images.hits('/v/guard-allowed/photo.jpg', 2);
      const body = await ok(api(ctx, c).register(item(1, { mediaUrl: images.url2('/v/guard-allowed/photo.jpg') })));
      expect(images.hits('/v/guard-allowed/photo.jpg', 2)).toBe(before + 1);
      await checkMedia(ctx(), body.medias, VARIANT('guard-allowed'), { base: PUBLIC, fileSize: true });
      const synced = await ok(api(ctx, c).sync([item(2, { mediaUrl: images.url2('/pic.webp') })]));
      expect(synced.results[0]).toMatchObject({ status: 'CREATE', message: null });
      expect(synced.results[0].medias[0].url.startsWith(`${PUBLIC}/media/`)).toBe(true);
    });

    it('file: and ftp: mediaUrl values are refused by validation (400 -510; FAIL row in sync)', async () => {
      const c = await ctx().createCustomer();
      for (const mediaUrl of ['file:///etc/passwd', `ftp://127.0.0.2:${images.port2}/photo.jpg`]) {
        const res = await api(ctx, c).register(item(1, { mediaUrl }));
        expect({ status: res.status, _s: res.body._s }).toEqual({ status: 400, _s: -510 });
        expect(res.body.errors.map((e: Body) => e.field)).toContain('mediaUrl');
        expect((await api(ctx, c).bySku('SKU-1')).status).toBe(404);
      }
      const created = await ok(api(ctx, c).register(item(9)));
      const put = await api(ctx, c).update({ id: created.id, mediaUrl: 'file:///etc/passwd' });
      expect({ status: put.status, _s: put.body._s }).toEqual({ status: 400, _s: -510 });

      const body = await ok(api(ctx, c).sync([item(1, { mediaUrl: 'file:///etc/passwd' }), item(2, { mediaUrl: 'ftp://example.com/a.jpg' })]));
      expect(body).toMatchObject({ createCount: 0, failCount: 2 });
      for (const row of body.results as Body[]) {
        expect(row.status).toBe('FAIL');
        expect(row.message).toMatch(/mediaUrl must be an absolute http or https URL/);
      }
      expect((await api(ctx, c).bySku('SKU-1')).status).toBe(404);
    });
  },
  {
    MEDIA_ALLOW_PRIVATE_HOSTS: 'false',
    MEDIA_ALLOWED_HOSTS: '127.0.0.2',
    MEDIA_FETCH_TIMEOUT_MS: '1500',
    PUBLIC_BASE_URL: 'https://cdn.livegoods.test',
  },
);

describeEngines(
  'media: the catalog changes while a sync fetches images',
  __filename,
  (ctx) => {
    // A sync plans once to learn which images to fetch, fetches them, then plans again inside its
    // transaction. Here another request changes an item between the two, so that the transaction's
    // plan needs an image the first plan did not: it must be fetched outside the transaction.
    const held = (tag: string) => images.url1(`/held/${tag}-${ctx().engine}/photo.jpg`);
    const hold = (tag: string) => images.hold(`${tag}-${ctx().engine}`);
    const hits = (tag: string) => images.hits(`/held/${tag}-${ctx().engine}/photo.jpg`);

    it('an image needed only after the catalog changed is fetched with no transaction open, then written', async () => {
      const c = await ctx().createCustomer();
      const goods = api(ctx, c);
      const a = held('again');
      const registered = await ok(goods.register(item('s', { mediaUrl: a })));
      expect(hits('again')).toBe(1);

      // The sync keeps the item's image A (unchanged URL) and adds an item whose image G is slow.
      const slow = hold('slow');
      const again = hold('again');
      const call = ok(goods.sync([{ sku: 'SKU-s', mediaUrl: a, name: 'Renamed' }, item('g', { mediaUrl: held('slow') })]));
      await slow.arrived;
      // Meanwhile the item gets another image: inside the sync's transaction, A must be fetched again.
      const b = images.url1(`/v/other-${ctx().engine}/photo.jpg`);
      expect(await ok(goods.update({ sku: 'SKU-s', mediaUrl: b }, '/sku'))).toMatchObject({ mediaUrl: b, medias: [expect.anything()] });
      slow.release();
      await again.arrived;
      // While A is being fetched, another write of the same customer goes through at once: no
      // transaction holds the catalog (on SQLite none at all). Fetching inside the transaction,
      // this write waited until A's fetch gave up, and the item was saved without its image.
      await ok(goods.register(item('meanwhile')));
      again.release();

      const body = await call;
      const rows = body.results as Body[];
      expect(rows.map((r) => [r.status, r.message, r.mediaUrl])).toEqual([
        ['UPDATE', null, a],
        ['CREATE', null, held('slow')],
      ]);
      expect(hits('again')).toBe(2);
      const media = await checkMedia(ctx(), rows[0].medias, VARIANT(`again-${ctx().engine}`), { base: REQUEST_HOST });
      expect(media.id).not.toBe(registered.medias[0].id);
      await checkMedia(ctx(), rows[1].medias, VARIANT(`slow-${ctx().engine}`), { base: REQUEST_HOST });
      expect(await ok(goods.bySku('SKU-s'))).toMatchObject({ name: 'Renamed', mediaUrl: a, medias: [{ id: media.id }] });
    });

    it('when the catalog keeps changing, the last attempt saves the rows without the images it still lacks', async () => {
      const c = await ctx().createCustomer();
      const goods = api(ctx, c);
      for (const n of [1, 2, 3]) await ok(goods.register(item(n, { mediaUrl: held(`keep-${n}`) })));
      const changeImage = (n: number) => ok(goods.update({ sku: `SKU-${n}`, mediaUrl: images.url1(`/v/changed-${n}-${ctx().engine}/photo.jpg`) }, '/sku'));

      // Each fetch round is held until the next item has been changed: every plan inside the
      // transaction needs one more image than was fetched before it.
      const slow = hold('slow-2');
      const rounds = [hold('keep-1'), hold('keep-2')];
      const call = ok(
        goods.sync([
          { sku: 'SKU-1', mediaUrl: held('keep-1') },
          { sku: 'SKU-2', mediaUrl: held('keep-2') },
          { sku: 'SKU-3', mediaUrl: held('keep-3') },
          item('new', { mediaUrl: held('slow-2') }),
        ]),
      );
      await slow.arrived;
      await changeImage(1);
      slow.release();
      for (const [i, round] of rounds.entries()) {
        await round.arrived;
        await changeImage(i + 2);
        round.release();
      }

      const rows = (await call).results as Body[];
      expect(rows.map((r) => [r.status, r.message])).toEqual([
        ['UPDATE', null],
        ['UPDATE', null],
        ['UPDATE', expect.stringMatching(/^saved without image: .*changed/)],
        ['CREATE', null],
      ]);
      expect([1, 2, 3].map((n) => hits(`keep-${n}`))).toEqual([2, 2, 1]);
      expect(rows[2]).toMatchObject({ mediaUrl: held('keep-3'), medias: [] });
      expect(await ok(goods.bySku('SKU-3'))).toMatchObject({ mediaUrl: held('keep-3'), medias: [] });
      for (const n of [1, 2]) {
        expect(await ok(goods.bySku(`SKU-${n}`))).toMatchObject({ mediaUrl: held(`keep-${n}`), medias: [{ id: rows[n - 1].medias[0].id }] });
      }
      // Sending the row again fetches the image.
      const retried = await ok(goods.sync([{ sku: 'SKU-3', mediaUrl: held('keep-3') }]));
      expect(retried.results[0]).toMatchObject({ status: 'UPDATE', message: null, medias: [expect.anything()] });
    });

    it('images fetched for rounds that were rolled back leave no orphaned files', async () => {
      const rows = await ctx().dataSource.getRepository(Media).find();
      const referenced = new Set(rows.flatMap((m) => [m.fileKey, ...m.thumbnails.map((th) => th.key)]));
      expect(filesOnDisk(ctx())).toEqual([...referenced].sort());
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', MEDIA_FETCH_TIMEOUT_MS: '5000' },
);
