import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { isMysql, lockRow } from '../database/engine';

export interface ListCacheEntry {
  version: number;
  /** Number of matching goods. */
  count: number;
  /** Matching ids, newest first (absent when there were too many to keep, see MAX_CACHED_IDS). */
  ids?: Float64Array;
}

const MAX_ENTRIES = 2000;
/**
 * The most matching ids one entry keeps (8 bytes each), and what all entries keep together. With the ids
 * a later page is read by id; without them, off the (customerId, id) index with INSTR, newest first,
 * which reads every row down to the page: fast for a keyword held all over the catalog, but one held
 * only by older goods (18,520 of 1,000,000 held `watch 1`, the newest of them 800,000 rows down) took
 * 2.4 s on MariaDB for its first page.
 */
export const MAX_CACHED_IDS = 1_000_000;
const MAX_CACHED_ID_BYTES = 32 * 1024 * 1024;

/**
 * Counting (and, for a keyword, finding) the matches of a list query means scanning the customer's
 * whole catalog (or, from the search corpus, checking every candidate); this remembers the outcome per
 * (customer, keyword) under the customer's catalog version. Every goods write transaction bumps that
 * version in the database as its last statement, so an entry is used only while nothing has changed, on
 * any node; a stale entry is never served (and is dropped when a request reads a newer version).
 */
@Injectable()
export class GoodsListCache {
  private readonly entries = new Map<string, ListCacheEntry>();
  /** The bytes of the ids the entries keep. */
  private idBytes = 0;

  get(customerId: number, keyword: string, version: number): ListCacheEntry | undefined {
    const key = `${customerId}\u0000${keyword}`;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // An entry older than the version read is stale for good; a newer one is kept for the requests that
    // read its version (this one read the catalog before a write that committed since).
    if (entry.version > version) return undefined;
    this.delete(key);
    if (entry.version < version) return undefined;
    // Back at the end of the insertion order: the map doubles as an LRU list.
    this.add(key, entry);
    return entry;
  }

  /** Keeps the outcome; the ids only when they are at most MAX_CACHED_IDS. */
  set(customerId: number, keyword: string, version: number, count: number, ids?: readonly number[]): void {
    const key = `${customerId}\u0000${keyword}`;
    this.delete(key);
    this.add(key, { version, count, ids: ids && ids.length <= MAX_CACHED_IDS ? Float64Array.from(ids) : undefined });
    while (this.entries.size > MAX_ENTRIES || this.idBytes > MAX_CACHED_ID_BYTES) this.delete(this.entries.keys().next().value as string);
  }

  private add(key: string, entry: ListCacheEntry): void {
    this.entries.set(key, entry);
    this.idBytes += entry.ids?.byteLength ?? 0;
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.idBytes -= entry.ids?.byteLength ?? 0;
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
