import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config/app-config';
import { isDatabaseUnavailable } from './database-errors';
import { MysqlGuard } from './mysql-guard';

type Callback = (err: unknown, result?: unknown) => void;

/** A pooled connection whose execute and query answer as each test says. */
function fakeConnection(execute: (sql: string, values: unknown[], cb: Callback) => void, query?: (sql: string, values: unknown[], cb: Callback) => void) {
  return {
    threadId: null,
    destroyed: false,
    execute: jest.fn((options: { sql: string }, values: unknown[], cb: Callback) => execute(options.sql, values, cb)),
    query: jest.fn((sql: string, values: unknown[], cb: Callback) => query?.(sql, values, cb)),
    release: jest.fn(),
    destroy(this: { destroyed: boolean }) {
      this.destroyed = true;
    },
  };
}

function guard(queryTimeoutMs = 50): MysqlGuard {
  const dataSource = { driver: { options: { type: 'mariadb' }, obtainMasterConnection: () => Promise.reject(new Error('not used')) } };
  const config = { queryTimeoutMs, connectTimeoutMs: 1000, lockTimeoutMs: 1000, transactionTimeoutMs: 1000 } as DatabaseConfig;
  const installed = MysqlGuard.install(dataSource as unknown as DataSource, config);
  void installed.close(); // no kill janitor: these connections have no server thread
  return installed;
}

describe('MysqlGuard.execute', () => {
  it('runs the statement prepared, with its values, and answers its result', async () => {
    const conn = fakeConnection((sql, values, cb) => cb(null, { affectedRows: values.length }));
    await expect(guard().execute(conn, 'INSERT INTO t (a) VALUES (?), (?)', [1, 'x'])).resolves.toEqual({ affectedRows: 2 });
    expect(conn.execute).toHaveBeenCalledWith({ sql: 'INSERT INTO t (a) VALUES (?), (?)' }, [1, 'x'], expect.any(Function));
    expect(conn.query).not.toHaveBeenCalled();
  });

  it("passes the server's error on as it is", async () => {
    const duplicate = Object.assign(new Error('Duplicate entry'), { code: 'ER_DUP_ENTRY', errno: 1062 });
    const conn = fakeConnection((sql, values, cb) => cb(duplicate));
    await expect(guard().execute(conn, 'INSERT INTO t (a) VALUES (?)', [1])).rejects.toBe(duplicate);
    expect(conn.destroyed).toBe(false);
  });

  it('without an answer within DB_QUERY_TIMEOUT_MS: fails as "database unavailable" and abandons the connection; a late answer is ignored', async () => {
    let late: Callback | undefined;
    const conn = fakeConnection((sql, values, cb) => {
      late = cb;
    });
    const failure = await guard(30)
      .execute(conn, 'UPDATE t SET a = ?', [1])
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(isDatabaseUnavailable(failure)).toBe(true);
    expect(conn.destroyed).toBe(true);
    expect(() => late?.(null, { affectedRows: 1 })).not.toThrow();
  });

  it('when the server has no room for another prepared statement (max_prepared_stmt_count), runs it as plain text', async () => {
    const full = Object.assign(new Error("Can't create more than max_prepared_stmt_count statements"), { errno: 1461 });
    const conn = fakeConnection(
      (sql, values, cb) => cb(full),
      (sql, values, cb) => cb(null, { affectedRows: 1, text: sql }),
    );
    await expect(guard().execute(conn, 'INSERT INTO t (a) VALUES (?)', [1])).resolves.toEqual({ affectedRows: 1, text: 'INSERT INTO t (a) VALUES (?)' });
    expect(conn.query).toHaveBeenCalledWith('INSERT INTO t (a) VALUES (?)', [1], expect.any(Function));
  });
});

describe('MysqlGuard.close', () => {
  it('gives the server threads of abandoned connections still to kill one last try before it stops', async () => {
    const kills: string[] = [];
    let reachable = false;
    const dataSource = {
      driver: { options: { type: 'mariadb' }, obtainMasterConnection: () => Promise.reject(new Error('not used')) },
      query: jest.fn((sql: string) => {
        kills.push(sql);
        return reachable ? Promise.resolve([]) : Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      }),
    };
    const config = { queryTimeoutMs: 1000, connectTimeoutMs: 1000, lockTimeoutMs: 1000, transactionTimeoutMs: 1000 } as DatabaseConfig;
    const guard = MysqlGuard.install(dataSource as unknown as DataSource, config);
    const conn = { ...fakeConnection(() => undefined), threadId: 42 };
    guard.abandon(conn, 'a test');
    // The janitor's first try fails (the server cannot be reached); its next one would come 2 s later.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(kills).toEqual(['KILL CONNECTION 42']);
    reachable = true;
    await guard.close(500);
    expect(kills).toEqual(['KILL CONNECTION 42', 'KILL CONNECTION 42']);
    // Stopped: no retry comes after.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect(kills).toHaveLength(2);
  });
});
