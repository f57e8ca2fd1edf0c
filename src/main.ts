import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { AppConfig } from './config/app-config';
import { redactCredentials } from './common/util/redact';
import { ConfigValidationError } from './config/env.validation';
import { Lifecycle } from './lifecycle/lifecycle.service';

async function bootstrap(): Promise<void> {
  // Validate settings before anything else, so a bad one is one clear message and exit code 1.
  const config = AppConfig.load();
  const levels = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
  const app = await NestFactory.create<NestExpressApplication>(AppModule, {
    bodyParser: false,
    logger: levels.slice(0, levels.indexOf(config.server.logLevel) + 1),
  });
  configureApp(app);
  handleSignals(app);
  await app.listen(config.server.port);
  const where = config.database.type === 'mysql' ? `MySQL ${config.database.host}:${config.database.port}/${config.database.database}` : config.database.sqlitePath;
  Logger.log(`livegoods listening on port ${config.server.port} (database: ${where}; docs at /docs)`, 'Bootstrap');
}

/** SIGTERM and SIGINT drain the node (see Lifecycle) and exit 0; a second signal exits at once. */
function handleSignals(app: NestExpressApplication): void {
  const lifecycle = app.get(Lifecycle);
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) {
        Logger.warn(`${signal} again: exiting now`, 'Shutdown');
        process.exit(1);
      }
      stopping = true;
      lifecycle.shutdown(app, signal).then(
        () => process.exit(0),
        (err: unknown) => {
          Logger.error(`shutdown failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, 'Shutdown');
          process.exit(1);
        },
      );
    });
  }
}

// A promise some library rejected without a handler must not end the process (Node's default): it is
// logged, and the node keeps serving. (Known cases are handled where they arise; this is the safety net.)
process.on('unhandledRejection', (reason: unknown) => {
  Logger.error(`unhandled promise rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`, 'Process');
});

bootstrap().catch((err: unknown) => {
  if (err instanceof ConfigValidationError) {
    console.error(err.message);
  } else {
    console.error(`livegoods failed to start: ${redactCredentials(err instanceof Error ? (err.stack ?? err.message) : String(err))}`);
  }
  process.exit(1);
});
