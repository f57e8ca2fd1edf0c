import Database from 'better-sqlite3';
import { chmodSync, constants, copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { AppConfig } from '../config/app-config';

export interface BackupResult {
  /** The database copy (SQLite), or null on MySQL/MariaDB (back that up with its own tools). */
  database: string | null;
  /** Media files copied now; those the backup held already (media files never change) are left as they are. */
  mediaCopied: number;
  mediaKept: number;
}

/**
 * Backs up what a node keeps under DATA_DIR into `target`, while the service runs: on SQLite the database
 * (`VACUUM INTO`: a consistent copy of one instant, the WAL's pages included, whatever is written
 * meanwhile), then the media files. The database comes first: a media file a row of the copy names is still there when
 * the files are copied (an unused one is deleted MEDIA_RELEASE_DELAY_MS after it was last used). Media
 * files are named by their content and never change, so a later backup into the same directory copies
 * only new ones. Import uploads (DATA_DIR/imports) are not kept: they last as long as their job.
 */
export function backupDataDir(config: AppConfig, target: string): BackupResult {
  // The copy holds every customer's secret key: this user's only (an existing directory keeps its mode).
  mkdirSync(target, { recursive: true, mode: 0o700 });
  let database: string | null = null;
  if (config.database.type === 'sqlite') {
    if (!existsSync(config.database.sqlitePath)) throw new Error(`no database at ${config.database.sqlitePath}: check DATA_DIR`);
    database = join(target, 'livegoods.sqlite');
    if (existsSync(database))
      throw new Error(
        `${database} exists already: back up into a new directory (hardlink the previous backup's media into it first to copy only new files: cp -al previous/media new/)`,
      );
    const db = new Database(config.database.sqlitePath, { fileMustExist: true, timeout: config.database.lockTimeoutMs });
    try {
      // One read transaction (WAL: the service goes on writing meanwhile): a copy of one instant, which the
      // page-by-page online backup would start over each time another process wrote, never ending under load.
      db.prepare('VACUUM INTO ?').run(database);
    } finally {
      db.close();
    }
    chmodSync(database, 0o600);
  }
  let mediaCopied = 0;
  let mediaKept = 0;
  const media = config.media.dir;
  const folders = new Set<string>();
  for (const file of existsSync(media) ? filesUnder(media) : []) {
    const to = join(target, 'media', relative(media, file));
    const folder = dirname(to);
    if (!folders.has(folder)) {
      mkdirSync(folder, { recursive: true });
      folders.add(folder);
    }
    try {
      copyFileSync(file, to, constants.COPYFILE_EXCL);
      mediaCopied += 1;
    } catch (err) {
      // There already (hardlinked from the previous backup): a media file never changes.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      mediaKept += 1;
    }
  }
  return { database, mediaCopied, mediaKept };
}

/** Every file under `dir`, however deep (media files are kept in folders by the first bytes of their name). */
function* filesUnder(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if (entry.isFile() && !entry.name.startsWith('.')) yield path;
  }
}
