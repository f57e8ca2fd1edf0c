import type { DataSource } from 'typeorm';
import type { PoolUse } from './metrics.service';

/** The parts of mysql2's (callback) pool that hold its connections; not in its typings, so checked at run time. */
interface Mysql2PoolInternals {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
  config?: { connectionLimit?: number };
}

/** How the MySQL pool of a data source is used right now; null on SQLite (no pool) or before it is open. */
export function poolUseOf(dataSource: DataSource): PoolUse | null {
  const type = dataSource.options.type;
  if ((type !== 'mysql' && type !== 'mariadb') || !dataSource.isInitialized) return null;
  const pool = (dataSource.driver as unknown as { pool?: Mysql2PoolInternals }).pool;
  if (!pool?._allConnections || !pool._freeConnections || !pool._connectionQueue) return null;
  const all = pool._allConnections.length;
  const free = pool._freeConnections.length;
  return { inUse: all - free, free, waiting: pool._connectionQueue.length, max: pool.config?.connectionLimit ?? 0 };
}
