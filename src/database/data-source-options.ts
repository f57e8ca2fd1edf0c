import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { restrictSqliteFiles } from './data-dir';
import { isDatabaseUnavailable } from './database-errors';
import { isMysql } from './engine';
import { MysqlGuard, PREPARED_STATEMENTS_PER_CONNECTION } from './mysql-guard';
import { TypeOrmLogger } from './typeorm-logger';
import { MIGRATIONS } from './migrations';

/** The entity classes of the application (src/schema.ts): the database layer does not know the domains. */
export type EntityList = NonNullable<DataSourceOptions['entities']>;

export type MysqlFlavor = 'mysql' | 'mariadb';

/**
 * One data source definition for both engines; used by the app, the admin CLI and ormconfig.ts.
 * `flavor` tells TypeORM whether the MySQL-protocol server is MySQL or MariaDB (they report schemas
 * differently); `resolveDataSourceOptions` detects it.
 */
export function buildDataSourceOptions(config: AppConfig, entities: EntityList, flavor: MysqlFlavor = 'mysql'): DataSourceOptions {
  const db = config.database;
  const common = {
    entities,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: db.logging,
    logger: new TypeOrmLogger(db.logging),
  } as const;
  if (db.type === 'mysql') {
    return {
      ...common,
      type: flavor,
      host: db.host,
      port: db.port,
      username: db.username,
      password: db.password,
      database: db.database,
      charset: 'utf8mb4',
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      poolSize: db.poolSize,
      connectTimeout: db.connectTimeoutMs,
      // Every statement gets mysql2's timeout (MysqlGuard abandons the connection when it fires).
      enableQueryTimeout: true,
      maxQueryExecutionTime: db.queryTimeoutMs,
      extra: {
        // Requests waiting for a connection beyond this fail at once (503) instead of queueing without end.
        queueLimit: db.poolSize * 50,
        // The bulk writes' prepared statements (bulk-sql.ts), least recently used closed beyond this.
        maxPreparedStatements: PREPARED_STATEMENTS_PER_CONNECTION,
        enableKeepAlive: true,
        keepAliveInitialDelay: 10_000,
      },
    };
  }
  mkdirSync(dirname(db.sqlitePath), { recursive: true });
  return {
    ...common,
    type: 'better-sqlite3',
    database: db.sqlitePath,
    enableWAL: true,
    statementCacheSize: 200,
    prepareDatabase: (handle: { pragma(source: string): unknown }) => {
      handle.pragma('foreign_keys = ON');
      handle.pragma('synchronous = NORMAL');
      // Statement journals (every multi-row INSERT or UPDATE inside a transaction keeps one, so that the
      // statement alone can be undone) in memory rather than in a temporary file: a 100,000-row bulk
      // insert made 514,000 pwrite calls with them on disk, 118,000 without, and took 9% less time.
      // What else goes to temporary storage here is small: the queries sort by indexes or under a LIMIT.
      handle.pragma('temp_store = MEMORY');
      // How long a statement waits for another connection's write lock (SQLITE_BUSY, then 503).
      handle.pragma(`busy_timeout = ${db.lockTimeoutMs}`);
    },
  };
}

/** Asks a MySQL-protocol server whether it is MariaDB. */
export async function detectMysqlFlavor(config: AppConfig): Promise<MysqlFlavor> {
  const { createConnection } = await import('mysql2/promise');
  const db = config.database;
  const conn = await createConnection({ host: db.host, port: db.port, user: db.username, password: db.password, connectTimeout: db.connectTimeoutMs });
  try {
    const [rows] = await conn.query('SELECT VERSION() AS version');
    const version = String((rows as Array<{ version: string }>)[0]?.version ?? '');
    return /mariadb/i.test(version) ? 'mariadb' : 'mysql';
  } finally {
    await conn.end();
  }
}

export async function resolveDataSourceOptions(config: AppConfig, entities: EntityList): Promise<DataSourceOptions> {
  const flavor = config.database.type === 'mysql' ? await detectMysqlFlavor(config) : undefined;
  return buildDataSourceOptions(config, entities, flavor);
}

