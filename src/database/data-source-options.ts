import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { isMysql } from './engine';
import { Customer } from '../customers/entities/customer.entity';
import { Goods } from '../goods/entities/goods.entity';
import { Campaign } from '../campaigns/entities/campaign.entity';
import { CampaignChat } from '../campaigns/entities/campaign-chat.entity';
import { CampaignEvent } from '../campaigns/entities/campaign-event.entity';
import { CampaignGoods } from '../campaigns/entities/campaign-goods.entity';
import { Media } from '../media/entities/media.entity';
import { InitialSchema1763700000000 } from './migrations/1763700000000-InitialSchema';
import { AddMedia1763800000000 } from './migrations/1763800000000-AddMedia';
import { AddCampaigns1763900000000 } from './migrations/1763900000000-AddCampaigns';

export const ENTITIES = [Customer, Goods, Media, Campaign, CampaignGoods, CampaignChat, CampaignEvent];
export const MIGRATIONS = [InitialSchema1763700000000, AddMedia1763800000000, AddCampaigns1763900000000];

export type MysqlFlavor = 'mysql' | 'mariadb';

/**
 * One data source definition for both engines; used by the app, the admin CLI and ormconfig.ts.
 * `flavor` tells TypeORM whether the MySQL-protocol server is MySQL or MariaDB (they report schemas
 * differently); `resolveDataSourceOptions` detects it.
 */
export function buildDataSourceOptions(config: AppConfig, flavor: MysqlFlavor = 'mysql'): DataSourceOptions {
  const db = config.database;
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: db.logging,
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
      handle.pragma('busy_timeout = 5000');
    },
  };
}

/** Asks a MySQL-protocol server whether it is MariaDB. */
export async function detectMysqlFlavor(config: AppConfig): Promise<MysqlFlavor> {
  const { createConnection } = await import('mysql2/promise');
  const db = config.database;
  const conn = await createConnection({ host: db.host, port: db.port, user: db.username, password: db.password });
  try {
    const [rows] = await conn.query('SELECT VERSION() AS version');
    const version = String((rows as Array<{ version: string }>)[0]?.version ?? '');
    return /mariadb/i.test(version) ? 'mariadb' : 'mysql';
  } finally {
    await conn.end();
  }
}

export async function resolveDataSourceOptions(config: AppConfig): Promise<DataSourceOptions> {
  const flavor = config.database.type === 'mysql' ? await detectMysqlFlavor(config) : undefined;
  return buildDataSourceOptions(config, flavor);
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
    const [{ charset }] = await runner.query('SELECT @@character_set_database AS charset');
    if (!String(charset).startsWith('utf8mb4')) {
      throw new Error(
        `database "${String(dataSource.options.database)}" uses character set ${String(charset)}; ` +
          'create it with CHARACTER SET utf8mb4 (the default of MySQL 8 and MariaDB 10.6+)',
      );
    }
    const [{ locked }] = await runner.query("SELECT GET_LOCK('livegoods_migrations', 120) AS locked");
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

/** Opens the data source and brings the schema up to date. */
export async function openDataSource(options: DataSourceOptions): Promise<DataSource> {
  const dataSource = await new DataSource(options).initialize();
  try {
    await runMigrations(dataSource);
  } catch (err) {
    await dataSource.destroy();
    throw err;
  }
  return dataSource;
}
