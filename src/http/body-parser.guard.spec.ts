import { PassThrough } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { ApiException } from '../common/errors/api.exception';
import { readJsonBody } from './body-parser.guard';

type FakeRequest = PassThrough & { complete?: boolean; headers: Record<string, string> };

/** A request body stream with these headers: `complete` as Node's IncomingMessage sets it once the whole body has come. */
function request(headers: Record<string, string> = {}): FakeRequest {
  const stream = Object.assign(new PassThrough(), { headers }) as FakeRequest;
  stream.once('end', () => (stream.complete = true));
  return stream;
}

/** Sends `bytes` in chunks of `size` and ends the body. */
function send(req: FakeRequest, bytes: Buffer, size = 7_001): void {
  for (let at = 0; at < bytes.length; at += size) req.write(bytes.subarray(at, at + size));
  req.end();
}

/** The refusal's status and code, or the bytes' length when it was read. */
async function outcome(read: Promise<Buffer>): Promise<string> {
  try {
    return `read ${(await read).length}`;
  } catch (err) {
    if (err instanceof ApiException) return `${err.code} ${err.message}`;
    throw err;
  }
}

describe('readJsonBody (a JSON body read into one buffer as it comes)', () => {
  const sent = Buffer.from(Array.from({ length: 300_000 }, (_, i) => 32 + (i % 90)));

  it('gives the bytes sent, in order, across many chunks: with a Content-Length, without one, and empty', async () => {
    const declared = request({ 'content-length': String(sent.length) });
    const a = readJsonBody(declared, 1_000_000, '1mb');
    send(declared, sent);
    expect((await a).equals(sent)).toBe(true);
    const chunked = request({ 'transfer-encoding': 'chunked' });
    const b = readJsonBody(chunked, 1_000_000, '1mb');
    send(chunked, sent);
    expect((await b).equals(sent)).toBe(true);
    const empty = request({ 'content-length': '0' });
    const c = readJsonBody(empty, 1_000_000, '1mb');
    empty.end();
    expect((await c).length).toBe(0);
  });

  it('decompresses gzip, deflate and br bodies; an unknown encoding is 415, one that does not decompress 400', async () => {
    for (const [encoding, packed] of [
      ['gzip', gzipSync(sent)],
      ['deflate', deflateSync(sent)],
      ['br', brotliCompressSync(sent)],
      ['GZIP', gzipSync(sent)],
    ] as const) {
      const req = request({ 'content-encoding': encoding, 'content-length': String(packed.length) });
      const read = readJsonBody(req, 1_000_000, '1mb');
      send(req, packed);
      expect((await read).equals(sent)).toBe(true);
    }
    await expect(outcome(readJsonBody(request({ 'content-encoding': 'zip' }), 1_000_000, '1mb'))).resolves.toMatch(/^-415 /);
    const broken = request({ 'content-encoding': 'gzip' });
    const read = readJsonBody(broken, 1_000_000, '1mb');
    send(broken, Buffer.from('not gzip at all'));
    await expect(outcome(read)).resolves.toBe('-510 The request body could not be decoded (check its Content-Encoding)');
  });

  it('refuses a body past the limit as soon as it is (a bomb as soon as what it inflates to is), without reading the rest', async () => {
    const chunked = request({ 'transfer-encoding': 'chunked' });
    const a = readJsonBody(chunked, 100_000, '100kb');
    chunked.write(sent.subarray(0, 150_000)); // not ended: refused all the same
    await expect(outcome(a)).resolves.toBe('-413 The request body is over the 100kb limit of this route');
    const bomb = request({ 'content-encoding': 'gzip' });
    const b = readJsonBody(bomb, 100_000, '100kb');
    bomb.write(gzipSync(Buffer.alloc(5_000_000, 0x20))); // 5 MB of blanks in about 5 KB, not ended
    await expect(outcome(b)).resolves.toBe('-413 The request body is over the 100kb limit of this route');
  });

  it('refuses a body that ends short of its Content-Length, runs past it, or whose connection closes first', async () => {
    const short = request({ 'content-length': '10' });
    const a = readJsonBody(short, 1_000, '1kb');
    short.end(Buffer.from('[1,2]'));
    await expect(outcome(a)).resolves.toBe('-510 The request body does not match its Content-Length');
    const long = request({ 'content-length': '3' });
    const b = readJsonBody(long, 1_000, '1kb');
    long.end(Buffer.from('[1,2]'));
    await expect(outcome(b)).resolves.toBe('-510 The request body does not match its Content-Length');
    const cut = request({ 'content-length': '10' });
    const c = readJsonBody(cut, 1_000, '1kb');
    cut.write(Buffer.from('[1,'));
    cut.destroy();
    await expect(outcome(c)).resolves.toBe('-510 The request body ended early');
  });
});
