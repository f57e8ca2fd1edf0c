import { writeSync } from 'node:fs';

const COLOURS: Record<string, string> = { trace: '\x1b[90m', debug: '\x1b[35m', info: '\x1b[32m', warn: '\x1b[33m', error: '\x1b[31m', fatal: '\x1b[41m' };
const OMIT = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'context', 'stack', 'err']);

function show(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  return JSON.stringify(value);
}

/**
 * LOG_FORMAT=text: pino's JSON line rendered for a person,
 * `2026-01-01T12:00:00.000Z INFO  [Context] message key=value …`, stacks on the lines below. Colours only
 * when `colour` (stdout is a terminal). Written synchronously, like the JSON format, so a line logged just
 * before the process exits is not lost.
 */
export function textStream(fd: number, colour: boolean): { write(line: string): void } {
  return {
    write(line: string): void {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        writeSync(fd, line);
        return;
      }
      const level = String(entry.level);
      const name = level.toUpperCase().padEnd(5);
      const time = String(entry.time);
      const context = typeof entry.context === 'string' ? ` [${entry.context}]` : '';
      const fields = Object.entries(entry)
        .filter(([k, v]) => !OMIT.has(k) && v !== undefined)
        .map(([k, v]) => `${k}=${show(v)}`)
        .join(' ');
      const err = entry.err as { stack?: string; message?: string } | undefined;
      const stack = typeof entry.stack === 'string' ? entry.stack : (err?.stack ?? err?.message);
      const head = colour ? `${COLOURS[level] ?? ''}${name}\x1b[0m` : name;
      writeSync(
        fd,
        `${time} ${head}${context} ${typeof entry.msg === 'string' ? entry.msg : show(entry.msg ?? '')}${fields ? ` ${fields}` : ''}${stack ? `\n${stack}` : ''}\n`,
      );
    },
  };
}
