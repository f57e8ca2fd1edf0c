import * as crypto from 'node:crypto';
import { GoodsLimits } from './goods.limits';

/**
 * Node's one-shot digest (20.12 and later): about half the cost of createHash().update().digest() for a
 * key this short, which a bulk write pays twice per row. Older Node versions take the stream object.
 */
const oneShot: ((algorithm: string, data: string, encoding: 'hex') => string) | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** sha256 hex of a key (sku or url): what the unique indexes hold. */
export function keyHash(value: string): string {
  return oneShot ? oneShot('sha256', value, 'hex') : crypto.createHash('sha256').update(value, 'utf8').digest('hex');
}

/** keyHash with a memory, for a batch that hashes the same keys several times. */
export function memoizedKeyHash(): (value: string) => string {
  const known = new Map<string, string>();
  return (value) => {
    let hash = known.get(value);
    if (hash === undefined) {
      hash = keyHash(value);
      known.set(value, hash);
    }
    return hash;
  };
}

/** The form both stored text and keywords take for searching: NFKC, lower case. */
export function normalizeForSearch(value: string): string {
  return value.normalize('NFKC').toLowerCase();
}

/** First `max` code points of a string (the unit MySQL's VARCHAR length counts). */
function codePoints(value: string, max: number): string {
  return value.length <= max ? value : Array.from(value).slice(0, max).join('');
}

/**
 * What searchKeyword is matched against: name, brand and sku, one per line. Normalising can lengthen
 * text (㎒ → mhz), so each part is cut back to its field's limit: the whole fits the 640-character column.
 */
export function buildSearchText(name: string, brand: string | null | undefined, sku: string): string {
  return [
    codePoints(normalizeForSearch(name), GoodsLimits.name),
    codePoints(normalizeForSearch(brand ?? ''), GoodsLimits.brand),
    codePoints(normalizeForSearch(sku), GoodsLimits.sku),
  ].join('\n');
}
