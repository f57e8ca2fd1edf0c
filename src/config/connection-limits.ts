import { readFileSync } from 'node:fs';

/** MAX_CONNECTIONS_PER_IP when not set (and TRUST_PROXY is off). */
export const DEFAULT_MAX_CONNECTIONS_PER_IP = 1000;
/** MAX_CONNECTIONS when the open-file limit cannot be read (not Linux). */
export const FALLBACK_MAX_CONNECTIONS = 10_000;
/**
 * The derived MAX_CONNECTIONS never goes above this, whatever the open-file limit (containers often allow
 * a million): an idle WebSocket costs the node about 10 kB, a viewer more, and a node is sized for about
 * 10,000 viewers (docs/performance.md). Set MAX_CONNECTIONS to go higher.
 */
export const DERIVED_MAX_CONNECTIONS_CEILING = 50_000;
/** File descriptors kept for everything but client connections: database, Redis, SQLite files, media, webhooks, logs. */
const RESERVED_FILES = 256;

/**
 * The process's soft limit on open files (Linux: /proc/self/limits; Node raises it to the hard limit at
 * start); Infinity when unlimited, undefined when it cannot be read.
 */
export function openFileLimit(limitsFile = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(limitsFile, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (!match) return undefined;
  return match[1] === 'unlimited' ? Infinity : Number(match[1]);
}

/**
 * MAX_CONNECTIONS when not set: the open-file limit less what the rest of the process needs (256 files, or
 * a tenth of the limit when that is more; at least half the limit is left for connections), at most
 * DERIVED_MAX_CONNECTIONS_CEILING; FALLBACK_MAX_CONNECTIONS when the limit is unknown.
 */
export function maxConnectionsFor(fileLimit: number | undefined): number {
  if (fileLimit === undefined || !(fileLimit > 0)) return FALLBACK_MAX_CONNECTIONS;
  if (fileLimit === Infinity) return DERIVED_MAX_CONNECTIONS_CEILING;
  const room = Math.max(Math.floor(fileLimit / 2), fileLimit - Math.max(RESERVED_FILES, Math.ceil(fileLimit / 10)));
  return Math.max(1, Math.min(DERIVED_MAX_CONNECTIONS_CEILING, room));
}
