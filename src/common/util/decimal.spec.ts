import { DECIMAL_TEXT, decimalInput, toDecimalString } from './decimal';

describe('decimalInput (scale 4)', () => {
  const d = (value: unknown) => decimalInput(value, 4);

  it('rounds numeric text on its decimal digits, not on the double the text would be', () => {
    // As a double, 123456789012.12345 is 123456789012.123443…: rounding that gives .1234.
    expect(d('123456789012.12345')).toBe(123456789012.1235);
    expect(d(' 19.99 ')).toBe(19.99);
    expect(d('0.00005')).toBe(0.0001);
    expect(d('-0.00004')).toBe(0);
    expect(d('.5')).toBe(0.5);
    // Rounded first, so a limit is checked on the value that would be stored.
    expect(d('1000000000000.00005')).toBe(1000000000000.0001);
    expect(d('100.00004')).toBe(100);
  });

  it('reads a power of ten, as spreadsheets write large numbers in a CSV', () => {
    expect(d('1E+12')).toBe(1e12);
    expect(d('1e12')).toBe(1e12);
    expect(d('1.5e3')).toBe(1500);
    expect(d('12345E-5')).toBe(0.1235);
    // A huge exponent is not written out digit by digit: its value decides.
    expect(d('1e999999999')).toBe(Infinity);
    expect(d('1e-999999999')).toBe(0);
    expect(d('9e-200')).toBe(0);
  });

  it('rounds numbers through their shortest text, as a client that wrote them meant them', () => {
    expect(d(0.12345)).toBe(0.1235);
    expect(d(19.99)).toBe(19.99);
    expect(d(1e12)).toBe(1e12);
    expect(d(1e300)).toBe(1e300);
  });

  it('leaves anything else for the validators to refuse', () => {
    for (const value of ['abc', '', ' ', '1,000', '0x10', '1e', 'e3', '--1', true, null, undefined, [1], { a: 1 }]) {
      expect(d(value)).toBe(value);
    }
    expect(Number.isNaN(d(NaN))).toBe(true);
  });

  it('DECIMAL_TEXT takes what toDecimalString reads', () => {
    for (const text of ['1', '-1', '1.', '.5', '1.5e3', '1E+12', ' 2 ']) {
      expect(DECIMAL_TEXT.test(text)).toBe(true);
      expect(() => toDecimalString(text, 4)).not.toThrow();
    }
  });
});
