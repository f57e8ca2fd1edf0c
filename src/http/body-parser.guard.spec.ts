import { PassThrough } from 'node:stream';
import { readDeclaredBody } from './body-parser.guard';

/** A request body stream: `complete` as Node's IncomingMessage sets it once the whole body has come. */
function body(): PassThrough & { complete?: boolean } {
  const stream = new PassThrough() as PassThrough & { complete?: boolean };
  stream.once('end', () => (stream.complete = true));
  return stream;
}

describe('readDeclaredBody (a JSON body with a Content-Length, read into one buffer as it comes)', () => {
  it('gives the bytes sent, in order, across many chunks; an empty body too', async () => {
    const req = body();
    const read = readDeclaredBody(req, 300_000);
    const sent = Buffer.from(Array.from({ length: 300_000 }, (_, i) => 32 + (i % 90)));
    for (let at = 0; at < sent.length; at += 7_001) req.write(sent.subarray(at, at + 7_001));
    req.end();
    expect((await read).equals(sent)).toBe(true);
    const empty = body();
    const none = readDeclaredBody(empty, 0);
    empty.end();
    expect((await none).length).toBe(0);
  });

  it('refuses a body that ends short of its length, or runs past it, as raw-body does', async () => {
    const short = body();
    const a = readDeclaredBody(short, 10);
    short.end(Buffer.from('[1,2]'));
    await expect(a).rejects.toMatchObject({ type: 'request.size.invalid', status: 400 });
    const long = body();
    const b = readDeclaredBody(long, 3);
    long.end(Buffer.from('[1,2]'));
    await expect(b).rejects.toMatchObject({ type: 'request.size.invalid', status: 400 });
  });

  it('refuses a body whose connection closes before it is all there', async () => {
    const req = body();
    const read = readDeclaredBody(req, 10);
    req.write(Buffer.from('[1,'));
    req.destroy();
    await expect(read).rejects.toMatchObject({ type: 'request.aborted', status: 400 });
  });
});