/** Where the start-up writes what it does: `log` for the migrations applied, `warn` for a retry. */
export type StartLog = (message: string, level: 'log' | 'warn') => void;

/**
 * A migration failed for a reason other than the database being out of reach: the start stops at once
 * (retrying would fail the same way). The database is left as the cut migration left it; every migration
 * may be run again from the top (src/database/migrations/steps.ts), so once the cause is fixed the next
 * start completes it.
 */
export class MigrationFailedError extends Error {
  constructor(
    readonly migration: string,
    override readonly cause: unknown,
  ) {
    super(
      `migration ${migration} failed: ${cause instanceof Error ? cause.message : String(cause)}` +
        ' (nothing after it was applied; fix the cause and start again, which runs this migration again from the top)',
    );
    this.name = 'MigrationFailedError';
  }
}

/** The migrations table lists a migration this build does not have: a newer livegoods migrated the database. */
export class SchemaTooNewError extends Error {
  constructor(readonly unknownMigrations: string[]) {
    super(
      `the database was migrated by a newer livegoods (migration ${unknownMigrations.join(', ')}); ` +
        'run that version or restore the backup taken before the upgrade',
    );
    this.name = 'SchemaTooNewError';
  }
}

/** The database answers but cannot hold our data as it is (a character set other than utf8mb4): waiting will not change it. */
export class UnsuitableDatabaseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsuitableDatabaseError';
  }
}

/** Errors that end the start at once instead of being retried as "database not reachable yet". */
export function isFatalStartError(err: unknown): boolean {
  if (err instanceof SchemaTooNewError || err instanceof UnsuitableDatabaseError) return true;
  return err instanceof MigrationFailedError && !isDatabaseUnavailable(err.cause);
}

const instrumented = new WeakSet<object>();

/**
 * Makes each migration's up() name itself when it fails (MigrationFailedError) and record how long it
 * took; TypeORM rethrows the error as it got it.
 */
function instrumentMigrations(dataSource: DataSource, durations: Map<string, number>): void {
  for (const migration of dataSource.migrations) {
    if (instrumented.has(migration)) continue;
    instrumented.add(migration);
    const name = migration.name ?? migration.constructor.name;
    const up = migration.up.bind(migration);
    migration.up = async (queryRunner) => {
      const started = Date.now();
      try {
        await up(queryRunner);
      } catch (err) {
        throw err instanceof MigrationFailedError ? err : new MigrationFailedError(name, err);
      }
      durations.set(name, Date.now() - started);
    };
  }
}

/** Refuses a database whose migrations table lists a migration this build does not know (a newer build migrated it). */
async function refuseNewerSchema(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  try {
    const table = dataSource.options.migrationsTableName ?? 'migrations';
    if (!(await runner.hasTable(table))) return;
    const known = new Set(dataSource.migrations.map((m) => m.name ?? m.constructor.name));
    const rows = (await runner.query(`SELECT name FROM ${runner.connection.driver.escape(table)} ORDER BY id`)) as Array<{ name: string }>;
    const unknown = rows.map((r) => String(r.name)).filter((name) => !known.has(name));
    if (unknown.length) throw new SchemaTooNewError(unknown);
  } finally {
    await runner.release();
  }
}

/** Runs the pending migrations (each in a transaction; on MySQL/MariaDB DDL commits on its own) and logs each one applied. */
async function applyMigrations(dataSource: DataSource, log?: StartLog): Promise<void> {
  await refuseNewerSchema(dataSource);
  const durations = new Map<string, number>();
  instrumentMigrations(dataSource, durations);
  const started = Date.now();
  const applied = await dataSource.runMigrations({ transaction: 'each' });
  if (!log || !applied.length) return;
  for (const m of applied) log(`migration ${m.name} applied (${durations.get(m.name) ?? 0} ms)`, 'log');
  log(`${applied.length} migration(s) applied in ${Date.now() - started} ms; the schema is at ${applied[applied.length - 1].name}`, 'log');
}

/**
 * Applies pending migrations. On MySQL a named lock keeps several nodes that start at once from
 * migrating concurrently; SQLite is one process by nature. A database migrated by a newer build is
 * refused (SchemaTooNewError); a migration that fails throws MigrationFailedError naming it.
 */
