import http, { IncomingMessage, ServerResponse } from 'node:http';
import net, { AddressInfo } from 'node:net';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

/**
 * A real HTTP image server for the media tests, on loopback only: the same handler listens on
 * 127.0.0.1 (listener 1) and on 127.0.0.2 (listener 2, a different port). Every fixture is generated
 * at start with sharp (no binary file in git). Hits are counted per listener and path (query ignored).
 *
 * Routes (add `?chunked` to a fixture to get it without content-length, in small chunks):
 *   /photo.jpg 800x600 JPEG · /logo.png 300x200 PNG with alpha · /pic.webp 640x480 WebP
 *   /rotated.jpg stored 600x400 with EXIF orientation 6 (displayed 400x600; stored left half red,
 *     right half blue, so displayed top red, bottom blue) · /tiny.png 50x30 · /small.png 100x50
 *   /needle.png 1x16384 (its 480 px wide thumbnail would be 480x7864320)
 *   /v/<tag>/photo.jpg the photo with a JPEG COM segment holding <tag>: same picture, distinct bytes
 *   /held/<tag>/photo.jpg the same as /v/<tag>/photo.jpg, but a request may be held (hold(tag))
 *   /swap.jpg switchable content (setSwap) · /fake.jpg text served as image/jpeg
 *   /truncated.jpg first half of a JPEG · /bomb.png IHDR claims 20000x20000 (tiny file)
 *   /wide.png 20000x2 and /tall.png 2x20000 real PNGs (few pixels, one side over the 16384 px cap)
 *   /huge 21 MB without content-length · /huge-declared content-length 25 MB
 *   /hang never answers · /drip headers then one byte every 100 ms, forever
 *   /short declares 1000 bytes, sends 10, drops the connection
 *   /redirect?to=<url> 302 · /chain/<n> n redirects (at least one) then the photo · /status/<code>
 */

export const HUGE_BYTES = 21 * 1024 * 1024;
export const HUGE_DECLARED_BYTES = 25 * 1024 * 1024;

export interface Fixtures {
  photo: Buffer;
  logo: Buffer;
  webp: Buffer;
  rotated: Buffer;
  tiny: Buffer;
  swapA: Buffer;
  swapB: Buffer;
  fake: Buffer;
  truncated: Buffer;
  bomb: Buffer;
  wide: Buffer;
  tall: Buffer;
  small: Buffer;
  needle: Buffer;
}

export interface ImageServer {
  /** Port of the 127.0.0.1 listener. */
  port1: number;
  /** Port of the 127.0.0.2 listener. */
  port2: number;
  /** `http://127.0.0.1:port1<path>` */
  url1(path: string): string;
  /** `http://127.0.0.2:port2<path>` */
  url2(path: string): string;
  fixtures: Fixtures;
  /** Requests seen for a path (without query), on one listener or on both. */
  hits(path: string, listener?: 1 | 2): number;
  /** Body bytes written for a path so far (both listeners). */
  bytesSent(path: string): number;
  /** What /swap.jpg serves from now on. */
  setSwap(bytes: Buffer): void;
  /** The bytes /v/<tag>/photo.jpg (and /held/<tag>/photo.jpg) serves. */
  variant(tag: string): Buffer;
  /**
   * The next request for /held/<tag>/photo.jpg is held until `release()`; `arrived` resolves when it
   * comes in. Requests without a hold pending are answered at once.
   */
  hold(tag: string): Hold;
  close(): Promise<void>;
}

export interface Hold {
  arrived: Promise<void>;
  release(): void;
}

