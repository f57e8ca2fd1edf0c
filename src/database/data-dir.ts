import { accessSync, chmodSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import type { AppConfig } from '../config/app-config';

/** The file system calls the check makes (tests give their own). */
export interface DataDirFs {
  mkdir(path: string): void;
  access(path: string): void;
  exists(path: string): boolean;
}

const realFs: DataDirFs = {
  mkdir: (path) => mkdirSync(path, { recursive: true }),
  access: (path) => accessSync(path, constants.R_OK | constants.W_OK),
  exists: existsSync,
};

/**
 * Refuses to start on a DATA_DIR the node cannot write (a read-only mount, a directory of another user):
 * the media files and import uploads are kept there, and on SQLite the database with its WAL. Such a node
 * would otherwise start, answer ready and refuse every write with 503, or retry opening its database for
 * DB_STARTUP_TIMEOUT_MS as if it were not up yet.
 */
export function assertDataDirWritable(config: AppConfig, fs: DataDirFs = realFs): void {
  const paths = [config.dataDir];
  if (config.database.type === 'sqlite') {
    const file = config.database.sqlitePath;
    paths.push(...[file, `${file}-wal`, `${file}-shm`].filter((path) => fs.exists(path)));
  }
  try {
    fs.mkdir(config.dataDir);
    for (const path of paths) fs.access(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    const readOnly =
      code === 'EROFS' ? 'its file system is mounted read-only' : code === 'ENOENT' ? 'it could not be created there' : 'this process may not write it';
    throw new Error(
      `DATA_DIR cannot be written (${code} on ${(err as NodeJS.ErrnoException).path ?? config.dataDir}: ${readOnly}). ` +
        'The media files and import uploads are kept there (and on SQLite the database): give the service a directory it can read and write',
    );
  }
}

/**
 * Makes the SQLite database and its WAL files readable and writable by this user only (0600), whatever the
 * umask gave them: they hold every customer's secret key. SQLite gives a WAL it creates later the
 * database file's permissions. Answers the files it changed.
 */
export function restrictSqliteFiles(file: string): string[] {
  const changed: string[] = [];
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    if (!existsSync(path)) continue;
    const mode = statSync(path).mode & 0o777;
    if (!(mode & 0o077)) continue;
    chmodSync(path, mode & 0o700);
    changed.push(path);
  }
  return changed;
}
