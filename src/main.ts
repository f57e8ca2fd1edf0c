import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger as PinoNestLogger, PinoLogger } from 'nestjs-pino';
import type { Logger as PinoInstance } from 'pino';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { AppConfig } from './config/app-config';
import { ConfigValidationError, unknownSettings } from './config/env.validation';
import { Lifecycle } from './lifecycle/lifecycle.service';
import { fallbackLogger, rootLoggerOf } from './logging/root-logger';

/**
 * The heap grows by 30 % over what the last full garbage collection kept, instead of V8's default (up to
 * four times as much): with a live set of about 50 MB, bulk writes and import jobs (whose garbage of a
 * chunk outlives the young generation) let the heap reach 250 MB before a full collection; so it stays
 * near 110 MB (docs/decisions/0013). V8 reads this flag whenever it sets the next limit.
 */
setFlagsFromString('--heap-growing-percent=30');

/**
 * Nest's logger, without two error lines a failed start would add to the one fatal line it ends with
 * (which holds the error and its stack): TypeORM's module writes "Unable to connect to the database.
 * Retrying (1)..." even with its own retries off (openDataSourceWithRetry retries, and logs each try),
 * and Nest's ExceptionHandler writes the error that the catch below reports.
 */
class StartLogger extends PinoNestLogger {
  override error(message: unknown, ...rest: unknown[]): void {
    const context = rest[rest.length - 1];
    if (context === 'ExceptionHandler') return;
    if (context === 'TypeOrmModule' && typeof message === 'string' && message.startsWith('Unable to connect to the database')) return;
    super.error(message, ...rest);
  }
}

/** The logger of this process: set as soon as the settings are known (LOG_FORMAT, LOG_LEVEL). */
let root: PinoInstance | undefined;

async function bootstrap(): Promise<void> {
  // Validate settings before anything else, so a bad one is one clear message and exit code 1.
  const config = AppConfig.load();
  root = rootLoggerOf(config);
  // Nest's own logger is pino from the first line on: start-up warnings (a database still coming up) are
  // written at once, in LOG_FORMAT; inside a request, lines carry its requestId (see LoggingModule).
  const logger = new StartLogger(new PinoLogger({ pinoHttp: { logger: root } }), {});
  for (const warning of unknownSettings(process.env)) logger.warn(`${warning}: it is ignored`, 'Config');
  // abortOnError off: a failed start reaches the catch below (one fatal line, exit code 1), not process.abort().
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { bodyParser: false, logger, abortOnError: false });
  configureApp(app);
  handleSignals(app);
  await app.listen(config.server.port);
  // PORT=0 lets the system pick a free port: the line names the one bound.
  const { port } = app.getHttpServer().address() as AddressInfo;
  const where =
    config.database.type === 'mysql' ? `MySQL ${config.database.host}:${config.database.port}/${config.database.database}` : config.database.sqlitePath;
  Logger.log(`livegoods listening on port ${port} (database: ${where}; docs at /docs)`, 'Bootstrap');
}

/**
 * A signal this soon after the first is the same one delivered twice, not a second request: Ctrl-C on
 * `npm start` reaches the service from the terminal (its whole process group) and again from npm, which
 * passes it on, within a millisecond or two.
 */
const REPEATED_SIGNAL_MS = 500;

/**
 * SIGTERM and SIGINT drain the node (see Lifecycle) and exit 0; a second signal exits at once (one that
 * comes within REPEATED_SIGNAL_MS of the first is taken for the same one).
 */
function handleSignals(app: NestExpressApplication): void {
  const lifecycle = app.get(Lifecycle);
  let stoppingSince = 0;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stoppingSince) {
        if (Date.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
        Logger.warn(`${signal} again: exiting now`, 'Shutdown');
        process.exit(1);
      }
      stoppingSince = Date.now();
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
  // One fatal line in LOG_FORMAT (written synchronously, before the exit); credentials are redacted by the logger.
  const logger = root ?? fallbackLogger();
  if (err instanceof ConfigValidationError) {
    logger.fatal({ context: 'Bootstrap' }, err.message);
  } else {
    logger.fatal({ context: 'Bootstrap', err }, `livegoods failed to start: ${err instanceof Error ? err.message : String(err)}`);
  }
  process.exit(1);
});
