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
export async function lockRow(em: EntityManager, table: 'customers' | 'campaigns', id: number): Promise<void> {
  if (isMysql(em)) await em.query(`SELECT id FROM ${table} WHERE id = ? FOR UPDATE`, [id]);
}
