import { withoutTrailing } from './text';

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
 * Text a decimal field reads as a number: plain (`"19.99"`, `" 12 "`, `".5"`) or with a power of ten
 * (`"1E+12"`, as spreadsheets write large numbers in a CSV).
 */
export const DECIMAL_TEXT = /^\s*-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/**
 * A decimal input (a number, or DECIMAL_TEXT) as the number it is stored as: rounded to `scale`
 * fractional digits on its decimal digits, half away from zero (`"123456789012.12345"` is
 * 123456789012.1235, which reading the text as a double first would make .1234), so that the limits are
 * checked on the value stored. Anything else is returned unchanged, for the validators to refuse.
 */
export function decimalInput(value: unknown, scale: number): unknown {
  if (typeof value === 'string' && !DECIMAL_TEXT.test(value)) return value;
  if (typeof value !== 'string' && typeof value !== 'number') return value;
  const n = Number(value);
  // Out of any price's range (or not finite): refused by the limits whatever its digits, so they are not
  // written out (a power of ten of a million digits would be).
  if (!Number.isFinite(n) || Math.abs(n) >= 1e15) return n;
  const exponent = typeof value === 'string' ? /e([+-]?\d+)/i.exec(value) : null;
  if (exponent && Math.abs(Number(exponent[1])) > 100) return Number(toDecimalString(n, scale));
  return Number(toDecimalString(value, scale));
}
