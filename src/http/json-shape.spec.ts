import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { checkJsonShape, JsonShapeError, JsonShapeLimits, JsonTextScanner, MAX_NUMBER_CHARS } from './json-shape';

/** One pass of the scanner over a whole text, as the body parser makes it before parsing. */
const checkJsonText = (text: Uint8Array, limits: JsonShapeLimits) => new JsonTextScanner(limits).scan(text, 0, text.length);

function codeOf(fn: () => void): ErrorCode | 'ok' {
  try {
    fn();
    return 'ok';
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

describe('checkJsonShape', () => {
  const limits = { maxDepth: 4, maxValues: 10 };

  it('accepts scalars, flat objects and arrays within the limits', () => {
    for (const body of [undefined, null, 'text', 3, {}, [], { a: 1, b: 'x', c: null }, [1, 2, 3], { a: [1, { b: 2 }] }]) {
      expect(codeOf(() => checkJsonShape(body, limits))).toBe('ok');
    }
  });

  it('counts every value: containers and leaves', () => {
    expect(codeOf(() => checkJsonShape(new Array(9).fill(0), limits))).toBe('ok'); // 1 + 9
    expect(codeOf(() => checkJsonShape(new Array(10).fill(0), limits))).toBe(ErrorCode.TooLarge);
    expect(codeOf(() => checkJsonShape({ a: [[], [], []], b: [[], [], [], [], []] }, limits))).toBe(ErrorCode.TooLarge);
  });

  it('refuses nesting deeper than the limit (400), however deep, without recursion', () => {
    expect(codeOf(() => checkJsonShape({ a: { b: { c: {} } } }, { maxDepth: 4, maxValues: 1e6 }))).toBe('ok');
    expect(codeOf(() => checkJsonShape({ a: { b: { c: { d: {} } } } }, { maxDepth: 4, maxValues: 1e6 }))).toBe(ErrorCode.InvalidArgument);
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i += 1) deep = [deep];
    expect(codeOf(() => checkJsonShape(deep, { maxDepth: 16, maxValues: 1e7 }))).toBe(ErrorCode.InvalidArgument);
  });

  it('stops at the first array that breaks the value limit, whatever its length', () => {
    const huge = new Array(5_000_000);
    expect(codeOf(() => checkJsonShape({ huge }, { maxDepth: 16, maxValues: 1000 }))).toBe(ErrorCode.TooLarge);
  });
});

describe('checkJsonText', () => {
  const text = (s: string) => Buffer.from(s, 'utf8');
  const typeOf = (s: string, limits = { maxDepth: 4, maxValues: 10 }) => {
    try {
      checkJsonText(text(s), limits);
      return 'ok';
    } catch (err) {
      if (err instanceof JsonShapeError) return err.type;
      throw err;
    }
  };

  it('accepts bodies within the limits, whatever brackets, commas or escapes their strings hold', () => {
    expect(typeOf('{"a":1,"b":"x"}')).toBe('ok');
    expect(typeOf('[1,2,3]')).toBe('ok');
    expect(typeOf('{"a":"[[[[[[,,,,,,,,,,,,,,,{{{{{{"}')).toBe('ok');
    expect(typeOf('{"a":"quote \\" then [[[[[[[[[ in the same string"}')).toBe('ok');
    expect(typeOf('{"a":"ends with a backslash \\\\","b":[1]}')).toBe('ok');
    expect(typeOf('{"한글":"값 ,,,, [[[[["}')).toBe('ok');
  });

  it('refuses nesting deeper than the limit', () => {
    expect(typeOf('[[[[1]]]]')).toBe('ok');
    expect(typeOf('[[[[[1]]]]]')).toBe('entity.too.deep');
    expect(typeOf(`${'['.repeat(4_000_000)}${']'.repeat(4_000_000)}`, { maxDepth: 16, maxValues: 1e9 })).toBe('entity.too.deep');
  });

  it('refuses more values than the limit, counting containers and separators, and stops there', () => {
    expect(typeOf('[1,2,3,4,5,6,7,8,9]')).toBe('ok');
    expect(typeOf('[1,2,3,4,5,6,7,8,9,10,11]')).toBe('entity.too.many.values');
    expect(typeOf(`{"name":[${new Array(5_000_000).fill('[]').join(',')}]}`, { maxDepth: 16, maxValues: 1_000_000 })).toBe('entity.too.many.values');
  });

  it('agrees with checkJsonShape on real bodies (within one per container)', () => {
    const body = Array.from({ length: 50 }, (_, i) => ({ name: `n${i}`, sku: `s${i}`, url: `https://x/${i}`, originalPrice: i }));
    const limits = { maxDepth: 16, maxValues: 251 }; // 1 array + 50 objects + 200 fields
    expect(() => checkJsonText(text(JSON.stringify(body)), limits)).not.toThrow();
    expect(() => checkJsonShape(body, limits)).not.toThrow();
    const tight = { maxDepth: 16, maxValues: 200 };
    expect(() => checkJsonText(text(JSON.stringify(body)), tight)).toThrow(JsonShapeError);
    expect(() => checkJsonShape(body, tight)).toThrow(ApiException);
  });
});

describe('JsonTextScanner', () => {
  /** The scan done the plain way, a byte at a time, over the whole text at once. */
  function reference(text: Buffer, limits: { maxDepth: number; maxValues: number }) {
    let depth = 0;
    let values = 1;
    let inString = false;
    let closedAt = -1;
    const commas: number[] = [];
    for (let i = 0; i < text.length; i += 1) {
      const c = text[i];
      if (inString) {
        if (c === 0x5c) i += 1;
        else if (c === 0x22) inString = false;
        continue;
      }
      if (c === 0x22) inString = true;
      else if (c === 0x5b || c === 0x7b) {
        depth += 1;
        if (depth > limits.maxDepth) return { refused: 'entity.too.deep', at: i };
        values += 1;
        if (values > limits.maxValues) return { refused: 'entity.too.many.values', at: i };
      } else if (c === 0x5d || c === 0x7d) {
        depth -= 1;
        if (depth === 0 && closedAt < 0) closedAt = i;
      } else if (c === 0x2c) {
        values += 1;
        if (values > limits.maxValues) return { refused: 'entity.too.many.values', at: i };
        if (depth === 1 && closedAt < 0) commas.push(i);
      }
    }
    return { closedAt, commas, inString };
  }

  it('finds what a byte-at-a-time scan finds, whatever the strings hold and wherever the text is cut into steps', () => {
    // Pieces heavy in quotes, escapes (an escaped quote, an escaped backslash before a quote) and
    // brackets, plus long plain runs and multi-byte characters; a fixed seed, so any failure repeats.
    const pieces = ['"', '\\', '[', ']', '{', '}', ',', ':', ' ', '1', '\\"', '"\\\\"', 'é', '한', 'plain text run', '"x\\\\\\""'];
    let seed = 7;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 10_000; round += 1) {
      const text = Buffer.from(Array.from({ length: 1 + random(50) }, () => pieces[random(pieces.length)]).join(''));
      const limits = { maxDepth: 1 + random(6), maxValues: 1 + random(40) };
      const cuts = Array.from({ length: random(4) }, () => random(text.length + 1)).sort((a, b) => a - b);
      const scanner = new JsonTextScanner(limits, true);
      let seen: Record<string, unknown>;
      try {
        let at = 0;
        for (const cut of [...cuts, text.length]) {
          scanner.scan(text, at, cut);
          at = cut;
        }
        seen = { closedAt: scanner.closedAt, commas: scanner.topLevelCommas, inString: (scanner as unknown as { inString: boolean }).inString };
      } catch (err) {
        if (!(err instanceof JsonShapeError)) throw err;
        seen = { refused: err.type, at: (scanner as unknown as { next: number }).next };
      }
      expect({ text: text.toString(), cuts, seen }).toEqual({ text: text.toString(), cuts, seen: reference(text, limits) });
    }
  });
});

