import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppConfig } from '../config/app-config';
import { assertDataDirWritable, DataDirFs, restrictSqliteFiles } from './data-dir';

function configFor(type: 'sqlite' | 'mysql'): AppConfig {
  return { dataDir: '/srv/livegoods', database: { type, sqlitePath: '/srv/livegoods/livegoods.sqlite' } } as unknown as AppConfig;
}

/** A file system where `existing` exist and `readOnly` (an errno code) refuses writes to the paths it names. */
function fsWith(existing: string[], refused: Record<string, string> = {}): DataDirFs & { accessed: string[] } {
  const accessed: string[] = [];
  const fail = (path: string) => {
    if (refused[path]) throw Object.assign(new Error(`${refused[path]}: ${path}`), { code: refused[path], path });
  };
  return {
    accessed,
    mkdir: fail,
    access: (path) => {
      accessed.push(path);
      fail(path);
    },
    exists: (path) => existing.includes(path),
  };
}

describe('assertDataDirWritable', () => {
  it('checks DATA_DIR, and on SQLite the database and its WAL files that exist', () => {
    const fs = fsWith(['/srv/livegoods/livegoods.sqlite', '/srv/livegoods/livegoods.sqlite-wal']);
    assertDataDirWritable(configFor('sqlite'), fs);
    expect(fs.accessed).toEqual(['/srv/livegoods', '/srv/livegoods/livegoods.sqlite', '/srv/livegoods/livegoods.sqlite-wal']);
    const mysql = fsWith([]);
    assertDataDirWritable(configFor('mysql'), mysql);
    expect(mysql.accessed).toEqual(['/srv/livegoods']);
  });

  it('refuses a read-only mount, and a database file the process may not write, saying which and why', () => {
    expect(() => assertDataDirWritable(configFor('sqlite'), fsWith([], { '/srv/livegoods': 'EROFS' }))).toThrow(
      'DATA_DIR cannot be written (EROFS on /srv/livegoods: its file system is mounted read-only)',
    );
    const file = '/srv/livegoods/livegoods.sqlite';
    expect(() => assertDataDirWritable(configFor('sqlite'), fsWith([file], { [file]: 'EACCES' }))).toThrow(
      `DATA_DIR cannot be written (EACCES on ${file}: this process may not write it)`,
    );
  });
});

describe('restrictSqliteFiles', () => {
  it('takes group and other access off the database and its WAL files that exist, and leaves a 0600 file as it is', () => {
    const dir = mkdtempSync(join(tmpdir(), 'livegoods-mode-'));
    try {
      const file = join(dir, 'livegoods.sqlite');
      writeFileSync(file, '');
      writeFileSync(`${file}-wal`, '');
      chmodSync(file, 0o644);
      chmodSync(`${file}-wal`, 0o660);
      expect(restrictSqliteFiles(file)).toEqual([file, `${file}-wal`]);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(`${file}-wal`).mode & 0o777).toBe(0o600);
      expect(restrictSqliteFiles(file)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
