import { ValueTransformer } from 'typeorm';
import { withoutTrailing } from '../common/util/text';

/**
 * int64 ids: mysql2 returns BIGINT as string, SQLite as number. The API speaks JSON numbers
 * (ids stay far below 2^53), so both become numbers.
 */
export const bigintTransformer: ValueTransformer = {
  to: (value: unknown) => value,
  from: (value: unknown) => (value === null || value === undefined ? value : Number(value)),
};

/** A datetime read by a raw query: SQLite hands back TypeORM's UTC 'YYYY-MM-DD HH:MM:SS.SSS' text, mysql2 a Date already. */
export function utcDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(`${value.replace(' ', 'T')}Z`);
}

/** Writes sign, digits and a power of ten ("1.5e-7") as plain decimal text, digit by digit. */
function shiftPoint(sign: string, intPart: string, frac: string, exp: number): string {
  const digits = `${intPart}${frac}` || '0';
  const point = intPart.length + exp;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * Rounds a decimal given as number or numeric text to `scale` fractional digits, half away from zero,
 * working on its decimal digits (never on binary floating point). Returns canonical text.
 */
export function toDecimalString(value: number | string, scale: number): string {
  // Whole prices (the common case) are their own canonical text: String(-0) is "0", and a safe integer
  // is written without an exponent.
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  let text = typeof value === 'number' ? String(value) : value.trim();
  const exponent = /^(-?)(\d*)(?:\.(\d*))?e([+-]?\d+)$/i.exec(text);
  if (exponent) text = shiftPoint(exponent[1], exponent[2], exponent[3] ?? '', Number(exponent[4]));
  const match = /^(-?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!match) throw new Error(`not a decimal: ${text}`);
  const [, sign, intPartRaw, fracRaw = ''] = match;
  let intPart = intPartRaw || '0';
  let frac = fracRaw;
  if (frac.length > scale) {
    const roundUp = frac.charCodeAt(scale) >= 53; /* '5' */
    frac = frac.slice(0, scale);
    if (roundUp) {
      const digits = (intPart + frac).split('').map(Number);
      let i = digits.length - 1;
      while (i >= 0) {
        if (digits[i] === 9) {
          digits[i] = 0;
          i -= 1;
        } else {
          digits[i] += 1;
          break;
        }
      }
      let all = digits.join('');
      if (i < 0) all = `1${all}`;
      intPart = all.slice(0, all.length - frac.length);
      frac = all.slice(all.length - frac.length);
    }
  }
  intPart = intPart.replace(/^0+(?=\d)/, '');
  frac = withoutTrailing(frac, '0');
  const out = frac ? `${intPart}.${frac}` : intPart;
  return sign && /[1-9]/.test(out) ? `-${out}` : out;
}

/**
 * DECIMAL columns: written as exact decimal text rounded to the column's scale (MySQL keeps it exactly;
 * SQLite keeps it to 15 significant digits, more than a JSON number carries), read back as a number
 * (mysql2 returns DECIMAL as a string).
 */
export function decimalTransformer(scale: number): ValueTransformer {
  return {
    to: (value: unknown) => (value === null || value === undefined ? value : toDecimalString(value as number | string, scale)),
    from: (value: unknown) => (value === null || value === undefined ? null : Number(value)),
  };
}
