import { EntityManager, EntityTarget, ObjectLiteral, QueryFailedError } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { TimeSlicer } from '../common/util/time-slicer';
import { isMysql } from './engine';
import { mysqlGuardOf } from './mysql-guard';

/**
 * Plain multi-row statements for the bulk paths, built from the entity's metadata (column names,
 * transformers) so that they write and read exactly what TypeORM would. TypeORM's own query builders
 * spend ~35 µs of CPU per row building parameters; these spend a few.
 */

/**
 * `(?, ?, …), (?, ?, …)` for these rows and columns; their values (as TypeORM would write them, through
 * the columns' transformers) are appended to `params`.
 */
function valuesList<T extends ObjectLiteral>(em: EntityManager, rows: T[], columns: ColumnMetadata[], params: unknown[]): string {
  const driver = em.connection.driver;
  for (const row of rows) for (const column of columns) params.push(driver.preparePersistentValue(column.getEntityValue(row), column) ?? null);
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  return rows.map(() => tuple).join(', ');
}

/**
 * `INSERT INTO t (every non-generated column) VALUES (...), (...)`: one statement for all `rows`. With
 * `returning` (column names), the engines that can (SQLite, MariaDB) hand those columns of the new rows
 * back from the same statement (`RETURNING`); MySQL cannot, and then the answer is null.
 */
export async function insertRows<T extends ObjectLiteral>(
  em: EntityManager,
  target: EntityTarget<T>,
  rows: T[],
  returning?: readonly string[],
): Promise<Array<Record<string, unknown>> | null> {
  if (!rows.length) return returning ? [] : null;
  const driver = em.connection.driver;
  const metadata = em.connection.getMetadata(target);
  const columns = metadata.columns.filter((c) => !c.isGenerated && !c.isVirtual);
  const params: unknown[] = [];
  const values = valuesList(em, rows, columns, params);
  const type = em.connection.options.type;
  const back = returning && (type === 'better-sqlite3' || type === 'mariadb') ? ` RETURNING ${returning.map((c) => driver.escape(c)).join(', ')}` : '';
  const sql = `INSERT INTO ${driver.escape(metadata.tableName)} (${columns.map((c) => driver.escape(c.databaseName)).join(', ')}) ` + `VALUES ${values}${back}`;
  const result: unknown = await bulkStatement(em, sql, params);
  return back ? (result as Array<Record<string, unknown>>) : null;
}

/**
 * Runs one of the statements below. In a MySQL/MariaDB transaction, as a prepared statement on the
 * transaction's connection (MysqlGuard.execute): its text is the same for every statement of a shape
 * (rows per statement, columns), so that it is prepared once per connection and then only its values
 * travel, unescaped. Measured on 10,000-element syncs, against plain statements: 15% less CPU on this
 * thread and 16% less of MariaDB's for updates, 11-13% for creates. Elsewhere (SQLite, no transaction),
 * as a plain statement. Errors come as TypeORM's own do (QueryFailedError around the driver's error).
 */
async function bulkStatement(em: EntityManager, sql: string, params: unknown[]): Promise<unknown> {
  const runner = em.queryRunner;
  const guard = mysqlGuardOf(em.connection);
  if (!guard || !runner?.isTransactionActive) return em.query(sql, params);
  const connection: unknown = await runner.connect();
  try {
    return await guard.execute(connection, sql, params);
  } catch (err) {
    throw new QueryFailedError(sql, params, err as Error);
  }
}

/** Entities from raw rows of `SELECT *` (every column, through its transformer). */
export function hydrateRows<T extends ObjectLiteral>(em: EntityManager, target: EntityTarget<T>, raw: Array<Record<string, unknown>>): T[] {
  const driver = em.connection.driver;
  const metadata = em.connection.getMetadata(target);
  const columns = metadata.columns.filter((c) => !c.isVirtual);
  return raw.map((r) => {
    const entity = metadata.create() as T;
    for (const column of columns) column.setEntityValue(entity, driver.prepareHydratedValue(r[column.databaseName], column));
    return entity;
  });
}

/** `alias.col AS alias_col, …` for every column of the entity: its columns in a join, apart from the others'. */
export function aliasedColumns<T extends ObjectLiteral>(em: EntityManager, target: EntityTarget<T>, alias: string): string {
  const driver = em.connection.driver;
  return em.connection
    .getMetadata(target)
    .columns.filter((c) => !c.isVirtual)
    .map((c) => `${alias}.${driver.escape(c.databaseName)} AS ${driver.escape(`${alias}_${c.databaseName}`)}`)
    .join(', ');
}

