import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config';
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

/**
 * Applies pending migrations. On MySQL a named lock keeps several nodes that start at once from
 * migrating concurrently; SQLite is one process by nature.
 */
export async function runMigrations(dataSource: DataSource): Promise<void> {
  if (!isMysql(dataSource)) {
    await dataSource.runMigrations({ transaction: 'each' });
    return;
  }
  const runner = dataSource.createQueryRunner();
  try {
    const [{ charset }] = (await runner.query('SELECT @@character_set_database AS charset')) as Array<{ charset: string }>;
    if (!String(charset).startsWith('utf8mb4')) {
      throw new Error(
        `database "${String(dataSource.options.database)}" uses character set ${String(charset)}; ` +
          'create it with CHARACTER SET utf8mb4 (the default of MySQL 8 and MariaDB 10.6+)',
      );
    }
    const [{ locked }] = (await runner.query("SELECT GET_LOCK('livegoods_migrations', 120) AS locked")) as Array<{ locked: number | string | null }>;
    if (Number(locked) !== 1) throw new Error('could not get the migration lock within 120 s');
    try {
      await dataSource.runMigrations({ transaction: 'each' });
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
export async function openDataSource(options: DataSourceOptions, config?: AppConfig): Promise<DataSource> {
  const dataSource = await new DataSource(options).initialize();
  alignMysqlColumnTypes(dataSource);
  try {
    await runMigrations(dataSource);
  } catch (err) {
    await dataSource.destroy();
    throw err;
  }
  if (config && isMysql(dataSource)) MysqlGuard.install(dataSource, config.database);
  return dataSource;
}

/**
 * Opens the database at start-up, retrying with backoff (0.5 s doubling up to 5 s) while it does not answer
 * yet, for at most DB_STARTUP_TIMEOUT_MS; each failed attempt is logged. A database that refuses our
 * settings (wrong password, wrong character set) fails the same way once the time is up.
 */
export async function openDataSourceWithRetry(config: AppConfig, entities: EntityList, log: (message: string) => void): Promise<DataSource> {
  const deadline = Date.now() + config.database.startupTimeoutMs;
  for (let attempt = 1, delay = 500; ; attempt += 1, delay = Math.min(delay * 2, 5000)) {
    try {
      return await openDataSource(await resolveDataSourceOptions(config, entities), config);
    } catch (err) {
      const left = deadline - Date.now();
      if (left <= 0) throw err;
      log(`database not reachable yet (attempt ${attempt}: ${err instanceof Error ? err.message : String(err)}); retrying in ${Math.min(delay, left)} ms`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    }
  }
}
