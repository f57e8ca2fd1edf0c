import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { finishedWithin } from '../common/util/finished-within';
import type { DatabaseConfig } from '../config/app-config';
import { DatabaseUnavailable } from './database-errors';

/** The parts of a mysql2 pool connection this guard uses. */
interface PooledConnection {
  threadId: number | null;
  stream?: { destroy?: () => void };
  query(sql: unknown, values: unknown, callback?: (err: unknown, ...rest: unknown[]) => void): unknown;
  execute(options: { sql: string }, values: unknown[], callback: (err: unknown, result?: unknown) => void): unknown;
  release(): void;
  destroy(): void;
}

interface MysqlDriverLike {
  options: { type: string };
  obtainMasterConnection(): Promise<PooledConnection>;
}

const KILL_RETRY_MS = 2000;
/** The server refused to prepare one more statement (max_prepared_stmt_count, a server-wide limit). */
const ER_MAX_PREPARED_STMT_COUNT_REACHED = 1461;
/**
 * Prepared statements each pooled connection keeps (mysql2's maxPreparedStatements: least recently used
 * ones are closed beyond it). The bulk writes' statements come in a few shapes (rows per statement,
 * column sets), so that a handful stay prepared; the bound keeps every node's share of the server's
 * max_prepared_stmt_count (16,382 by default) at DB_POOL_SIZE × this.
 */
export const PREPARED_STATEMENTS_PER_CONNECTION = 32;
const MAX_PENDING_KILLS = 100;
const guards = new WeakMap<DataSource, MysqlGuard>();

/** The guard installed on a MySQL data source, if any. */
export function mysqlGuardOf(dataSource: DataSource): MysqlGuard | undefined {
  return guards.get(dataSource);
}

/**
 * Bounds every use of a MySQL/MariaDB connection in time, so that a slow, locked or unreachable database
 * makes requests fail quickly (503) instead of hanging, and the service recovers by itself:
 * - every new connection gets its session limits: `innodb_lock_wait_timeout`, and on MariaDB
 *   `max_statement_time` and `idle_transaction_timeout` (on MySQL `max_execution_time`, SELECTs only);
 * - waiting for a pooled connection is bounded (DB_CONNECT_TIMEOUT_MS);
 * - a statement that gets no answer within DB_QUERY_TIMEOUT_MS fails (mysql2's timeout), and its
 *   connection is abandoned at once: closed, so that nothing queued behind it waits forever, and its
 *   server thread killed (`KILL CONNECTION`) as soon as the server can be reached, so that locks held by
 *   a transaction whose link was lost are released (the server itself may never hear that the link died);
 * - Transactions abandons a transaction's connection the same way when it passes DB_TRANSACTION_TIMEOUT_MS.
 */
export class MysqlGuard {
  private readonly logger = new Logger('Database');
  private readonly prepared = new WeakSet<object>();
  private readonly pendingKills = new Set<number>();
  private killTimer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(
    private readonly dataSource: DataSource,
    private readonly config: DatabaseConfig,
  ) {}

  static install(dataSource: DataSource, config: DatabaseConfig): MysqlGuard {
    const guard = new MysqlGuard(dataSource, config);
    const driver = dataSource.driver as unknown as MysqlDriverLike;
    const obtain = driver.obtainMasterConnection.bind(driver);
    driver.obtainMasterConnection = () => guard.obtain(obtain);
    guards.set(dataSource, guard);
    return guard;
  }

