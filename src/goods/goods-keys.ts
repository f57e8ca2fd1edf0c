import { createHash } from 'node:crypto';

/** sha256 hex of a key (sku or url): what the unique indexes hold. */
export function keyHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** The form both stored text and keywords take for searching: NFKC, lower case. */
export function normalizeForSearch(value: string): string {
  return value.normalize('NFKC').toLowerCase();
}

/** What searchKeyword is matched against: name, brand and sku, one per line. */
export function buildSearchText(name: string, brand: string | null | undefined, sku: string): string {
  return [name, brand ?? '', sku].map(normalizeForSearch).join('\n');
}