/** Inserts a JPEG COM segment right after SOI: a different byte string, the same picture. */
export function withJpegComment(jpeg: Buffer, text: string): Buffer {
  const body = Buffer.from(text, 'utf8');
  const header = Buffer.from([0xff, 0xfe, ((body.length + 2) >> 8) & 0xff, (body.length + 2) & 0xff]);
  return Buffer.concat([jpeg.subarray(0, 2), header, body, jpeg.subarray(2)]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** A valid-looking PNG whose header claims width x height RGB pixels; only one row of data follows. */
export function pngBomb(width = 20000, height = 20000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(Buffer.alloc(1 + width * 3))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A w x h RGB picture with gradients (realistic enough to encode and decode). */
function gradient(width: number, height: number, seed: number): Buffer {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const i = (y * width + x) * 3;
      raw[i] = (x * 255) / width + seed * 40;
      raw[i + 1] = (y * 255) / height;
      raw[i + 2] = ((x + y) * 128) / (width + height) + ((x >> 4) & 1) * 60;
    }
  }
  return raw;
}

export async function makeFixtures(): Promise<Fixtures> {
  const rgb = (w: number, h: number, seed: number) => sharp(gradient(w, h, seed), { raw: { width: w, height: h, channels: 3 } });
  const photo = await rgb(800, 600, 0).jpeg({ quality: 85 }).toBuffer();

  const logoRaw = Buffer.alloc(300 * 200 * 4);
  for (let y = 0; y < 200; y += 1) {
    for (let x = 0; x < 300; x += 1) {
      const i = (y * 300 + x) * 4;
      logoRaw[i] = 30;
      logoRaw[i + 1] = 160;
      logoRaw[i + 2] = 90;
      logoRaw[i + 3] = Math.round((x / 299) * 255); // transparent on the left, opaque on the right
    }
  }
  const logo = await sharp(logoRaw, { raw: { width: 300, height: 200, channels: 4 } })
    .png()
    .toBuffer();
  const webp = await rgb(640, 480, 2).webp({ quality: 80 }).toBuffer();

  const rotRaw = Buffer.alloc(600 * 400 * 3);
  for (let i = 0; i < 600 * 400; i += 1) {
    const left = i % 600 < 300;
    rotRaw.set(left ? [220, 20, 20] : [20, 20, 220], i * 3);
  }
  const rotated = await sharp(rotRaw, { raw: { width: 600, height: 400, channels: 3 } })
    .jpeg({ quality: 90 })
    .withMetadata({ orientation: 6 })
    .toBuffer();

  const tiny = await rgb(50, 30, 3).png().toBuffer();
  const small = await rgb(100, 50, 4).png().toBuffer();
  const swapA = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#20a040' } })
    .jpeg()
    .toBuffer();
  const swapB = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#a02040' } })
    .jpeg()
    .toBuffer();
  const fake = Buffer.from('This is not an image, only text pretending to be a JPEG.\n'.repeat(20), 'utf8');
  const truncated = photo.subarray(0, Math.floor(photo.length / 2));
  const flat = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: '#3060a0' } }).png({ compressionLevel: 9 });
  const wide = await flat(20_000, 2).toBuffer();
  const tall = await flat(2, 20_000).toBuffer();
  const needle = await flat(1, 16_384).toBuffer();
  return { photo, logo, webp, rotated, tiny, small, needle, swapA, swapB, fake, truncated, bomb: pngBomb(), wide, tall };
}

