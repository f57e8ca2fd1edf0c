import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { isMysql, lockRow } from '../database/engine';

export interface ListCacheEntry {
  version: number;
  /** Number of matching goods. */
  count: number;
  /** Matching ids, newest first; kept only for selective keywords (dense ones page fast off the index). */
  ids?: number[];
}

const MAX_ENTRIES = 2000;
export const MAX_CACHED_IDS = 5000;

/**
 * Counting (and, for a keyword, finding) the matches of a list query means scanning the customer's
 * whole catalog; this remembers the outcome per (customer, keyword) under the customer's catalog
 * version. Every goods write transaction bumps that version in the database as its last statement,
 * so an entry is used only while nothing has changed, on any node; a stale entry is never served.
 */
@Injectable()
export class GoodsListCache {
  private readonly entries = new Map<string, ListCacheEntry>();

  get(customerId: number, keyword: string, version: number): ListCacheEntry | undefined {
    const key = `${customerId}\u0000${keyword}`;
    const entry = this.entries.get(key);
    if (!entry || entry.version !== version) return undefined;
    // Refresh its place in the insertion order: the map doubles as an LRU list.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  set(customerId: number, keyword: string, entry: ListCacheEntry): void {
    const key = `${customerId}\u0000${keyword}`;
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }
}

/**
 * Starts a goods write transaction of one customer: on MySQL it locks the customer row, so that writes
 * to one catalog run one at a time (and inserting goods, whose foreign key takes a shared lock on that
 * row, cannot deadlock with the version bump). SQLite runs one write transaction at a time anyway.
 */
export function lockCatalog(em: EntityManager, customerId: number): Promise<void> {
  return lockRow(em, 'customers', customerId);
}

/**
 * Marks the customer's catalog as changed; call it as the last statement of a goods write transaction.
 * Returns the version the transaction commits (the search corpora take the write as the step to it), from
 * the same statement: SQLite's `RETURNING`, and on MySQL/MariaDB the value `LAST_INSERT_ID(expr)` puts in
 * the statement's answer.
 */
export async function bumpCatalogVersion(em: EntityManager, customerId: number): Promise<number> {
  if (isMysql(em)) {
    const result: { insertId?: number | string } = await em.query('UPDATE customers SET catalogVersion = LAST_INSERT_ID(catalogVersion + 1) WHERE id = ?', [
      customerId,
    ]);
    return Number(result.insertId);
  }
  const rows: Array<{ v: number | string }> = await em.query(
    'UPDATE customers SET catalogVersion = catalogVersion + 1 WHERE id = ? RETURNING catalogVersion AS v',
    [customerId],
  );
  return Number(rows[0]?.v);
}
