import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AppConfig } from './src/config/app-config';
import { alignMysqlColumnTypes, buildDataSourceOptions } from './src/database/data-source-options';
import { ENTITIES } from './src/schema';

/** The CLI's data source: once open, it knows the MySQL column types the migrations widened (MYSQL_COLUMN_TYPES), as the app's does. */
class CliDataSource extends DataSource {
  override async initialize(): Promise<this> {
    await super.initialize();
    alignMysqlColumnTypes(this);
    return this;
  }
}

/** The data source for the TypeORM CLI (`npm run typeorm -- migration:generate ...`). Same settings as the app. */
export default new CliDataSource(buildDataSourceOptions(AppConfig.load(), ENTITIES));
