import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { IsolationLevel } from 'typeorm/driver/types/IsolationLevel';
import type { BetterSqlite3ConnectionOptions } from 'typeorm/driver/better-sqlite3/BetterSqlite3ConnectionOptions';
import { AppConfig } from '../config/app-config';
import { CommitMark, pendingCommitMark } from '../common/util/commit-marks';
import { foreground } from '../common/util/foreground';
import { DatabaseUnavailable, isDeadlock } from './database-errors';
import { mysqlGuardOf } from './mysql-guard';
import { SqliteCheckpointer } from './sqlite-checkpointer';

/** SQLite's page size (its default, which the database file keeps). */
const SQLITE_PAGE_BYTES = 4096;

/** Runs of one transaction, the first included, when MySQL keeps choosing it as a deadlock's victim (runAgainOnDeadlock). */
const DEADLOCK_RUNS = 3;
/** Longest the shutdown waits for the last try at killing abandoned connections' server threads. */
const KILL_ON_SHUTDOWN_MS = 2000;

/** A request's commit mark (commit-marks.ts) went out with a transaction that committed: later ones need not carry it. */
function markCommitted(mark: CommitMark | null | undefined): void {
  if (mark) mark.pending = false;
}

/**
 * The one way services reach the database: `manager` for plain reads, `run()` for a write transaction,
 * `consistentRead()` for several reads that must see one instant.
 *
 * TypeORM drives SQLite through one shared connection, so two overlapping transactions would merge into
 * one; on SQLite every write transaction therefore waits its turn (SQLite has a single writer anyway).
 * Reads outside a transaction use a second, read-only SQLite connection: in WAL mode it sees the last
 * committed state while a write transaction is open, so long writes (a 10,000-element sync) can pause
 * between their slices to let other customers' requests run, and those requests never see, nor wait for,
 * a write that has not committed.
 * On MySQL transactions run concurrently on the pool, each within DB_TRANSACTION_TIMEOUT_MS: past it,
 * its connection is abandoned (closed, its server thread killed, so its locks go), the transaction rolls
 * back and the caller gets DatabaseUnavailable (503).
 */
