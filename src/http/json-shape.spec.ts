import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { checkJsonShape, checkJsonText, JsonShapeError } from './json-shape';

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
