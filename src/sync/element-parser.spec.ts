import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { SyncGoodsElementDto } from '../goods/dto/goods-body.dto';
import { GoodsLimits } from '../goods/goods.limits';
import { parseElement, plainlyValid } from './element-parser';

/** What the library alone makes of an element's fields: the DTO, or null when it refuses them. */
function byLibrary(echo: Record<string, unknown>): SyncGoodsElementDto | null {
  const dto = plainToInstance(SyncGoodsElementDto, echo);
  return validateSync(dto, { whitelist: true, forbidUnknownValues: false, stopAtFirstError: true }).length ? null : dto;
}

/** Own keys in order, with values told apart by Object.is (-0 from 0, NaN). */
function shape(dto: object): Array<[string, unknown]> {
  return Object.entries(dto).map(([k, v]) => [k, Object.is(v, -0) ? '-0' : v]);
}

const text = (n: number, c = 'a') => c.repeat(n);
const TEXTS: unknown[] = [
  'Smart watch 7',
  '  padded  ',
  '스마트 워치',
  '',
  '   ',
  '\u3000전각 공백\u3000',
  '\uFEFFbom',
  'ｆｕｌｌｗｉｄｔｈ',
  'emoji 😀',
  'lone \ud800 surrogate',
  'nul \u0000 inside',
  'variation \u2764\uFE0F',
  '\uFE0F',
  text(GoodsLimits.sku),
  text(GoodsLimits.sku + 1),
  ` ${text(GoodsLimits.sku)} `,
  text(GoodsLimits.name),
  text(GoodsLimits.name + 1),
  `${text(GoodsLimits.name - 1)}😀`,
  text(GoodsLimits.description),
  text(GoodsLimits.description + 1),
  'javascript:alert(1)',
  12,
  true,
  null,
];
const URLS: unknown[] = [
  'https://shop.example.com/goods/1',
  ' http://shop.example.com/a?b=c ',
  'HTTPS://EXAMPLE.COM',
  'https://예시.한국/상품',
  'ftp://example.com/x',
  'javascript:alert(1)',
  '/relative/path',
  'http://',
  'https:// spaced.example.com',
  `https://example.com/${text(GoodsLimits.url - 20)}`,
  `https://example.com/${text(GoodsLimits.url)}`,
  'https://example.com/😀',
  'https://example.com/\ud800',
  '',
  42,
  false,
  null,
];
const NUMBERS: unknown[] = [
  0,
  -0,
  19.99,
  100,
  100.5,
  -1,
  GoodsLimits.maxPrice,
  GoodsLimits.maxPrice + 1,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  '19.99',
  ' 12 ',
  '-0',
  '.5',
  '5.',
  '1e3',
  '0x10',
  '',
  'abc',
  '１２',
  true,
  null,
];
const FIELDS: Record<string, unknown[]> = {
  name: TEXTS,
  brand: TEXTS,
  description: TEXTS,
  sku: TEXTS,
  url: URLS,
  mediaUrl: URLS,
  originalPrice: NUMBERS,
  discountedPrice: NUMBERS,
  discountPercentage: NUMBERS,
  id: NUMBERS,
};

