import { Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/** Provides the validated AppConfig everywhere. Boot fails with a clear message on a bad setting. */
@Global()
@Module({
  providers: [{ provide: AppConfig, useFactory: () => AppConfig.load() }],
  exports: [AppConfig],
})
export class AppConfigModule {}
