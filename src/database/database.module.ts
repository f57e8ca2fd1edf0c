import { DynamicModule, Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule, TypeOrmModuleOptions } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { assertDataDirWritable } from './data-dir';
import { buildDataSourceOptions, EntityList, openDataSourceWithRetry } from './data-source-options';
import { Transactions } from './transactions';

/** The settings behind the options object handed to TypeORM's module (the factory below gets only the options). */
const configOf = new WeakMap<object, AppConfig>();

/**
 * The TypeORM connection (SQLite under DATA_DIR or MySQL/MariaDB), migrated before the app serves. A
 * database that does not answer yet at start-up is retried for DB_STARTUP_TIMEOUT_MS (see
 * openDataSourceWithRetry), so nodes may start before their database.
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(entities: EntityList): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig): TypeOrmModuleOptions => {
            // Checked once, before the retries: a directory that cannot be written will not become writable by waiting.
            assertDataDirWritable(config);
            // The retries are openDataSourceWithRetry's (with MySQL-vs-MariaDB detection inside each attempt).
            const options: TypeOrmModuleOptions = { ...buildDataSourceOptions(config, entities), retryAttempts: 0 };
            configOf.set(options, config);
            return options;
          },
          dataSourceFactory: async (options?: object): Promise<DataSource> => {
            const config = options && configOf.get(options);
            if (!config) throw new Error('no settings for the data source');
            const logger = new Logger('Database');
            return openDataSourceWithRetry(config, entities, (message, level) => (level === 'warn' ? logger.warn(message) : logger.log(message)));
          },
        }),
      ],
      providers: [Transactions],
      exports: [Transactions],
    };
  }
}