describe('JsonTextScanner with element limits (a sync body)', () => {
  const limits = { maxDepth: 16, maxValues: 1_000_000, element: { maxValues: 50, maxBytes: 4096 } };
  /** The refusal of a scan in steps of `step` bytes, or 'ok'. */
  function scanned(text: string, step = 1000): string {
    const bytes = Buffer.from(text);
    const scanner = new JsonTextScanner(limits, true);
    try {
      for (let at = 0; at < bytes.length; at += step) scanner.scan(bytes, at, Math.min(bytes.length, at + step));
      return 'ok';
    } catch (err) {
      if (err instanceof JsonShapeError) return `${err.type}: ${err.message}`;
      throw err;
    }
  }
  const item = (i: number) => JSON.stringify({ name: `Item ${i}`, sku: `S-${i}`, originalPrice: 1000 + i, description: 'x'.repeat(500) });

  it('accepts many elements each within the limits, however many there are', () => {
    expect(scanned(`[${Array.from({ length: 2000 }, (_, i) => item(i)).join(',')}]`)).toBe('ok');
    expect(scanned(`[${Array.from({ length: 100 }, () => JSON.stringify({ a: Array(45).fill(1) })).join(',')}]`)).toBe('ok');
  });

  it('refuses one element holding more values than an element may, at once, wherever it is', () => {
    const big = JSON.stringify({ a: Array(60).fill(0) });
    expect(scanned(`[${item(1)},${big},${item(2)}]`)).toBe('entity.too.many.values: An element of the request body holds more than 50 values');
    expect(scanned(`[${JSON.stringify(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i])))}]`)).toMatch(
      /^entity.too.many.values: An element/,
    );
  });

  it('refuses one element over its size, as soon as the scan is past it (not at its end)', () => {
    expect(scanned(`[${item(1)},${JSON.stringify({ description: 'y'.repeat(5000) })}]`)).toBe(
      'entity.element.too.large: An element of the request body is over 4 KB of JSON text',
    );
    // An element that never ends within the text: refused by the step that passes its limit.
    expect(scanned(`[{"description":"${'\\u0041'.repeat(10_000)}`)).toMatch(/^entity.element.too.large/);
    expect(scanned(`[${item(1)},"${'z'.repeat(5000)}"]`)).toMatch(/^entity.element.too.large/);
  });

  it('holds a body that is not an array to the limits of one element', () => {
    expect(scanned(item(1))).toBe('ok');
    expect(scanned(JSON.stringify({ a: Array(60).fill(0) }))).toBe('entity.too.many.values: A request body that is not a JSON array holds more than 50 values');
    expect(scanned(JSON.stringify({ a: 'q'.repeat(5000) }))).toBe(
      'entity.element.too.large: A request body that is not a JSON array is over 4 KB of JSON text',
    );
  });

  it('refuses a number (or a run that reads as one) longer than MAX_NUMBER_CHARS, on any body, without reading it to its end', () => {
    const plain = { maxDepth: 16, maxValues: 100 };
    const refusal = (text: string) => {
      try {
        new JsonTextScanner(plain).scan(Buffer.from(text), 0, text.length);
        return 'ok';
      } catch (err) {
        return err instanceof JsonShapeError ? err.type : String(err);
      }
    };
    expect(refusal(`[${'9'.repeat(MAX_NUMBER_CHARS)}]`)).toBe('ok');
    expect(refusal(`[${'9'.repeat(MAX_NUMBER_CHARS + 1)}]`)).toBe('entity.number.too.long');
    expect(refusal(`{"a":${'-'.repeat(5000)}}`)).toBe('entity.number.too.long');
    expect(refusal(`{"a":"${'9'.repeat(5000)}"}`)).toBe('ok'); // in a string: not a number
  });
});
