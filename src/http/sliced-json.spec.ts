import { createHash } from 'node:crypto';
import { TimeSlicer } from '../common/util/time-slicer';
import { ApiException } from '../common/errors/api.exception';
import { JsonShapeError } from './json-shape';
import { JsonSyntaxError, parseJsonInSlices, stringifyInSlices } from './sliced-json';

const LIMITS = { maxDepth: 16, maxValues: 2_000_000 };
/** A slicer whose every slice is due, so that every pause yields. */
const eager = () => new TimeSlicer(0, 0);
const parse = (text: string | Buffer, limits = LIMITS) => parseJsonInSlices(Buffer.isBuffer(text) ? text : Buffer.from(text), limits, eager());

function element(i: number): Record<string, unknown> {
  return {
    name: `무선 이어폰 ${i}, "quoted" [x] {y} \\ back`,
    brand: i % 3 ? null : 'Nordic Home',
    tags: [i, [i + 1, { deep: `a,b]${i}` }], true, false],
    price: i * 1.5,
    emoji: '😀',
  };
}

describe('parseJsonInSlices', () => {
  it('gives what JSON.parse gives, for large arrays read in many groups', async () => {
    const body = Array.from({ length: 3000 }, (_, i) => element(i));
    const text = ` \n[ ${body.map((e) => JSON.stringify(e)).join(' ,\n')} ]\r\n`;
    expect(text.length).toBeGreaterThan(300_000);
    await expect(parse(text)).resolves.toEqual(JSON.parse(text));
  });

  it('gives what JSON.parse gives for small and odd bodies', async () => {
    for (const text of ['[]', ' [ ] ', '[1]', '[[]]', '[{}]', '{"a":[1,2,{"b":","}]}', '[null,"]",",",{"[":"{"}]', '["\\\\",1]', '[-1e3,0.5]']) {
      await expect(parse(text)).resolves.toEqual(JSON.parse(text));
    }
  });

  it('drops a leading BOM and reads an empty body as {}, as body-parser does', async () => {
    await expect(parse(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[1,2]')]))).resolves.toEqual([1, 2]);
    await expect(parse('')).resolves.toEqual({});
  });

  it('keeps an escaped quote that falls on the boundary between two scan steps', async () => {
    for (let pad = 262_140; pad < 262_150; pad += 1) {
      const value = `${'a'.repeat(pad)}\\",[{`;
      const text = `["${value}", "x"]`;
      await expect(parse(text)).resolves.toEqual(JSON.parse(text));
    }
  });

  it('refuses whatever JSON.parse refuses, and non-container tops (strict)', async () => {
    const big = Array.from({ length: 2000 }, (_, i) => JSON.stringify(element(i)));
    const cases = [
      '[1,2',
      '[1,,2]',
      '[1,]',
      '[,1]',
      '[,]',
      '[1] x',
      '[1]]',
      '[1][2]',
      '[{]}',
      '[1 2]',
      '["a]',
      '[',
      '   ',
      'nul',
      `[${big.slice(0, 1000).join(',')},,${big.slice(1000).join(',')}]`,
      `[${big.join(',')},]`,
      `[${big.join(',')}`,
      `[${big.join(',')}]}`,
    ];
    for (const text of cases) {
      expect(() => JSON.parse(text) as unknown).toThrow();
      await expect(parse(text)).rejects.toBeInstanceOf(JsonSyntaxError);
    }
    // JSON, but not an object or an array at the top: refused as body-parser's strict mode does.
    for (const text of ['"text"', '42', ' null', 'true']) await expect(parse(text)).rejects.toBeInstanceOf(JsonSyntaxError);
    await expect(parse('[1,]')).rejects.toMatchObject({ type: 'entity.parse.failed' });
  });

  it('reads a number with more digits than a double keeps as its digits, in objects and across groups', async () => {
    // JSON.parse would give 123456789012.12344 and 1e12.
    await expect(parse('{"p": 123456789012.12345, "q": 1000000000000.00005, "r": -0.00000012345678901234567e-3}')).resolves.toEqual({
      p: '123456789012.12345',
      q: '1000000000000.00005',
      r: '-0.00000012345678901234567e-3',
    });
    // Up to 15 significant digits (leading zeros are not) stay numbers: a double gives each back.
    await expect(parse('[123456789012345, 0.000123456789012345, 1.5e300, "1234567890123456", -0]')).resolves.toEqual(
      JSON.parse('[123456789012345, 0.000123456789012345, 1.5e300, "1234567890123456", -0]'),
    );
    const body = Array.from({ length: 3000 }, (_, i) => ({ i, price: `${i + 1}0000000000.123456`, name: `a ${i}` }));
    const text = `[${body.map((e) => JSON.stringify(e).replace(`"${e.price}"`, e.price)).join(',')}]`;
    expect(text.length).toBeGreaterThan(130_000);
    await expect(parse(text)).resolves.toEqual(body);
  });

  it('leaves malformed number-like text for JSON.parse to refuse', async () => {
    for (const text of ['[--12345678901234567]', '[01234567890123456789]', '[1234567890123456.]', '{"a": 12345678901234567e}']) {
      await expect(parse(text)).rejects.toBeInstanceOf(JsonSyntaxError);
    }
  });

  it('refuses a body nested too deep or holding too many values before parsing it', async () => {
    await expect(parse(`${'['.repeat(20)}${']'.repeat(20)}`)).rejects.toMatchObject({ type: 'entity.too.deep' });
    await expect(parse(`[${Array.from({ length: 500 }, () => '1').join(',')}]`, { maxDepth: 16, maxValues: 100 })).rejects.toBeInstanceOf(JsonShapeError);
  });

  it('counts values over the whole array, across groups', async () => {
    const text = JSON.stringify(Array.from({ length: 3000 }, (_, i) => element(i)));
    // Each element is 13 values (itself, its 5 fields, 4 + 2 + 1 inside tags); the array 1 more.
    await expect(parse(text, { maxDepth: 16, maxValues: 39_001 })).resolves.toHaveLength(3000);
    const tooMany = parse(text, { maxDepth: 16, maxValues: 39_000 });
    await expect(tooMany).rejects.toBeDefined();
    await tooMany.catch((err: unknown) => expect(err instanceof JsonShapeError || err instanceof ApiException).toBe(true));
  });
});

describe('stringifyInSlices', () => {
  const etagOf = (bytes: Buffer) => `W/"${bytes.length.toString(16)}-${createHash('sha1').update(bytes).digest('base64').substring(0, 27)}"`;

  it('gives the bytes of JSON.stringify and the ETag Express gives them', async () => {
    const bodies: Array<Record<string, unknown>> = [
      { results: Array.from({ length: 2345 }, (_, i) => element(i)), totalCount: 2345, createCount: 1, updateCount: 2, failCount: 0, _s: 0 },
      { results: [], totalCount: 0, _s: 0 },
      { a: undefined, results: [undefined, null, 1], f: () => 1, nested: { list: [1, 2] }, when: new Date(0), _s: 0 },
      {},
      // Large elements (a goods item with a 10,000-character description) among small ones: groups of one.
      { results: Array.from({ length: 300 }, (_, i) => ({ i, text: i % 7 ? 'x' : '가나다라마'.repeat(2000 + i) })), _s: 0 },
    ];
    for (const body of bodies) {
      const { chunks, length, etag } = await stringifyInSlices(body, eager());
      const bytes = Buffer.concat(chunks);
      const expected = Buffer.from(JSON.stringify(body));
      expect(bytes.equals(expected)).toBe(true);
      expect(length).toBe(expected.length);
      expect(etag).toBe(etagOf(expected));
    }
  });
});
