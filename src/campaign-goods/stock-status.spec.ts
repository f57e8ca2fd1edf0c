import Database from 'better-sqlite3';
import { statusOfStock, statusOfStockSql } from './stock-status';

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

describe('statusOfStockSql', () => {
  it('derives in SQL what statusOfStock derives in code', () => {
    const db = new Database(':memory:');
    const query = db.prepare<[number, number | null], { status: string }>(
      `SELECT ${statusOfStockSql('s')} AS status FROM (SELECT ? AS s, ? AS almostSoldOutAt)`,
    );
    for (const threshold of [null, 0, 1, 5, 1000]) {
      for (const stock of [0, 1, 4, 5, 6, 999, 1000, 1001]) {
        expect({ stock, threshold, status: query.get(stock, threshold)?.status }).toEqual({ stock, threshold, status: statusOfStock(stock, threshold) });
      }
    }
    db.close();
  });
});