export async function runMigrations(dataSource: DataSource, log?: StartLog): Promise<void> {
  if (!isMysql(dataSource)) {
    await applyMigrations(dataSource, log);
    return;
  }
  const runner = dataSource.createQueryRunner();
  try {
    const [{ charset }] = (await runner.query('SELECT @@character_set_database AS charset')) as Array<{ charset: string }>;
    if (!String(charset).startsWith('utf8mb4')) {
      throw new UnsuitableDatabaseError(
        `database "${String(dataSource.options.database)}" uses character set ${String(charset)}; ` +
          'create it with CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci',
      );
    }
    const [{ locked }] = (await runner.query("SELECT GET_LOCK('livegoods_migrations', 120) AS locked")) as Array<{ locked: number | string | null }>;
    if (Number(locked) !== 1) throw new Error('could not get the migration lock within 120 s');
    try {
      await applyMigrations(dataSource, log);
    } finally {
      await runner.query("SELECT RELEASE_LOCK('livegoods_migrations')");
    }
  } finally {
    await runner.release();
  }
}

/**
 * Columns whose type on MySQL/MariaDB is wider than the entity's (which must name a type SQLite knows
 * too): `table.column` → the MySQL type the migrations give it. alignMysqlColumnTypes tells the entity
 * metadata, so that TypeORM's schema diff (and the migrations check) sees what the migrations made.
 */
export const MYSQL_COLUMN_TYPES: Readonly<Record<string, string>> = {
  'campaign_events.payload': 'mediumtext', // 1765000000000-WidenCampaignEventPayload
};

/** Sets the MySQL types of MYSQL_COLUMN_TYPES in the metadata of an initialized MySQL data source (else nothing). */
export function alignMysqlColumnTypes(dataSource: DataSource): void {
  if (!isMysql(dataSource)) return;
  for (const metadata of dataSource.entityMetadatas) {
    for (const column of metadata.columns) {
      const type = MYSQL_COLUMN_TYPES[`${metadata.tableName}.${column.databaseName}`];
      if (type) column.type = type as typeof column.type;
    }
  }
}

/**
 * Opens the data source and brings the schema up to date; on MySQL, then bounds every later use of a
 * connection in time (MysqlGuard: session limits, statement and acquire timeouts).
 */
export async function openDataSource(options: DataSourceOptions, config?: AppConfig, log?: StartLog): Promise<DataSource> {
  const dataSource = await new DataSource(options).initialize();
  if (options.type === 'better-sqlite3') restrictSqliteFiles(String(options.database));
  alignMysqlColumnTypes(dataSource);
  try {
    await runMigrations(dataSource, log);
  } catch (err) {
    await dataSource.destroy();
    throw err;
  }
  if (config && isMysql(dataSource)) MysqlGuard.install(dataSource, config.database);
  return dataSource;
}

/**
 * Opens the database at start-up, retrying with backoff (0.5 s doubling up to 5 s) while it does not answer
 * yet, for at most DB_STARTUP_TIMEOUT_MS; each failed attempt is logged (`warn`), and so is each migration
 * applied (`log`). A database that refuses our credentials or does not exist yet fails the same way once the
 * time is up (a database container creates its user and database on its first start, after it already
 * listens). A database in another character set than utf8mb4, a migration that fails for another reason than
 * the database going away, or a database migrated by a newer build ends the start at once (isFatalStartError).
 */
export async function openDataSourceWithRetry(config: AppConfig, entities: EntityList, log: StartLog): Promise<DataSource> {
  const deadline = Date.now() + config.database.startupTimeoutMs;
  for (let attempt = 1, delay = 500; ; attempt += 1, delay = Math.min(delay * 2, 5000)) {
    try {
      return await openDataSource(await resolveDataSourceOptions(config, entities), config, log);
    } catch (err) {
      if (isFatalStartError(err)) throw err;
      const left = deadline - Date.now();
      if (left <= 0) throw err;
      log(
        `database not reachable yet (attempt ${attempt}: ${err instanceof Error ? err.message : String(err)}); retrying in ${Math.min(delay, left)} ms`,
        'warn',
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    }
  }
}
