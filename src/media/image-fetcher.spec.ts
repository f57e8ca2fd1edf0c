import { createHash } from 'node:crypto';
import http from 'node:http';
import { AddressInfo, isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { HUGE_BYTES, ImageServer, startImageServer, watchConnections } from '../../test/support/image-server';
import { AppConfig } from '../config/app-config';
import { ImageFetcher } from './image-fetcher';
import { MediaError } from './media.errors';

function fetcher(env: Record<string, string> = {}): ImageFetcher {
  return new ImageFetcher(AppConfig.fromEnv({ DATA_DIR: tmpdir(), MEDIA_ALLOW_PRIVATE_HOSTS: 'true', ...env }));
}

async function refusal(work: Promise<unknown>): Promise<{ message: string; ms: number }> {
  const started = Date.now();
  try {
    await work;
  } catch (err) {
    expect(err).toBeInstanceOf(MediaError);
    return { message: (err as Error).message, ms: Date.now() - started };
  }
  throw new Error('expected the fetch to fail');
}

describe('ImageFetcher', () => {
  let images: ImageServer;
  let net: ReturnType<typeof watchConnections>;

  beforeAll(async () => {
    images = await startImageServer();
    net = watchConnections();
  });

  afterAll(async () => {
    net?.restore();
    await images?.close();
  });

  describe('with private hosts allowed', () => {
    const f = fetcher({ MEDIA_FETCH_TIMEOUT_MS: '3000' });

    it('fetches the exact bytes with their sha256 and content type', async () => {
      const before = images.hits('/photo.jpg', 1);
      const got = await f.fetch(images.url1('/photo.jpg'));
      expect(got.bytes.equals(images.fixtures.photo)).toBe(true);
      expect(got.checksum).toBe(createHash('sha256').update(images.fixtures.photo).digest('hex'));
      expect(got.contentType).toBe('image/jpeg');
      expect(images.hits('/photo.jpg', 1)).toBe(before + 1);

      const chunked = await f.fetch(images.url2('/logo.png?chunked'));
      expect(chunked.bytes.equals(images.fixtures.logo)).toBe(true);
      expect(chunked.contentType).toBe('image/png');
    });

    it('follows up to 3 redirects (relative and absolute, across hosts)', async () => {
      const before = images.hits('/photo.jpg');
      const got = await f.fetch(images.url1('/chain/3'));
      expect(got.bytes.equals(images.fixtures.photo)).toBe(true);
      expect(images.hits('/photo.jpg')).toBe(before + 1);

      const across = await f.fetch(images.url1(`/redirect?to=${encodeURIComponent(images.url2('/pic.webp'))}`));
      expect(across.bytes.equals(images.fixtures.webp)).toBe(true);
    });

    it('refuses a fourth redirect without following it', async () => {
      const before = images.hits('/photo.jpg');
      const last = images.hits('/chain/1');
      const { message } = await refusal(f.fetch(images.url1('/chain/4')));
      expect(message).toBe('more than 3 redirects');
      // /chain/4 -> 3 -> 2 -> 1 were requested; the fourth redirect (to the photo) was not followed.
      expect(images.hits('/chain/1')).toBe(last + 1);
      expect(images.hits('/photo.jpg')).toBe(before);
    });

    it('enforces the byte cap while streaming and stops reading', async () => {
      const capped = fetcher({ MEDIA_MAX_BYTES: String(1024 * 1024) });
      const { message, ms } = await refusal(capped.fetch(images.url1('/huge')));
      expect(message).toBe('image is over the 1048576-byte limit');
      expect(ms).toBeLessThan(2000);
      await new Promise((r) => setTimeout(r, 300));
      // The server noticed the client leave long before the 21 MB were written.
      expect(images.bytesSent('/huge')).toBeLessThan(HUGE_BYTES);
    });

    it('applies the cap to the exact byte: at the limit is fine, one over is refused', async () => {
      const size = images.fixtures.photo.length;
      const atLimit = await fetcher({ MEDIA_MAX_BYTES: String(size) }).fetch(images.url1('/photo.jpg?chunked'));
      expect(atLimit.bytes.length).toBe(size);
      const over = await refusal(fetcher({ MEDIA_MAX_BYTES: String(size - 1) }).fetch(images.url1('/photo.jpg?chunked')));
      expect(over.message).toBe(`image is over the ${size - 1}-byte limit`);
    });

    it('refuses a declared content-length over the cap before reading the body', async () => {
      const { message, ms } = await refusal(f.fetch(images.url1('/huge-declared')));
      expect(message).toBe(`image is ${25 * 1024 * 1024} bytes; the limit is ${20 * 1024 * 1024}`);
      expect(ms).toBeLessThan(1000);
      const size = images.fixtures.photo.length;
      const small = await refusal(fetcher({ MEDIA_MAX_BYTES: String(size - 1) }).fetch(images.url1('/photo.jpg')));
      expect(small.message).toBe(`image is ${size} bytes; the limit is ${size - 1}`);
    });

    it('the 20 MB default cap also stops a stream without content-length', async () => {
      const { message } = await refusal(f.fetch(images.url1('/huge')));
      expect(message).toBe(`image is over the ${20 * 1024 * 1024}-byte limit`);
    });

    it('times out on a server that never answers', async () => {
      const quick = fetcher({ MEDIA_FETCH_TIMEOUT_MS: '300' });
      const { message, ms } = await refusal(quick.fetch(images.url1('/hang')));
      expect(message).toBe('no complete answer within 300 ms');
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(1500);
    });

    it('one deadline covers the whole download: a trickling body times out too', async () => {
      const quick = fetcher({ MEDIA_FETCH_TIMEOUT_MS: '500' });
      const { message, ms } = await refusal(quick.fetch(images.url1('/drip')));
      expect(message).toBe('no complete answer within 500 ms');
      expect(ms).toBeLessThan(1500);
    });

    it('the deadline spans redirects', async () => {
      const quick = fetcher({ MEDIA_FETCH_TIMEOUT_MS: '400' });
      const { message, ms } = await refusal(quick.fetch(images.url1('/redirect?to=/hang')));
      expect(message).toBe('no complete answer within 400 ms');
      expect(ms).toBeLessThan(1500);
    });

    it('reports HTTP errors, early disconnects and refused connections as MediaErrors', async () => {
      expect((await refusal(f.fetch(images.url1('/status/404')))).message).toBe('the image server answered HTTP 404');
      expect((await refusal(f.fetch(images.url1('/status/500')))).message).toBe('the image server answered HTTP 500');
      expect((await refusal(f.fetch(images.url1('/short')))).message).toMatch(/closed the connection early|aborted|socket hang up/);

      const closed = http.createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((r) => closed.close(r));
      expect((await refusal(f.fetch(`http://127.0.0.1:${port}/x.jpg`))).message).toMatch(/^fetch failed: .*ECONNREFUSED/);
    });

    it.each([
      ['file:///etc/passwd', 'file'],
      ['ftp://127.0.0.1/photo.jpg', 'ftp'],
      ['data:image/png;base64,iVBORw0KGgo=', 'data'],
      ['javascript:alert(1)', 'javascript'],
      ['gopher://127.0.0.1:70/x', 'gopher'],
    ])('refuses %s: only http and https, even with private hosts allowed', async (url, scheme) => {
      const { message, ms } = await refusal(f.fetch(url));
      expect(message).toBe(`only http and https URLs are fetched (got ${scheme})`);
      expect(ms).toBeLessThan(500);
    });

    it('refuses a redirect to a file: URL', async () => {
      const { message } = await refusal(f.fetch(images.url1('/redirect?to=file:///etc/passwd')));
      expect(message).toBe('only http and https URLs are fetched (got file)');
    });

    it('refuses a string that is not a URL', async () => {
      expect((await refusal(f.fetch('not a url'))).message).toBe('not a valid URL: not a url');
      expect((await refusal(f.fetch('/relative/path.jpg'))).message).toBe('not a valid URL: /relative/path.jpg');
    });
  });

  describe('with private hosts not allowed', () => {
    const strict = fetcher({ MEDIA_ALLOW_PRIVATE_HOSTS: 'false', MEDIA_FETCH_TIMEOUT_MS: '3000' });

    it.each([
      ['127.0.0.1 (loopback)', (s: ImageServer) => s.url1('/photo.jpg'), /^refused to fetch from 127\.0\.0\.1: 127\.0\.0\.1 is a loopback address$/],
      [
        'localhost (a name resolving to loopback)',
        (s: ImageServer) => `http://localhost:${s.port1}/photo.jpg`,
        /^refused to fetch from localhost: (127\.0\.0\.1|::1) is a loopback address$/,
      ],
      ['[::1]', (s: ImageServer) => `http://[::1]:${s.port1}/photo.jpg`, /^refused to fetch from ::1: ::1 is a loopback address$/],
      ['[::ffff:127.0.0.1] (IPv4-mapped)', (s: ImageServer) => `http://[::ffff:127.0.0.1]:${s.port1}/photo.jpg`, /^refused to fetch from .*loopback address$/],
      ['0.0.0.0', (s: ImageServer) => `http://0.0.0.0:${s.port1}/photo.jpg`, /^refused to fetch from 0\.0\.0\.0: 0\.0\.0\.0 is an unspecified address$/],
      ['2130706433 (127.0.0.1 in decimal)', (s: ImageServer) => `http://2130706433:${s.port1}/photo.jpg`, /^refused to fetch from 127\.0\.0\.1: .*loopback/],
      ['127.0.0.2 (not on the allow list)', (s: ImageServer) => s.url2('/photo.jpg'), /^refused to fetch from 127\.0\.0\.2: .*loopback/],
    ])('refuses %s before connecting', async (_title, url, expected) => {
      const before = images.hits('/photo.jpg');
      const attempts = net.attempts.length;
      const { message, ms } = await refusal(strict.fetch(url(images)));
      expect(message).toMatch(expected);
      expect(ms).toBeLessThan(500);
      expect(images.hits('/photo.jpg')).toBe(before);
      // No socket to any address (a host name may reach the resolver, whose answer is refused).
      expect(net.attempts.slice(attempts).filter((a) => isIP(a.host))).toEqual([]);
    });

    it.each([
      ['http://10.0.0.1/x.jpg', /^refused to fetch from 10\.0\.0\.1: 10\.0\.0\.1 is a private address$/],
      ['http://192.168.1.1/x.jpg', /is a private address$/],
      ['http://169.254.169.254/latest/meta-data', /^refused to fetch from 169\.254\.169\.254: 169\.254\.169\.254 is a link-local address$/],
      ['http://100.100.100.200/latest/meta-data', /carrier-grade NAT/],
      ['http://[fd00:ec2::254]/latest/meta-data', /unique-local/],
    ])('refuses %s without sending a packet', async (url, expected) => {
      const attempts = net.attempts.length;
      const { message, ms } = await refusal(strict.fetch(url));
      expect(message).toMatch(expected);
      expect(ms).toBeLessThan(500);
      expect(net.attempts.slice(attempts)).toEqual([]);
    });

    it('an allowed host is fetched; a redirect from it to a refused address is refused', async () => {
      const allowList = fetcher({ MEDIA_ALLOW_PRIVATE_HOSTS: 'false', MEDIA_ALLOWED_HOSTS: '127.0.0.2' });
      const got = await allowList.fetch(images.url2('/photo.jpg'));
      expect(got.bytes.equals(images.fixtures.photo)).toBe(true);

      const before = images.hits('/photo.jpg', 1);
      const toLoopback = await refusal(allowList.fetch(images.url2(`/redirect?to=${encodeURIComponent(images.url1('/photo.jpg'))}`)));
      expect(toLoopback.message).toBe('refused to fetch from 127.0.0.1: 127.0.0.1 is a loopback address');
      const toName = await refusal(allowList.fetch(images.url2(`/redirect?to=${encodeURIComponent(`http://localhost:${images.port1}/photo.jpg`)}`)));
      expect(toName.message).toMatch(/^refused to fetch from localhost: .*loopback/);
      const toMetadata = await refusal(allowList.fetch(images.url2('/redirect?to=http://169.254.169.254/latest/meta-data')));
      expect(toMetadata.message).toMatch(/169\.254\.169\.254 is a link-local address/);
      expect(images.hits('/photo.jpg', 1)).toBe(before);
    });

    it('a CIDR range on the allow list works too', async () => {
      const cidr = fetcher({ MEDIA_ALLOW_PRIVATE_HOSTS: 'false', MEDIA_ALLOWED_HOSTS: '127.0.0.2/32' });
      expect((await cidr.fetch(images.url2('/pic.webp'))).bytes.equals(images.fixtures.webp)).toBe(true);
      expect((await refusal(cidr.fetch(images.url1('/pic.webp')))).message).toMatch(/127\.0\.0\.1 is a loopback address/);
    });

    it('file: and ftp: are refused here too', async () => {
      expect((await refusal(strict.fetch('file:///etc/passwd'))).message).toBe('only http and https URLs are fetched (got file)');
      expect((await refusal(strict.fetch('ftp://example.com/a.jpg'))).message).toBe('only http and https URLs are fetched (got ftp)');
    });
  });

  it('never tried to reach a private or link-local address', () => {
    expect(net.attempts.filter((a) => /^(10\.|169\.254\.|192\.168\.|100\.100\.|fd00)/.test(a.host))).toEqual([]);
  });
});
