import type { EnvironmentVariables } from './env.validation';

export type LogFormat = 'json' | 'text';

/**
 * LOG_FORMAT as the process writes it: `json` or `text` as set; `auto` (the default) is text on a
 * terminal and JSON whenever stdout is not one (a file, a pipe, a container's log driver).
 */
export function resolveLogFormat(setting: string | undefined, stdoutIsTty = Boolean(process.stdout.isTTY)): LogFormat {
  if (setting === 'json' || setting === 'text') return setting;
  return stdoutIsTty ? 'text' : 'json';
}

/** LOG_LEVEL (Nest's names) as pino's level: log is info, verbose is trace. */
export function pinoLevelOf(level: EnvironmentVariables['LOG_LEVEL']): string {
  switch (level) {
    case 'log':
      return 'info';
    case 'verbose':
      return 'trace';
    default:
      return level;
  }
}