@Injectable()
export class Transactions implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private tail: Promise<unknown> = Promise.resolve();
  private readonly serial: boolean;
  /** SQLite only: the read-only connection for reads outside a transaction. */
  private reader?: DataSource;
  /** SQLite only: checkpoints the WAL on a thread of its own. */
  private checkpointer?: SqliteCheckpointer;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {
    this.serial = dataSource.options.type === 'better-sqlite3';
  }

  async onModuleInit(): Promise<void> {
    if (!this.serial) return;
    // Same file and settings; read-only (a stray write through it fails loudly), no migrations, and the
    // journal mode is the file's (the writer set WAL).
    const options = this.dataSource.options as BetterSqlite3ConnectionOptions;
    this.reader = await new DataSource({ ...options, readonly: true, enableWAL: false, migrations: [] }).initialize();
    this.checkpointer = new SqliteCheckpointer(options.database, async (pages) => {
      await this.dataSource.query(`PRAGMA wal_autocheckpoint = ${Math.floor(pages)}`);
    });
    await this.checkpointer.start();
  }

  /** For reads outside a transaction: they see what has been committed. */
  get manager(): EntityManager {
    return (this.reader ?? this.dataSource).manager;
  }

  /**
   * run() for work that does nothing but database work and may therefore be run again from the top: on
   * MySQL/MariaDB a transaction chosen as a deadlock's victim (the server rolled it back whole) runs
   * again, up to DEADLOCK_RUNS times in all, instead of failing its request with 503. Two writers that
   * take the same rows in different orders (a catalog deletion and a campaign change) then both succeed.
   */
  async runAgainOnDeadlock<T>(work: (manager: EntityManager) => Promise<T>, isolation?: IsolationLevel): Promise<T> {
    for (let run = 1; ; run += 1) {
      try {
        return await this.run(work, isolation);
      } catch (err) {
        if (this.serial || run >= DEADLOCK_RUNS || !isDeadlock(err)) throw err;
        this.logger.debug(`a transaction was chosen as a deadlock victim; running it again (run ${run + 1} of ${DEADLOCK_RUNS})`);
      }
    }
  }

  /** SQLite: the write-ahead log's length in bytes since it was last started over, as the checkpointer last read it (0 before it runs). */
  get sqliteWalBytes(): number {
    return (this.checkpointer?.walLength ?? 0) * SQLITE_PAGE_BYTES;
  }

  /** True on MySQL/MariaDB (row locks, a connection pool), false on SQLite. */
  get isMysql(): boolean {
    return !this.serial;
  }

  /**
   * Reads that must all see the same instant: one REPEATABLE READ transaction on MySQL. On SQLite
   * better-sqlite3 answers synchronously, so reads chained without waiting on other I/O run back to back
   * in one turn of the event loop, and no write can commit between them (writers commit in turns of their own).
   */
  consistentRead<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.serial ? work(this.manager) : this.dataSource.transaction('REPEATABLE READ', work);
  }

  /**
   * A write transaction. `isolation` applies on MySQL only (SQLite transactions are serializable):
   * READ COMMITTED takes no gap locks, for queue-like claims that must not block concurrent inserts.
   */
  run<T>(work: (manager: EntityManager) => Promise<T>, isolation?: IsolationLevel): Promise<T> {
    if (!this.serial) return this.withDeadline(work, isolation);
    // Bulk work holds its slices back for interactive requests, but not while a write waits for the turn
    // it holds (ForegroundRequests): it should end its transaction then.
    const turn = foreground.writerQueued();
    const result = this.tail.then(async () => {
      turn();
      // A WAL grown long under steady writes is started over first, off the event loop (SqliteCheckpointer).
      await this.checkpointer?.beforeWrite();
      const mark = pendingCommitMark();
      try {
        const result = await this.dataSource.transaction(async (em) => {
          const done = await work(em);
          if (mark?.pending) await mark.apply(em);
          return done;
        });
        markCommitted(mark);
        return result;
      } catch (err) {
        this.settleSqliteWriter();
        throw err;
      }
    });
    this.tail = result.catch(() => undefined);
    return result;
  }

  /**
   * After a failed SQLite write transaction, leaves the shared connection outside any transaction, as the
   * next one expects. TypeORM's bookkeeping can disagree with SQLite's after a failure: a COMMIT that
   * fails (a full disk: SQLITE_FULL) leaves the transaction open in SQLite, or rolls it back by itself;
   * TypeORM then still counts it as open if its ROLLBACK fails too, and runs every later transaction as a
   * SAVEPOINT inside the first: each "commits" (200) but none is ever committed, until the process ends
   * (every write after a full disk was lost, even once space was freed). So SQLite's own state decides:
   * an open transaction is rolled back, and TypeORM's count starts again from none.
   */
  private settleSqliteWriter(): void {
    const runner = this.dataSource.driver.createQueryRunner('master') as unknown as { isTransactionActive: boolean; transactionDepth: number };
    const db = (this.dataSource.driver as unknown as { databaseConnection?: { inTransaction: boolean; exec(sql: string): unknown } }).databaseConnection;
    if (db?.inTransaction) {
      try {
        db.exec('ROLLBACK');
      } catch (err) {
        this.logger.error(`rolling back a failed SQLite transaction failed: ${(err as Error).message}`);
      }
    }
    if (db?.inTransaction) return;
    runner.isTransactionActive = false;
    runner.transactionDepth = 0;
  }

  /** Before any module's shutdown (TypeORM's closes the pool): abandoned connections' server threads still to kill get one last try. */
  async beforeApplicationShutdown(): Promise<void> {
    await mysqlGuardOf(this.dataSource)?.close(Math.min(this.config.database.queryTimeoutMs, KILL_ON_SHUTDOWN_MS));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.checkpointer?.stop();
    if (this.reader?.isInitialized) await this.reader.destroy();
  }

  private async withDeadline<T>(work: (manager: EntityManager) => Promise<T>, isolation?: IsolationLevel): Promise<T> {
    const limitMs = this.config.database.transactionTimeoutMs;
    const runner = this.dataSource.createQueryRunner();
    let expired = false;
    // The deadline ends the transaction for its caller whatever its work is waiting for: a statement
    // queued on the connection behind one that got no answer is never called back once the connection
    // is closed (mysql2), and a sync whose link was blackholed mid-statement then never answered (its
    // Idempotency-Key held, 409, until a restart). Work still running finds its runner released.
    let expire: (err: Error) => void = () => undefined;
    const deadline = new Promise<never>((_, reject) => (expire = reject));
    deadline.catch(() => undefined); // handled by whichever race waits on it, if one still does
    const timer = setTimeout(() => {
      expired = true;
      const connection = (runner as unknown as { databaseConnection?: unknown }).databaseConnection;
      mysqlGuardOf(this.dataSource)?.abandon(connection, `a transaction ran past ${limitMs} ms`);
      expire(new DatabaseUnavailable(`the transaction took longer than ${limitMs} ms and was rolled back`));
    }, limitMs);
    try {
      await Promise.race([runner.connect(), deadline]);
      await Promise.race([runner.startTransaction(isolation), deadline]);
      const running = work(runner.manager);
      running.catch(() => undefined); // settles after the deadline, if ever: nobody waits for it then
      const result = await Promise.race([running, deadline]);
      if (expired) throw new DatabaseUnavailable(`the transaction took longer than ${limitMs} ms`);
      const mark = pendingCommitMark();
      if (mark) await Promise.race([mark.apply(runner.manager), deadline]);
      await Promise.race([runner.commitTransaction(), deadline]);
      markCommitted(mark);
      return result;
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      if (expired) throw new DatabaseUnavailable(`the transaction took longer than ${limitMs} ms and was rolled back`);
      throw err;
    } finally {
      clearTimeout(timer);
      await runner.release();
    }
  }
}
