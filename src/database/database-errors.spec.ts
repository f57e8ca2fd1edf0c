import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryFailedError } from 'typeorm';
import { isDatabaseUnavailable } from './database-errors';

describe('isDatabaseUnavailable', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'lg-dberr-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a transaction that read before another connection wrote, then writes (SQLITE_BUSY_SNAPSHOT): unavailable, to be retried', () => {
    const file = join(dir, 'db.sqlite');
    const a = new Database(file);
    const b = new Database(file);
    try {
      a.pragma('journal_mode = WAL');
      a.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
      a.exec('BEGIN');
      a.prepare('SELECT count(*) FROM t').get();
      b.prepare("INSERT INTO t (v) VALUES ('b')").run();
      let caught: unknown;
      try {
        a.prepare("INSERT INTO t (v) VALUES ('a')").run();
      } catch (err) {
        caught = err;
      }
      expect((caught as { code?: string }).code).toBe('SQLITE_BUSY_SNAPSHOT');
      expect(isDatabaseUnavailable(caught)).toBe(true);
      // As TypeORM wraps it.
      expect(isDatabaseUnavailable(new QueryFailedError('INSERT …', [], caught as Error))).toBe(true);
    } finally {
      if (a.inTransaction) a.exec('ROLLBACK');
      a.close();
      b.close();
    }
  });

  it.each(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_BUSY_RECOVERY', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED_SHAREDCACHE'])('%s: unavailable', (code) => {
    expect(isDatabaseUnavailable(Object.assign(new Error('busy'), { code }))).toBe(true);
  });

  it.each(['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_READONLY', 'SQLITE_READONLY_DBMOVED', 'SQLITE_CANTOPEN'])(
    '%s (the disk full, an I/O error, a file that cannot be written): unavailable, 503 until there is room again',
    (code) => {
      expect(isDatabaseUnavailable(Object.assign(new Error('storage'), { code }))).toBe(true);
    },
  );

  it.each(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', 'SQLITE_BUSYNESS', 'SQLITE_FULLY', 'ER_DUP_ENTRY'])(
    '%s: not unavailable (a 4xx or a 500, not a 503)',
    (code) => {
      expect(isDatabaseUnavailable(Object.assign(new Error('other'), { code }))).toBe(false);
    },
  );
});
