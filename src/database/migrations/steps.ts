import { QueryRunner, Table, TableColumn, TableIndex } from 'typeorm';

/**
 * Schema steps that may be run again. On MySQL/MariaDB every DDL statement commits on its own, so a
 * migration of several statements that is cut (process killed, connection lost) leaves the first ones
 * applied and is not recorded: the next start runs it again from the top. Each step here is therefore
 * skipped when its effect is already there (checked in information_schema on MySQL/MariaDB, which both
 * answer alike: MySQL 8 has no ADD COLUMN / CREATE INDEX IF NOT EXISTS). On SQLite a migration is one
 * transaction (nothing of a cut one remains) and the checks simply find nothing to skip.
 *
 * One CREATE TABLE holds the table's indexes and foreign keys on MySQL (TypeORM writes them inline), so
 * a table that is there is whole.
 */

export const isSqlite = (queryRunner: QueryRunner): boolean => queryRunner.connection.driver.options.type === 'better-sqlite3';

/** Whether the table has an index (or unique constraint) of that name. */
export async function hasIndex(queryRunner: QueryRunner, table: string, index: string): Promise<boolean> {
  const rows = (await (isSqlite(queryRunner)
    ? queryRunner.query("SELECT 1 AS found FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?", [table, index])
    : queryRunner.query('SELECT 1 AS found FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = ? LIMIT 1', [
        table,
        index,
      ]))) as unknown[];
  return rows.length > 0;
}

/** The column's type as MySQL/MariaDB reports it (information_schema.COLUMNS.DATA_TYPE, lower case), or undefined. */
export async function mysqlColumnType(queryRunner: QueryRunner, table: string, column: string): Promise<string | undefined> {
  const rows = (await queryRunner.query(
    'SELECT DATA_TYPE AS type FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?',
    [table, column],
  )) as Array<{ type: string }>;
  return rows.length ? String(rows[0].type).toLowerCase() : undefined;
}

export async function createTableOnce(queryRunner: QueryRunner, table: Table): Promise<void> {
  if (await queryRunner.hasTable(table.name)) return;
  await queryRunner.createTable(table);
}

/** Drops the table if it is there (on MySQL TypeORM drops its foreign keys and indexes first: run again, it finds what is left). */
export async function dropTableOnce(queryRunner: QueryRunner, table: string): Promise<void> {
  await queryRunner.dropTable(table, true);
}

/** Adds each column that the table does not have yet, one statement each, in the order given. */
export async function addColumnsOnce(queryRunner: QueryRunner, table: string, columns: TableColumn[]): Promise<void> {
  for (const column of columns) {
    if (await queryRunner.hasColumn(table, column.name)) continue;
    await queryRunner.addColumn(table, column);
  }
}

/** Drops each column the table still has, in the order given. */
export async function dropColumnsOnce(queryRunner: QueryRunner, table: string, columns: string[]): Promise<void> {
  for (const column of columns) {
    if (!(await queryRunner.hasColumn(table, column))) continue;
    await queryRunner.dropColumn(table, column);
  }
}

export async function createIndexOnce(queryRunner: QueryRunner, table: string, index: TableIndex): Promise<void> {
  if (!index.name) throw new Error(`an index on ${table} needs a name to be created once`);
  if (await hasIndex(queryRunner, table, index.name)) return;
  await queryRunner.createIndex(table, index);
}

export async function dropIndexOnce(queryRunner: QueryRunner, table: string, index: string): Promise<void> {
  if (!(await hasIndex(queryRunner, table, index))) return;
  await queryRunner.dropIndex(table, index);
}
