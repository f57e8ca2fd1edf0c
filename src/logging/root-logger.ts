import pino, { Logger as PinoInstance } from 'pino';
import type { AppConfig } from '../config/app-config';
import { LogFormat, pinoLevelOf, resolveLogFormat } from '../config/log-format';
import { redactDeep } from './redact-deep';
import { requestContext } from './request-context';
import { textStream } from './text-stream';

export interface LoggerSettings {
  format: LogFormat;
  level: string;
}

/** The process's pino logger for given settings: JSON or text lines on stdout, written synchronously. */
export function createRootLogger(settings: LoggerSettings, stdoutIsTty = Boolean(process.stdout.isTTY)): PinoInstance {
  const destination = settings.format === 'json' ? pino.destination({ dest: 1, sync: true }) : textStream(1, stdoutIsTty);
  return pino(
    {
      level: settings.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // Inside a request, every line carries its requestId (see LoggingModule); fields a call passes win.
      mixin: () => {
        const context = requestContext.getStore();
        return context ? { requestId: context.requestId } : {};
      },
      // Every string of every line passes through redactCredentials (URLs with user:password@).
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => redactDeep(a)) as Parameters<typeof method>);
        },
      },
      serializers: { err: (err: unknown) => redactDeep(err) },
    },
    destination,
  );
}

const byConfig = new WeakMap<AppConfig, PinoInstance>();

/** The one root logger of an app's settings (main.ts and the LoggingModule share it). */
export function rootLoggerOf(config: AppConfig): PinoInstance {
  let logger = byConfig.get(config);
  if (!logger) {
    logger = createRootLogger({ format: config.server.logFormat, level: pinoLevelOf(config.server.logLevel) });
    byConfig.set(config, logger);
  }
  return logger;
}

/** Before settings are known (a start that failed on them): the format LOG_FORMAT asks for, when it is valid. */
export function fallbackLogger(): PinoInstance {
  return createRootLogger({ format: resolveLogFormat(process.env.LOG_FORMAT), level: 'info' });
}