/**
 * The entity a joined row holds under `alias` (selected with aliasedColumns), or null when the join found
 * none (its primary key is null: an outer join's missing side).
 */
export function hydrateAliased<T extends ObjectLiteral>(em: EntityManager, target: EntityTarget<T>, alias: string, raw: Record<string, unknown>): T | null {
  const metadata = em.connection.getMetadata(target);
  if (metadata.primaryColumns.some((c) => raw[`${alias}_${c.databaseName}`] == null)) return null;
  const row: Record<string, unknown> = {};
  for (const column of metadata.columns) row[column.databaseName] = raw[`${alias}_${column.databaseName}`];
  return hydrateRows(em, target, [row])[0];
}

/**
 * Sets `properties` of many existing rows, each to its own value, in one statement, on rows whose
 * `scope` column holds `scope.value` (the tenant) only. The caller has locked the rows.
 * - SQLite: `UPDATE … FROM (VALUES …)` joined on the primary key.
 * - MySQL and MariaDB: `INSERT … ON DUPLICATE KEY UPDATE` with the full rows. Every row exists, so the
 *   INSERT half never inserts: the primary key collides and the UPDATE half sets the columns (a
 *   multi-row UPDATE with CASE or with a joined derived table costs both servers several times more).
 *   The caller must make sure no row's new unique keys collide with another row's.
 */
export async function updateRowsById<T extends ObjectLiteral>(
  em: EntityManager,
  target: EntityTarget<T>,
  rows: T[],
  properties: readonly string[],
  scope: { property: string; value: unknown },
): Promise<void> {
  if (!rows.length) return;
  const driver = em.connection.driver;
  const metadata = em.connection.getMetadata(target);
  const columnOf = (property: string) => {
    const column = metadata.findColumnWithPropertyName(property);
    if (!column) throw new Error(`${metadata.tableName} has no column ${property}`);
    return column;
  };
  const name = (column: ColumnMetadata) => driver.escape(column.databaseName);
  const table = driver.escape(metadata.tableName);
  const primary = metadata.primaryColumns[0];
  const columns = properties.map(columnOf);
  const scopeColumn = name(columnOf(scope.property));
  const params: unknown[] = [];
  if (em.connection.options.type === 'better-sqlite3') {
    const values = valuesList(em, rows, [primary, ...columns], params);
    params.push(scope.value);
    const sets = columns.map((c, i) => `${name(c)} = v.column${i + 2}`);
    await em.query(
      `UPDATE ${table} SET ${sets.join(', ')} FROM (VALUES ${values}) AS v WHERE ${table}.${name(primary)} = v.column1 AND ${table}.${scopeColumn} = ?`,
      params,
    );
    return;
  }
  const all = metadata.columns.filter((c) => !c.isVirtual);
  const values = valuesList(em, rows, all, params);
  const sets = columns.map((c) => `${name(c)} = IF(${scopeColumn} = VALUES(${scopeColumn}), VALUES(${name(c)}), ${name(c)})`);
  await bulkStatement(em, `INSERT INTO ${table} (${all.map(name).join(', ')}) VALUES ${values} ON DUPLICATE KEY UPDATE ${sets.join(', ')}`, params);
}

/**
 * Runs `run` for each of `parts` (a statement each, or a few) and hands each answer to `use`, both in
 * order. On MySQL/MariaDB the statements go out back to back (the connection queues them), so that the
 * database runs one while this thread builds the next and reads the answers of the earlier ones. On
 * SQLite a statement runs on the event loop: one at a time, with a pause for other work between two.
 */
export async function pipelined<P, R>(
  em: EntityManager,
  parts: P[],
  run: (part: P) => Promise<R>,
  use: (answer: R, part: P) => void,
  slicer = new TimeSlicer(),
): Promise<void> {
  if (!isMysql(em)) {
    for (const part of parts) {
      use(await run(part), part);
      await slicer.pause();
    }
    return;
  }
  const answers: Array<Promise<R>> = [];
  for (const part of parts) {
    const answer = run(part);
    // Awaited below, in order; a failure meanwhile is not unhandled.
    answer.catch(() => undefined);
    answers.push(answer);
    await slicer.pause();
  }
  for (let k = 0; k < parts.length; k++) {
    use(await answers[k], parts[k]);
    await slicer.pause();
  }
}
