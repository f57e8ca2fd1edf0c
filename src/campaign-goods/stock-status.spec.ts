import { statusOfStock } from './stock-status';

describe('statusOfStock', () => {
  it('is SOLD_OUT at 0, with or without a threshold', () => {
    expect(statusOfStock(0, null)).toBe('SOLD_OUT');
    expect(statusOfStock(0, 5)).toBe('SOLD_OUT');
    expect(statusOfStock(0, 0)).toBe('SOLD_OUT');
  });

  it('is ALMOST_SOLD_OUT from the threshold down to 1, ON_SALE above it', () => {
    expect(statusOfStock(6, 5)).toBe('ON_SALE');
    expect(statusOfStock(5, 5)).toBe('ALMOST_SOLD_OUT');
    expect(statusOfStock(1, 5)).toBe('ALMOST_SOLD_OUT');
  });

  it('has no ALMOST_SOLD_OUT stage without a threshold (or with 0)', () => {
    expect(statusOfStock(1, null)).toBe('ON_SALE');
    expect(statusOfStock(1, 0)).toBe('ON_SALE');
  });

  it('derives nothing from untracked stock', () => {
    expect(statusOfStock(null, 5)).toBeNull();
  });
});