  /**
   * Runs a statement as a prepared statement (mysql2's `execute`: prepared once per connection and
   * shape, then sent with its values in the binary protocol; the values are neither escaped into the
   * text nor parsed from it), on `connection`, a connection this guard set up (a transaction's). Prepare
   * and execute together are bounded by DB_QUERY_TIMEOUT_MS, past which the connection is abandoned, as
   * for a plain statement. When the server has no room for one more prepared statement
   * (max_prepared_stmt_count), the statement runs as plain text instead.
   */
  execute(connection: unknown, sql: string, values: unknown[]): Promise<unknown> {
    const conn = connection as PooledConnection;
    const ms = this.config.queryTimeoutMs;
    return new Promise((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        this.abandon(conn, `no answer to a statement within ${ms} ms`);
        reject(Object.assign(new Error(`no answer to a statement within ${ms} ms`), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' }));
      }, ms);
      const done = (err: unknown, result?: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err instanceof Error ? err : new Error('the statement failed'));
        else resolve(result);
      };
      conn.execute({ sql }, values, (err: unknown, result?: unknown) => {
        if ((err as { errno?: number } | null)?.errno !== ER_MAX_PREPARED_STMT_COUNT_REACHED) return done(err, result);
        conn.query(sql, values, done);
      });
    });
  }

  /**
   * Stops the kill janitor (the data source is closing). With `lastTryMs`, the server threads of
   * abandoned connections still to kill get one last try first, for at most that long: left alive, such
   * a thread keeps its transaction's locks until the server's idle_transaction_timeout, and the other
   * nodes' writers of that catalog wait for them meanwhile.
   */
  async close(lastTryMs = 0): Promise<void> {
    if (this.closed) return;
    // No scheduled retry may run beside the last try.
    this.clearKillTimer();
    if (lastTryMs > 0 && this.pendingKills.size) await finishedWithin(this.killPending(false), lastTryMs);
    this.closed = true;
    // A connection abandoned during the last try scheduled a janitor run of its own.
    this.clearKillTimer();
  }

  private clearKillTimer(): void {
    if (this.killTimer) clearTimeout(this.killTimer);
    this.killTimer = null;
  }

  /**
   * Gives up a connection whose state is unknown (a statement or a transaction ran out of time): closes it
   * so that every command still queued on it fails at once, and has its server thread killed.
   */
  abandon(connection: unknown, reason: string): void {
    const conn = connection as PooledConnection | undefined;
    if (!conn || typeof conn.destroy !== 'function') return;
    this.logger.warn(`closing a database connection (thread ${conn.threadId ?? '?'}): ${reason}`);
    if (typeof conn.threadId === 'number' && !this.closed && this.pendingKills.size < MAX_PENDING_KILLS) {
      this.pendingKills.add(conn.threadId);
      this.scheduleKills(0);
    }
    conn.destroy();
    conn.stream?.destroy?.();
  }

  private async obtain(obtain: () => Promise<PooledConnection>): Promise<PooledConnection> {
    const conn = await this.withinAcquireTimeout(obtain());
    if (!this.prepared.has(conn)) {
      this.prepared.add(conn);
      this.wrapQuery(conn);
      try {
        await this.query(conn, this.sessionSettings());
      } catch (err) {
        this.abandon(conn, 'its session could not be set up');
        throw err;
      }
    }
    return conn;
  }

  private withinAcquireTimeout(pending: Promise<PooledConnection>): Promise<PooledConnection> {
    const ms = this.config.connectTimeoutMs;
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        reject(new DatabaseUnavailable(`no database connection within ${ms} ms`));
      }, ms);
      pending.then(
        (conn) => {
          clearTimeout(timer);
          if (timedOut)
            conn.release(); // came too late: back to the pool for the next one
          else resolve(conn);
        },
        (err: Error) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  private sessionSettings(): string {
    const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
    const settings = [`innodb_lock_wait_timeout = ${seconds(this.config.lockTimeoutMs)}`];
    if (this.isMariaDb) {
      settings.push(`max_statement_time = ${(this.config.queryTimeoutMs / 1000).toFixed(3)}`);
      settings.push(`idle_transaction_timeout = ${seconds(this.config.transactionTimeoutMs)}`);
    } else {
      settings.push(`max_execution_time = ${this.config.queryTimeoutMs}`);
    }
    return `SET SESSION ${settings.join(', ')}`;
  }

  private get isMariaDb(): boolean {
    return (this.dataSource.driver as unknown as MysqlDriverLike).options.type === 'mariadb';
  }

  /** A statement that times out abandons its connection before its caller hears of the timeout. */
  private wrapQuery(conn: PooledConnection): void {
    const query = conn.query.bind(conn);
    conn.query = (sql: unknown, values: unknown, callback?: (err: unknown, ...rest: unknown[]) => void) => {
      if (typeof callback !== 'function') return query(sql, values, callback);
      return query(sql, values, (err: unknown, ...rest: unknown[]) => {
        if ((err as { code?: string } | null)?.code === 'PROTOCOL_SEQUENCE_TIMEOUT') {
          this.abandon(conn, `no answer to a statement within ${this.config.queryTimeoutMs} ms`);
        }
        callback(err, ...rest);
      });
    };
  }

  private query(conn: PooledConnection, sql: string): Promise<void> {
    return new Promise((resolve, reject) => {
      conn.query({ sql, timeout: this.config.queryTimeoutMs }, [], (err: unknown) =>
        err ? reject(err instanceof Error ? err : new Error('query failed')) : resolve(),
      );
    });
  }

  private scheduleKills(delayMs: number): void {
    if (this.killTimer || this.closed) return;
    this.killTimer = setTimeout(() => {
      this.killTimer = null;
      void this.killPending();
    }, delayMs);
    this.killTimer.unref();
  }

  /** Kills the server threads of abandoned connections; retries while the server cannot be reached. */
  private async killPending(retry = true): Promise<void> {
    for (const threadId of [...this.pendingKills]) {
      if (this.closed) return;
      try {
        await this.dataSource.query(`KILL CONNECTION ${Number(threadId)}`);
        this.pendingKills.delete(threadId);
      } catch (err) {
        // 1094 ER_NO_SUCH_THREAD: it is gone already (the server noticed the closed connection).
        if ((err as { driverError?: { errno?: number } }).driverError?.errno === 1094) this.pendingKills.delete(threadId);
        else break;
      }
    }
    if (retry && this.pendingKills.size) this.scheduleKills(KILL_RETRY_MS);
  }
}
