import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { DatabaseUnavailable } from './database-errors';
import { mysqlGuardOf } from './mysql-guard';

/**
 * The one way services reach the database: `manager` for plain reads, `run()` for a write transaction,
 * `consistentRead()` for several reads that must see one instant.
 *
 * TypeORM drives SQLite through one shared connection, so two overlapping transactions would merge into
 * one; on SQLite every write transaction therefore waits its turn (SQLite has a single writer anyway).
 * On MySQL transactions run concurrently on the pool, each within DB_TRANSACTION_TIMEOUT_MS: past it,
 * its connection is abandoned (closed, its server thread killed, so its locks go), the transaction rolls
 * back and the caller gets DatabaseUnavailable (503).
 */
@Injectable()
export class Transactions implements OnApplicationShutdown {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly serial: boolean;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {
    this.serial = dataSource.options.type === 'better-sqlite3';
  }

  /** For reads outside a transaction. */
  get manager(): EntityManager {
    return this.dataSource.manager;
  }

  /** True on MySQL/MariaDB (row locks, a connection pool), false on SQLite. */
  get isMysql(): boolean {
    return !this.serial;
  }

  /**
   * Reads that must all see the same instant: one REPEATABLE READ transaction on MySQL; on SQLite the
   * single connection reads between write transactions anyway.
   */
  consistentRead<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.serial ? work(this.dataSource.manager) : this.dataSource.transaction('REPEATABLE READ', work);
  }

  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.serial) return this.withDeadline(work);
    const result = this.tail.then(() => this.dataSource.transaction(work));
    this.tail = result.catch(() => undefined);
    return result;
  }

  onApplicationShutdown(): void {
    mysqlGuardOf(this.dataSource)?.close();
  }

  private async withDeadline<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    const limitMs = this.config.database.transactionTimeoutMs;
    const runner = this.dataSource.createQueryRunner();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      const connection = (runner as unknown as { databaseConnection?: unknown }).databaseConnection;
      mysqlGuardOf(this.dataSource)?.abandon(connection, `a transaction ran past ${limitMs} ms`);
    }, limitMs);
    try {
      await runner.connect();
      await runner.startTransaction();
      const result = await work(runner.manager);
      if (expired) throw new DatabaseUnavailable(`the transaction took longer than ${limitMs} ms`);
      await runner.commitTransaction();
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
