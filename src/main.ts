import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { AppConfig } from './config/app-config';
import { ConfigValidationError } from './config/env.validation';

async function bootstrap(): Promise<void> {
  // Validate settings before anything else, so a bad one is one clear message and exit code 1.
  const config = AppConfig.load();
  const levels = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
  const app = await NestFactory.create<NestExpressApplication>(AppModule, {
    bodyParser: false,
    logger: levels.slice(0, levels.indexOf(config.server.logLevel) + 1),
  });
  configureApp(app);
  await app.listen(config.server.port);
  const where = config.database.type === 'mysql' ? `MySQL ${config.database.host}:${config.database.port}/${config.database.database}` : config.database.sqlitePath;
  Logger.log(`livegoods listening on port ${config.server.port} (database: ${where}; docs at /docs)`, 'Bootstrap');
}

bootstrap().catch((err: unknown) => {
  if (err instanceof ConfigValidationError) {
    console.error(err.message);
  } else {
    console.error('livegoods failed to start:', err instanceof Error ? (err.stack ?? err.message) : err);
  }
  process.exit(1);
});
