import { ValueTransformer } from 'typeorm';
import { toDecimalString } from '../common/util/decimal';

/**
 * int64 ids: mysql2 returns BIGINT as string, SQLite as number. The API speaks JSON numbers
 * (ids stay far below 2^53), so both become numbers.
 */
export const bigintTransformer: ValueTransformer = {
  to: (value: unknown) => value,
  from: (value: unknown) => (value === null || value === undefined ? value : Number(value)),
};

/** A datetime read by a raw query: SQLite hands back TypeORM's UTC 'YYYY-MM-DD HH:MM:SS.SSS' text, mysql2 a Date already. */
export function utcDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(`${value.replace(' ', 'T')}Z`);
}

/**
 * DECIMAL columns: written as exact decimal text rounded to the column's scale (MySQL keeps it exactly;
 * SQLite keeps it to 15 significant digits, more than a JSON number carries), read back as a number
 * (mysql2 returns DECIMAL as a string).
 */
export function decimalTransformer(scale: number): ValueTransformer {
  return {
    to: (value: unknown) => (value === null || value === undefined ? value : toDecimalString(value as number | string, scale)),
    from: (value: unknown) => (value === null || value === undefined ? null : Number(value)),
  };
}
