import type { GoodsWrite } from './dto/goods-body.dto';
import { Goods } from './entities/goods.entity';
import { buildSearchText, keyHash } from './goods-keys';

export const WRITABLE_FIELDS = ['name', 'brand', 'description', 'url', 'sku', 'mediaUrl', 'originalPrice', 'discountedPrice', 'discountPercentage'] as const;

export type WritableField = (typeof WRITABLE_FIELDS)[number];

/**
 * Applies a validated write to an item: present fields replace, absent ones keep, null clears
 * (validation has already refused null for the non-nullable ones). Keeps the derived columns
 * (key hashes, search text) in step. Returns the names of the fields that changed.
 */
export function applyGoodsWrite(goods: Goods, write: GoodsWrite, hashOf: (key: string) => string = keyHash): WritableField[] {
  const changed: WritableField[] = [];
  const target = goods as unknown as Record<WritableField, unknown>;
  for (const field of WRITABLE_FIELDS) {
    const value = (write as Record<string, unknown>)[field];
    if (value === undefined) continue;
    // Decimals come rounded to the column's scale already (decimalInput, in validation), so responses show
    // what was stored.
    if (!sameValue(target[field], value)) {
      target[field] = value;
      changed.push(field);
    }
  }
  if (changed.includes('sku') || !goods.skuHash) goods.skuHash = hashOf(goods.sku);
  if (changed.includes('url') || !goods.urlHash) goods.urlHash = hashOf(goods.url);
  goods.searchText = buildSearchText(goods.name, goods.brand, goods.sku);
  return changed;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  return typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) < 1e-9;
}

/** A fresh item from a register or sync "create" write (name, sku and url already checked present). */
export function newGoods(customerId: number, write: GoodsWrite, now: Date, hashOf: (key: string) => string = keyHash): Goods {
  const goods = new Goods();
  goods.customerId = customerId;
  goods.brand = null;
  goods.description = null;
  goods.mediaUrl = null;
  goods.originalPrice = null;
  goods.discountedPrice = null;
  goods.discountPercentage = null;
  applyGoodsWrite(goods, write, hashOf);
  goods.createdAt = now;
  goods.updatedAt = now;
  return goods;
}

export { isUniqueViolation } from '../database/database-errors';

/** The 409 message naming the key and the item that holds it. */
export function keyTakenMessage(key: 'sku' | 'url', value: string, holder: number | string): string {
  return `${key} '${value}' is already used by ${typeof holder === 'number' ? `goods ${holder}` : holder}`;
}
