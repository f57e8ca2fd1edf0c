import { Logger as NestLogger } from '@nestjs/common';
import type { Logger as TypeOrmLoggerContract } from 'typeorm';

const SQL_CHARS = 300;

/**
 * TypeORM's log lines through Nest's logger. Statements (and their failures) only with DB_LOGGING=true;
 * a slow statement (over DB_QUERY_TIMEOUT_MS, i.e. one that timed out) is a warning without its
 * parameters, which hold customers' data. TypeORM's own console logger would print those parameters
 * whatever DB_LOGGING says.
 */
export class TypeOrmLogger implements TypeOrmLoggerContract {
  private readonly logger = new NestLogger('Database');

  constructor(private readonly statements: boolean) {}

  logQuery(query: string, parameters?: unknown[]): void {
    if (this.statements) this.logger.debug(`${query}${parameters?.length ? ` -- ${JSON.stringify(parameters).slice(0, SQL_CHARS)}` : ''}`);
  }

  logQueryError(error: string | Error, query: string): void {
    if (this.statements) this.logger.warn(`statement failed (${error instanceof Error ? error.message : error}): ${query.slice(0, SQL_CHARS)}`);
  }

  logQuerySlow(time: number, query: string): void {
    this.logger.warn(`slow statement (${time} ms): ${query.slice(0, SQL_CHARS)}`);
  }

  logSchemaBuild(message: string): void {
    if (this.statements) this.logger.debug(message);
  }

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
    else if (this.statements) this.logger.debug(String(message));
  }
}
