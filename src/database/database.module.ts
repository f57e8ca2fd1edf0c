import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { openDataSource, resolveDataSourceOptions } from './data-source-options';
import { Transactions } from './transactions';

/** The TypeORM connection (SQLite under DATA_DIR or MySQL/MariaDB), migrated before the app serves. */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => resolveDataSourceOptions(config),
      dataSourceFactory: async (options?: DataSourceOptions): Promise<DataSource> => {
        if (!options) throw new Error('no data source options');
        return openDataSource(options);
      },
    }),
  ],
  providers: [Transactions],
  exports: [Transactions],
})
export class DatabaseModule {}
