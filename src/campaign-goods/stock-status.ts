import type { SalesStatus } from '../campaigns/entities/campaign-goods.entity';

/**
 * The sales status a stock count stands for: 0 → SOLD_OUT; 1 … almostSoldOutAt → ALMOST_SOLD_OUT; above
 * it → ON_SALE. A null threshold means no ALMOST_SOLD_OUT stage (any stock above 0 is ON_SALE). Null
 * stock (not tracked) stands for nothing: the status is left as it is.
 */
export function statusOfStock(stock: number | null, almostSoldOutAt: number | null): SalesStatus | null {
  if (stock === null) return null;
  if (stock <= 0) return 'SOLD_OUT';
  if (almostSoldOutAt !== null && stock <= almostSoldOutAt) return 'ALMOST_SOLD_OUT';
  return 'ON_SALE';
}

/**
 * statusOfStock in SQL (both engines), for the stock and threshold given by the expressions `stock` (e.g.
 * `stock + ?`) and `almostSoldOutAt` (a campaign_goods row's column by default): lets one UPDATE apply a
 * stock change only when the status it derives is the stored one (see StockService).
 */
export function statusOfStockSql(stock: string, almostSoldOutAt = 'almostSoldOutAt'): string {
  const stage = `WHEN ${almostSoldOutAt} IS NOT NULL AND ${stock} <= ${almostSoldOutAt} THEN 'ALMOST_SOLD_OUT'`;
  return `CASE WHEN ${stock} <= 0 THEN 'SOLD_OUT' ${stage} ELSE 'ON_SALE' END`;
}