export async function startImageServer(): Promise<ImageServer> {
  const fixtures = await makeFixtures();
  let swap = fixtures.swapA;
  const hits = new Map<string, number>();
  const sent = new Map<string, number>();
  /** Holds not yet taken by a request, by tag. */
  const holds = new Map<string, { arrive(): void; released: Promise<void> }>();
  const count = (path: string, n: number) => sent.set(path, (sent.get(path) ?? 0) + n);

  const files: Record<string, () => [Buffer, string]> = {
    '/photo.jpg': () => [fixtures.photo, 'image/jpeg'],
    '/logo.png': () => [fixtures.logo, 'image/png'],
    '/pic.webp': () => [fixtures.webp, 'image/webp'],
    '/rotated.jpg': () => [fixtures.rotated, 'image/jpeg'],
    '/tiny.png': () => [fixtures.tiny, 'image/png'],
    '/small.png': () => [fixtures.small, 'image/png'],
    '/needle.png': () => [fixtures.needle, 'image/png'],
    '/swap.jpg': () => [swap, 'image/jpeg'],
    '/fake.jpg': () => [fixtures.fake, 'image/jpeg'],
    '/truncated.jpg': () => [fixtures.truncated, 'image/jpeg'],
    '/bomb.png': () => [fixtures.bomb, 'image/png'],
    '/wide.png': () => [fixtures.wide, 'image/png'],
    '/tall.png': () => [fixtures.tall, 'image/png'],
  };

  /** Writes `total` bytes in 64 KB chunks, honouring back-pressure, until done or the client leaves. */
  function stream(res: ServerResponse, path: string, total: number): void {
    const chunk = Buffer.alloc(64 * 1024, 0xab);
    let written = 0;
    const pump = () => {
      while (written < total && !res.destroyed) {
        const n = Math.min(chunk.length, total - written);
        written += n;
        count(path, n);
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    pump();
  }

  function handle(listener: 1 | 2, req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://images.test');
    const path = url.pathname;
    hits.set(`${listener} ${path}`, (hits.get(`${listener} ${path}`) ?? 0) + 1);
    res.on('error', () => undefined);

    const held = /^\/held\/([\w.-]+)\/photo\.jpg$/.exec(path);
    if (held) {
      const body = withJpegComment(fixtures.photo, held[1]);
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
        count(path, body.length);
        res.end(body);
      };
      const hold = holds.get(held[1]);
      if (!hold) return answer();
      holds.delete(held[1]);
      hold.arrive();
      void hold.released.then(answer);
      return;
    }
    const variant = /^\/v\/([\w.-]+)\/photo\.jpg$/.exec(path);
    const file = variant ? (): [Buffer, string] => [withJpegComment(fixtures.photo, variant[1]), 'image/jpeg'] : files[path];
    if (file) {
      const [body, type] = file();
      if (url.searchParams.has('chunked')) {
        res.writeHead(200, { 'content-type': type });
        for (let i = 0; i < body.length; i += 4096) res.write(body.subarray(i, i + 4096));
        count(path, body.length);
        res.end();
      } else {
        res.writeHead(200, { 'content-type': type, 'content-length': body.length });
        count(path, body.length);
        res.end(body);
      }
      return;
    }
    const chain = /^\/chain\/(\d+)$/.exec(path);
    if (chain) {
      const left = Number(chain[1]);
      res.writeHead(302, { location: left > 1 ? `/chain/${left - 1}` : '/photo.jpg' });
      return void res.end();
    }
    const status = /^\/status\/(\d{3})$/.exec(path);
    if (status) {
      res.writeHead(Number(status[1]), { 'content-type': 'text/plain' });
      return void res.end(`status ${status[1]}`);
    }
    switch (path) {
      case '/redirect':
        res.writeHead(302, { location: url.searchParams.get('to') ?? '/photo.jpg' });
        return void res.end();
      case '/huge':
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        return stream(res, path, HUGE_BYTES);
      case '/huge-declared':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': HUGE_DECLARED_BYTES });
        return stream(res, path, HUGE_DECLARED_BYTES);
      case '/hang':
        return; // never answers; close() drops the connection
      case '/drip': {
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        const timer = setInterval(() => {
          count(path, 1);
          res.write(Buffer.from([0xff]));
        }, 100);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/short':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 1000 });
        res.write(fixtures.photo.subarray(0, 10));
        count(path, 10);
        setTimeout(() => res.socket?.destroy(), 50);
        return;
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
    }
  }

  const servers = [http.createServer((q, s) => handle(1, q, s)), http.createServer((q, s) => handle(2, q, s))];
  const listen = (server: http.Server, host: string) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
    });
  const port1 = await listen(servers[0], '127.0.0.1');
  const port2 = await listen(servers[1], '127.0.0.2');

  return {
    port1,
    port2,
    url1: (path) => `http://127.0.0.1:${port1}${path}`,
    url2: (path) => `http://127.0.0.2:${port2}${path}`,
    fixtures,
    hits: (path, listener) => (listener ? (hits.get(`${listener} ${path}`) ?? 0) : (hits.get(`1 ${path}`) ?? 0) + (hits.get(`2 ${path}`) ?? 0)),
    bytesSent: (path) => sent.get(path) ?? 0,
    setSwap: (bytes) => {
      swap = bytes;
    },
    variant: (tag) => withJpegComment(fixtures.photo, tag),
    hold(tag) {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      holds.set(tag, { arrive, released });
      return { arrived, release };
    },
    async close() {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}

export interface ConnectionAttempt {
  host: string;
  port: number;
}

/**
 * Test safety net: records every outgoing TCP connection of this process and blocks (with an error,
 * before any packet) those to private, link-local, CGNAT and unique-local addresses, so that even a
 * broken media guard never sends traffic off the machine. `exempt` hosts (e.g. the test database) pass.
 */
export function watchConnections(exempt: string[] = []): { attempts: ConnectionAttempt[]; restore(): void } {
  const attempts: ConnectionAttempt[] = [];
  const proto = net.Socket.prototype as unknown as { connect: (...args: unknown[]) => net.Socket };
  const original = proto.connect;
  const blocked = /^(10\.|172\.(1[6-9]|2\d|3[01])\.|192\.168\.|169\.254\.|100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.|f[cd][0-9a-f]{2}:|fe[89ab][0-9a-f]:)/i;
  proto.connect = function (this: net.Socket, ...args: unknown[]) {
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const options = (typeof first === 'object' && first !== null ? first : { port: first, host: args[1] }) as {
      host?: string;
      port?: number | string;
      path?: string;
    };
    const ipc = typeof options.path === 'string' && options.port === undefined && options.host === undefined;
    if (!ipc) {
      const host = String(options.host ?? 'localhost').replace(/^\[|\]$/g, '');
      attempts.push({ host, port: Number(options.port) });
      if (blocked.test(host) && !exempt.includes(host)) {
        process.nextTick(() => this.destroy(new Error(`test safety net: connection to ${host} blocked`)));
        return this;
      }
    }
    return original.apply(this, args);
  };
  return {
    attempts,
    restore: () => {
      proto.connect = original;
    },
  };
}

/**
 * An image server for the whole spec file: started before its tests, closed after them. Call it at the
 * top level of the file; the returned function gives the running server.
 */
export function useImageServer(): () => ImageServer {
  let server: ImageServer | undefined;
  beforeAll(async () => {
    server = await startImageServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => {
    if (!server) throw new Error('the image server is not started yet');
    return server;
  };
}
