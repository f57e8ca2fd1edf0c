/** Field limits of goods (docs/api-reference.md, Goods). */
export const GoodsLimits = {
  name: 255,
  brand: 255,
  sku: 128,
  url: 2048,
  description: 10_000,
  maxPrice: 1e12,
  keyword: 255,
} as const;

/** Fractional digits kept of prices and percentages (their DECIMAL columns' scale). */
export const PRICE_SCALE = 4;
