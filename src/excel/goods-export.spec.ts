import { finished } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { eventually } from '../../test/support/eventually';
import { Goods } from '../goods/entities/goods.entity';
import { neutralizeCsvText, unquoteCsvText } from './csv-text';
import { csvExport, GoodsPages, xlsxExport } from './goods-export';
import { decodeXlsxText, encodeXlsxText } from './xlsx-text';

function goods(id: number): Goods {
  return Object.assign(new Goods(), {
    id,
    sku: `S-${id}`,
    url: `https://shop.example.com/${id}`,
    name: `Item ${id}`,
    brand: null,
    description: null,
    mediaUrl: null,
    originalPrice: id,
    discountedPrice: null,
    discountPercentage: null,
  });
}

/** Pages of `size` goods; throws when asked for page `failAt`; records what was read and whether it was closed. */
function pages(count: number, size: number, failAt?: number): { pages: GoodsPages; read: number[]; closed: () => boolean } {
  const read: number[] = [];
  let closed = false;
  async function* gen(): AsyncGenerator<Goods[]> {
    try {
      for (let p = 0; p < count; p++) {
        if (p === failAt) throw new Error('database gone');
        read.push(p);
        yield Array.from({ length: size }, (_, i) => goods(p * size + i + 1));
      }
    } finally {
      closed = true;
    }
  }
  return { pages: gen(), read, closed: () => closed };
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

describe('CSV text neutralisation', () => {
  const values = ['=1+2', '+1', '-1', '@x', '\tx', '\rx', "'=x", "''=x", "'plain", 'plain', "'", '', 'a=b', "'-"];
  it('prefixes a quote to formula starts (and to quotes before one), and the import takes exactly that quote off', () => {
    expect(neutralizeCsvText('=1+2')).toBe("'=1+2");
    expect(neutralizeCsvText("'=x")).toBe("''=x");
    expect(neutralizeCsvText("'plain")).toBe("'plain");
    expect(neutralizeCsvText('a=b')).toBe('a=b');
    for (const v of values) {
      expect(unquoteCsvText(neutralizeCsvText(v))).toBe(v);
      expect(neutralizeCsvText(v)).not.toMatch(/^[=+\-@\t\r]/);
    }
    // A quote typed before a formula start by hand is read as the neutralisation too.
    expect(unquoteCsvText("'=SUM(A1)")).toBe('=SUM(A1)');
  });

  it('writes a U+0000 (only text stored before the API refused it holds one) as U+FFFD, so the file stays a text file', () => {
    expect(neutralizeCsvText('x\u0000y\u0000')).toBe('x\uFFFDy\uFFFD');
    expect(neutralizeCsvText('\u0000=1')).toBe('\uFFFD=1');
  });
});

describe('xlsx text escapes', () => {
  it('writes CR, controls and literal escapes so that they read back exactly', () => {
    for (const v of ['a\rb', 'x\u0007y\u001f\u007f', 'literal _x000D_ text', '_x005F_', 'plain', 'tab\tand\nnewline']) {
      expect(decodeXlsxText(encodeXlsxText(v))).toBe(v);
      expect([...encodeXlsxText(v)].filter((ch) => ch.charCodeAt(0) < 0x20 && ch !== '\t' && ch !== '\n')).toEqual([]);
    }
    expect(encodeXlsxText('a\rb')).toBe('a_x000D_b');
  });
});

describe('csvExport', () => {
  it('writes the header and one line per goods, page after page', async () => {
    const source = pages(3, 2);
    const text = (await drain(csvExport(source.pages))).toString('utf8');
    expect(text.split('\r\n')).toHaveLength(1 + 6 + 1);
    expect(text.startsWith('\uFEFFid,sku,url,name,brand,description,mediaUrl,originalPrice,discountedPrice,discountPercentage\r\n1,S-1,')).toBe(true);
    expect(source.closed()).toBe(true);
  });

  it('fails the stream (never ends it like a complete file) when a page cannot be read', async () => {
    const stream = csvExport(pages(5, 2, 2).pages);
    await expect(drain(stream)).rejects.toThrow('database gone');
  });

  it('lets the event loop run while a consumer reads as fast as it is written (pages read at once, as SQLite reads them)', async () => {
    const source = pages(40, 1000);
    let chunks = 0;
    const turns: number[] = [];
    // An immediate re-armed at every turn of the event loop records how far the export was at that turn.
    let stopped = false;
    const tick = () => {
      turns.push(chunks);
      if (!stopped) setImmediate(tick);
    };
    setImmediate(tick);
    for await (const chunk of csvExport(source.pages)) chunks += chunk ? 1 : 0;
    stopped = true;
    // 40,000 rows take far more than one slice: other work ran between their chunks, not only after the last.
    expect(turns.filter((at) => at > 0 && at < chunks).length).toBeGreaterThan(1);
  });

  it('stops reading pages when the consumer goes away', async () => {
    const source = pages(1000, 1000);
    const stream = csvExport(source.pages);
    await new Promise((resolve) => stream.once('data', resolve));
    stream.destroy();
    await finished(stream).catch(() => undefined);
    await new Promise((r) => setImmediate(r));
    expect(source.closed()).toBe(true);
    expect(source.read.length).toBeLessThan(1000);
  });
});

describe('xlsxExport', () => {
  // exceljs is loaded on first use (over a second on a busy machine).
  jest.setTimeout(30_000);
  it('writes a workbook (a zip)', async () => {
    const bytes = await drain(await xlsxExport(pages(2, 3).pages));
    expect(bytes.subarray(0, 2).toString()).toBe('PK');
  });

  it('fails the stream when a page cannot be read', async () => {
    const stream = await xlsxExport(pages(5, 2, 1).pages);
    await expect(drain(stream)).rejects.toThrow('database gone');
  });

  it('waits for the reader (backpressure) and stops reading pages when it goes away', async () => {
    const source = pages(1000, 1000);
    const stream = await xlsxExport(source.pages);
    await new Promise((resolve) => stream.once('readable', resolve));
    // Not reading: the writer stops once about 1 MB waits (some 20 pages of 1,000 rows at ~55 kB each,
    // compressed); without backpressure it would run through all 1,000 pages.
    await new Promise((r) => setTimeout(r, 200));
    expect(source.read.length).toBeLessThan(40);
    stream.destroy();
    // The writer ends the page source once its pending write settles: waited for (a busy machine may take
    // a while), not a fixed time.
    await eventually(
      async () => source.closed(),
      (closed) => closed,
      10_000,
      10,
    );
    expect(source.closed()).toBe(true);
    expect(source.read.length).toBeLessThan(40);
  });
});
