import type { DataSource, EntityManager } from 'typeorm';

/** True on MySQL and MariaDB (the engines with row locks and a connection pool). */
export function isMysql(source: DataSource | EntityManager): boolean {
  const type = 'connection' in source ? source.connection.options.type : source.options.type;
  return type === 'mysql' || type === 'mariadb';
}

/**
 * Locks one row for the rest of the transaction on MySQL (`SELECT … FOR UPDATE`), so that writers of
 * the same aggregate go one at a time. SQLite runs one write transaction at a time anyway.
 */
export async function lockRow(em: EntityManager, table: 'customers' | 'campaigns' | 'goods', id: number): Promise<void> {
  if (isMysql(em)) await em.query(`SELECT id FROM ${table} WHERE id = ? FOR UPDATE`, [id]);
}

/**
 * Whether a key read from the database is exactly the one asked for. Access keys and campaign keys
 * are looked up through their unique index, and on MySQL/MariaDB that index compares with the
 * column's collation (utf8mb4_unicode_ci: case-insensitive, and PAD SPACE ignores trailing spaces),
 * so `AbC ` finds the row of `abc`. Every key look-up therefore compares the row's key with the asked
 * one in code, byte for byte, after the indexed query: a wrong-case or padded key reads exactly like an
 * unknown one on both engines. (The alternative, a binary collation on those columns, would be a
 * MySQL-only schema difference for the two engines' entities and migrations to agree on; the check
 * here costs nothing and needs no migration.)
 */
export function sameKey(stored: string, asked: string): boolean {
  return stored === asked;
}
