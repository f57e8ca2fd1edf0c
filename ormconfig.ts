import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AppConfig } from './src/config/app-config';
import { buildDataSourceOptions } from './src/database/data-source-options';
import { ENTITIES } from './src/schema';

/** The data source for the TypeORM CLI (`npm run typeorm -- migration:generate ...`). Same settings as the app. */
export default new DataSource(buildDataSourceOptions(AppConfig.load(), ENTITIES));
