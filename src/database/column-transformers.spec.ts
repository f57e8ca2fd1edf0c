import { toDecimalString } from '../common/util/decimal';
import { bigintTransformer, decimalTransformer } from './column-transformers';

describe('toDecimalString (scale 4)', () => {
  const d = (value: number | string) => toDecimalString(value, 4);

  it('keeps prices with up to 4 decimals exactly', () => {
    expect(d(19.99)).toBe('19.99');
    expect(d(1234567.8901)).toBe('1234567.8901');
    expect(d(0.0001)).toBe('0.0001');
    expect(d(399000)).toBe('399000');
    expect(d(0)).toBe('0');
    expect(d(999999999999.9999)).toBe('999999999999.9999');
  });

  it('rounds half away from zero at the 4th decimal, on the decimal digits', () => {
    expect(d(1.00005)).toBe('1.0001'); // binary 1.00005 is just below; the decimal text is what counts
    expect(d(1.00004)).toBe('1');
    expect(d(1.000049)).toBe('1');
    expect(d(0.99995)).toBe('1');
    expect(d(9.99995)).toBe('10');
    expect(d(99999.99995)).toBe('100000');
    expect(d(0.00005)).toBe('0.0001');
    expect(d(2.12344)).toBe('2.1234');
    expect(d(2.12345)).toBe('2.1235');
  });

  it('gives whole numbers the same text as the digit-by-digit path (the fast path for integers)', () => {
    const samples = [0, -0, 1, -1, 9, 10, 399000, -399000, 1e12, 2 ** 53 - 1, -(2 ** 53 - 1), 123456789012345];
    for (let i = 0; i < 2000; i++) samples.push(Math.floor((Math.random() - 0.5) * 2 ** (i % 53)));
    for (const n of samples) {
      expect(d(n)).toBe(d(String(n)));
      expect(toDecimalString(n, 0)).toBe(toDecimalString(String(n), 0));
    }
    expect(d(-0)).toBe('0');
  });

  it('handles exponent forms', () => {
    expect(d(1e-7)).toBe('0');
    expect(d('1e-7')).toBe('0');
    expect(d(5e-5)).toBe('0.0001');
    expect(d(1e12)).toBe('1000000000000');
    expect(d('1e12')).toBe('1000000000000');
    expect(d('1.5E3')).toBe('1500');
  });

  it('handles negative values, half away from zero, and never yields "-0"', () => {
    expect(d(-19.99)).toBe('-19.99');
    expect(d(-1.00005)).toBe('-1.0001');
    expect(d(-0.99995)).toBe('-1');
    expect(d(-1.00004)).toBe('-1');
    expect(d(-0.00001)).toBe('0');
    expect(d(-0)).toBe('0');
  });

  it('accepts numeric strings and returns canonical text', () => {
    expect(d('19.99')).toBe('19.99');
    expect(d(' 19.9900 ')).toBe('19.99');
    expect(d('007.50')).toBe('7.5');
    expect(d('.5')).toBe('0.5');
    expect(d('5.')).toBe('5');
    expect(d('1234567.89015')).toBe('1234567.8902');
    expect(d('12345678901234.56785')).toBe('12345678901234.5679'); // beyond double precision, still exact
  });

  it('refuses text that is not a decimal', () => {
    expect(() => d('abc')).toThrow(/not a decimal/);
    expect(() => d('1.2.3')).toThrow();
    expect(() => d('1,5')).toThrow();
    expect(() => d('--1')).toThrow();
  });

  it('honours other scales', () => {
    expect(toDecimalString(1.25, 1)).toBe('1.3');
    expect(toDecimalString(1.24, 1)).toBe('1.2');
    expect(toDecimalString(2.5, 0)).toBe('3');
    expect(toDecimalString(-2.5, 0)).toBe('-3');
  });
});

describe('decimalTransformer', () => {
  const t = decimalTransformer(4);

  it('writes exact decimal text rounded to the scale', () => {
    expect(t.to(19.99)).toBe('19.99');
    expect(t.to(1234567.8901)).toBe('1234567.8901');
    expect(t.to(1.00005)).toBe('1.0001');
    expect(t.to('42.10')).toBe('42.1');
  });

  it('passes null and undefined through on write', () => {
    expect(t.to(null)).toBeNull();
    expect(t.to(undefined)).toBeUndefined();
  });

  it('reads numbers (mysql2 gives DECIMAL as text, SQLite as number)', () => {
    expect(t.from('1234567.8901')).toBe(1234567.8901);
    expect(t.from('19.9900')).toBe(19.99);
    expect(t.from(19.99)).toBe(19.99);
    expect(t.from('0.0000')).toBe(0);
    expect(t.from(null)).toBeNull();
    expect(t.from(undefined)).toBeNull();
  });
});

describe('bigintTransformer', () => {
  it('reads BIGINT text as a number', () => {
    expect(bigintTransformer.from('123')).toBe(123);
    expect(bigintTransformer.from(456)).toBe(456);
    expect(bigintTransformer.from('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('passes null and undefined through', () => {
    expect(bigintTransformer.from(null)).toBeNull();
    expect(bigintTransformer.from(undefined)).toBeUndefined();
  });

  it('writes values unchanged', () => {
    expect(bigintTransformer.to(7)).toBe(7);
    expect(bigintTransformer.to('8')).toBe('8');
  });
});
