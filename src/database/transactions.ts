import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';

/**
 * Runs write transactions. TypeORM drives SQLite through one shared connection, so two overlapping
 * transactions would merge into one; on SQLite every write transaction therefore waits its turn
 * (SQLite has a single writer anyway). On MySQL transactions run concurrently on the pool.
 */
@Injectable()
export class Transactions {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly serial: boolean;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.serial = dataSource.options.type === 'better-sqlite3';
  }

  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.serial) return this.dataSource.transaction(work);
    const result = this.tail.then(() => this.dataSource.transaction(work));
    this.tail = result.catch(() => undefined);
    return result;
  }
}
