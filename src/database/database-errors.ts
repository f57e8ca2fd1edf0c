import { QueryFailedError } from 'typeorm';

/**
 * The database could not be used now (unreachable, too slow, a lock not granted in time, a transaction
 * past its deadline): the request answers 503 -503 with Retry-After, never 500. Nothing was committed.
 */
export class DatabaseUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatabaseUnavailable';
  }
}

/** Error codes of mysql2, MySQL/MariaDB and SQLite that mean "not now" rather than "wrong". */
const UNAVAILABLE_CODES = new Set([
  // network and connection state (mysql2 / Node)
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  // server side
  'ER_LOCK_WAIT_TIMEOUT', // 1205: a row lock not granted within innodb_lock_wait_timeout
  'ER_LOCK_DEADLOCK', // 1213: chosen as a deadlock victim; the whole request may simply be retried
  'ER_STATEMENT_TIMEOUT', // MariaDB 1969: max_statement_time
  'ER_QUERY_TIMEOUT', // MySQL 3024: max_execution_time
  'ER_CON_COUNT_ERROR', // 1040: too many connections
  'ER_SERVER_SHUTDOWN', // 1053
  'ER_QUERY_INTERRUPTED', // 1317
  'ER_CONNECTION_KILLED', // 1927 (MariaDB)
  'ER_CLIENT_INTERACTION_TIMEOUT', // MySQL 4031: the server closed an idle connection
]);

/**
 * SQLite's busy and locked codes, extended ones included: SQLITE_BUSY_SNAPSHOT is what a transaction
 * that read before another process wrote gets when it then writes (at once, without waiting), and
 * SQLITE_BUSY_RECOVERY / _TIMEOUT and SQLITE_LOCKED_SHAREDCACHE are the same kind of passing refusal.
 */
const SQLITE_BUSY = /^SQLITE_(BUSY|LOCKED)(_[A-Z]+)?$/;
/**
 * SQLite's storage failures: a full disk (SQLITE_FULL), I/O errors, a file or directory that cannot be
 * written or opened (permissions, a read-only mount). The request is not wrong and may succeed once the
 * operator has made room: 503, not 500. (The transaction is rolled back: Transactions.settleSqliteWriter.)
 */
const SQLITE_STORAGE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN)(_[A-Z]+)?$/;

const UNAVAILABLE_MESSAGES = [
  /Can't add new command when connection is in closed state/,
  /Queue limit reached/,
  /Pool is closed/,
  /Connection is not established/,
];

/** Whether an error (raw, or wrapped by TypeORM as `driverError`) means the database is unavailable now. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailable) return true;
  if (!err || typeof err !== 'object') return false;
  const candidates = [err, (err as { driverError?: unknown }).driverError].filter((e): e is Record<string, unknown> => !!e && typeof e === 'object');
  return candidates.some((e) => {
    if (typeof e.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || SQLITE_BUSY.test(e.code) || SQLITE_STORAGE.test(e.code))) return true;
    const message = typeof e.message === 'string' ? e.message : '';
    return UNAVAILABLE_MESSAGES.some((re) => re.test(message));
  });
}

/**
 * MySQL/MariaDB chose this transaction as a deadlock's victim and rolled it back whole (1213): running it
 * again is what the server asks for.
 */
export function isDeadlock(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = ((err as { driverError?: unknown }).driverError ?? err) as { code?: unknown; errno?: unknown };
  return e.code === 'ER_LOCK_DEADLOCK' || e.errno === 1213;
}

/** True when the database refused a write for a duplicate unique key (or primary key). */
export function isUniqueViolation(err: unknown): boolean {
  if (!(err instanceof QueryFailedError)) return false;
  const driverError = err.driverError as { code?: string; errno?: number } | undefined;
  return (
    driverError?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    driverError?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    driverError?.code === 'ER_DUP_ENTRY' ||
    driverError?.errno === 1062
  );
}