/** A deterministic pseudo-random sequence (the same elements on every run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

describe('parseElement: the fast path for plainly valid elements', () => {
  it('accepts exactly what class-transformer and class-validator accept, with the same write, for every single field value', () => {
    let fast = 0;
    for (const [field, values] of Object.entries(FIELDS)) {
      for (const value of values) {
        const echo = { [field]: value };
        const mine = plainlyValid(echo);
        const library = byLibrary(echo);
        if (mine) {
          fast += 1;
          expect({ field, value, accepted: library !== null }).toEqual({ field, value, accepted: true });
          expect(shape(mine)).toEqual(shape(library as SyncGoodsElementDto));
          expect(mine).toBeInstanceOf(SyncGoodsElementDto);
        }
      }
    }
    // The common cases do take the fast path (else it would be dead code, and the speed-up gone).
    expect(fast).toBeGreaterThan(60);
  });

  it('agrees with the library on 20,000 generated elements (parseElement answers as the library alone would)', () => {
    const next = random(7);
    const keys = Object.keys(FIELDS);
    let fast = 0;
    for (let n = 0; n < 20_000; n++) {
      const echo: Record<string, unknown> = {};
      // Mostly valid values, so that elements with several fields often pass as a whole.
      for (const key of keys) {
        if (next() < 0.5) continue;
        const values = FIELDS[key];
        const pick = next() < 0.7 ? values[Math.floor(next() * 3)] : values[Math.floor(next() * values.length)];
        echo[key] = pick;
      }
      const mine = plainlyValid(echo);
      const library = byLibrary(echo);
      if (mine) {
        fast += 1;
        expect(library).not.toBeNull();
        expect(shape(mine)).toEqual(shape(library as SyncGoodsElementDto));
      }
      const parsed = parseElement({ row: n, data: echo });
      if (library) {
        const keyed = library.id !== undefined || library.sku !== undefined || library.url !== undefined;
        expect(parsed.error === undefined).toBe(keyed);
        if (keyed) expect(shape(parsed.write as object)).toEqual(shape(library));
      } else {
        expect(parsed.error).toEqual(expect.any(String));
      }
    }
    expect(fast).toBeGreaterThan(1000);
  });

  it('reads null for a field that cannot be cleared as absent, and blank text for one that may be as null; a FAIL row sent back reads every null as not sent', () => {
    const failRow = {
      id: null,
      sku: 'S-9',
      url: null,
      name: null,
      brand: null,
      description: null,
      mediaUrl: null,
      originalPrice: null,
      currency: 'KRW',
      medias: [],
      row: 3,
      status: 'FAIL',
    };
    // Sent back as it is, a FAIL row changes only what it holds: its nulls are fields its element did not send.
    const resent = parseElement({ row: 1, data: failRow });
    expect(resent.error).toBeUndefined();
    expect(shape(resent.write as object).filter(([, v]) => v !== undefined)).toEqual([['sku', 'S-9']]);
    // The same element without status FAIL: null clears the fields that may be cleared.
    const parsed = parseElement({ row: 1, data: { ...failRow, status: undefined } });
    expect(parsed.error).toBeUndefined();
    expect(shape(parsed.write as object).filter(([, v]) => v !== undefined)).toEqual([
      ['brand', null],
      ['description', null],
      ['sku', 'S-9'],
      ['mediaUrl', null],
      ['originalPrice', null],
    ]);
    const blank = parseElement({ row: 2, data: { id: null, sku: 'S-10', brand: '', mediaUrl: ' ', originalPrice: '', description: '' } });
    expect(blank.write).toEqual(expect.objectContaining({ sku: 'S-10', brand: null, mediaUrl: null, originalPrice: null, description: '' }));
    // The library reads them the same way.
    expect(shape(byLibrary({ sku: 'S-10', brand: '', mediaUrl: ' ', originalPrice: '' }) as object)).toEqual(
      shape(plainlyValid({ sku: 'S-10', brand: '', mediaUrl: ' ', originalPrice: '' }) as object),
    );
    expect(parseElement({ row: 3, data: { id: null, sku: null, url: null, name: 'no key' } }).error).toBe(
      'one of id, sku or url is required to match or create an item',
    );
  });

  it('takes no field it has no rule for (unknown or inherited names)', () => {
    expect(plainlyValid({ sku: 'S-1', toString: 'x' })).toBeUndefined();
    expect(plainlyValid({ sku: 'S-1', currency: 'KRW' })).toBeUndefined();
    expect(plainlyValid({ sku: 'S-1' })).toBeInstanceOf(SyncGoodsElementDto);
  });

  it('leaves the messages of refused elements to the library', () => {
    expect(parseElement({ row: 1, data: { sku: 'S-1', url: 'javascript:alert(1)', name: 'x' } }).error).toBe('url must be an absolute http or https URL');
    expect(parseElement({ row: 2, data: { sku: ' ', url: 'https://a.example.com' } }).error).toBe('sku must not be empty');
    expect(parseElement({ row: 3, data: { sku: 'S-3', originalPrice: '1,000' } }).error).toBe('originalPrice must be a number');
    // A power of ten (a CSV cell of 1E+12, as spreadsheets write large numbers) is a number.
    expect(parseElement({ row: 3, data: { sku: 'S-3', originalPrice: '1E+3' } }).write).toMatchObject({ originalPrice: 1000 });
    expect(parseElement({ row: 4, data: { name: 'no key' } }).error).toBe('one of id, sku or url is required to match or create an item');
    expect(parseElement({ row: 5, data: { sku: ' S-5 ', originalPrice: ' 19.99 ' } }).write).toMatchObject({ sku: 'S-5', originalPrice: 19.99 });
  });
});
