import type { DataSource } from 'typeorm';
import { QueryFailedError } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { isDeadlock } from './database-errors';
import { Transactions } from './transactions';

/** A deadlock victim as mysql2 reports it, wrapped by TypeORM. */
const deadlock = () =>
  new QueryFailedError(
    'UPDATE …',
    [],
    Object.assign(new Error('Deadlock found when trying to get lock; try restarting transaction'), { code: 'ER_LOCK_DEADLOCK', errno: 1213 }),
  );

function transactionsOn(type: 'mysql' | 'better-sqlite3'): Transactions {
  return new Transactions({ options: { type } } as unknown as DataSource, {} as AppConfig);
}

describe('isDeadlock', () => {
  it('is true for MySQL/MariaDB error 1213, raw or wrapped by TypeORM, and false for other errors', () => {
    expect(isDeadlock(deadlock())).toBe(true);
    expect(isDeadlock(Object.assign(new Error('x'), { errno: 1213 }))).toBe(true);
    expect(isDeadlock(Object.assign(new Error('Lock wait timeout exceeded'), { code: 'ER_LOCK_WAIT_TIMEOUT', errno: 1205 }))).toBe(false);
    expect(isDeadlock(new Error('boom'))).toBe(false);
    expect(isDeadlock(null)).toBe(false);
  });
});

describe('Transactions.runAgainOnDeadlock', () => {
  it('runs a deadlock victim again, up to three runs in all, and answers the run that committed', async () => {
    const tx = transactionsOn('mysql');
    const run = jest.spyOn(tx, 'run');
    run.mockRejectedValueOnce(deadlock()).mockRejectedValueOnce(deadlock()).mockResolvedValueOnce('committed');
    await expect(tx.runAgainOnDeadlock(async () => 'work')).resolves.toBe('committed');
    expect(run).toHaveBeenCalledTimes(3);
  });

  it('gives up after the third deadlock with the error, and never runs again for another error', async () => {
    const tx = transactionsOn('mysql');
    const run = jest.spyOn(tx, 'run').mockRejectedValue(deadlock());
    await expect(tx.runAgainOnDeadlock(async () => 'work')).rejects.toThrow(/Deadlock found/);
    expect(run).toHaveBeenCalledTimes(3);

    run.mockReset().mockRejectedValue(new Error('not a deadlock'));
    await expect(tx.runAgainOnDeadlock(async () => 'work')).rejects.toThrow('not a deadlock');
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('passes the isolation level on to each run', async () => {
    const tx = transactionsOn('mysql');
    const run = jest.spyOn(tx, 'run').mockRejectedValueOnce(deadlock()).mockResolvedValueOnce(1);
    await tx.runAgainOnDeadlock(async () => 1, 'READ COMMITTED');
    expect(run.mock.calls.map((call) => call[1])).toEqual(['READ COMMITTED', 'READ COMMITTED']);
  });
});
