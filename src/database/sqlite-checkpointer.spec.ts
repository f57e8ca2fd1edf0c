import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FALLBACK_AUTOCHECKPOINT_PAGES, RESTART_AT_PAGES, SqliteCheckpointer } from './sqlite-checkpointer';

/** The WAL's length in pages, as a checkpoint that copies nothing sees it (another connection). */
function walPages(path: string): number {
  const probe = new Database(path, { fileMustExist: true });
  try {
    const [result] = probe.pragma('wal_checkpoint(NOOP)') as Array<{ log: number }>;
    return result.log;
  } finally {
    probe.close();
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 10))) {
    if (Date.now() - started > 10_000) throw new Error(`timed out waiting for ${what}`);
  }
}

describe('SqliteCheckpointer', () => {
  let dir: string;
  let path: string;
  let writer: Database.Database;
  let checkpointer: SqliteCheckpointer;
  const autoCheckpoint: number[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'livegoods-checkpointer-'));
    path = join(dir, 'db.sqlite');
    writer = new Database(path);
    writer.pragma('journal_mode = WAL');
    writer.pragma('synchronous = NORMAL');
    writer.exec('CREATE TABLE t (x BLOB)');
    autoCheckpoint.length = 0;
    checkpointer = new SqliteCheckpointer(path, async (pages) => {
      autoCheckpoint.push(pages);
      writer.pragma(`wal_autocheckpoint = ${pages}`);
    });
    await checkpointer.start();
  });

  afterEach(async () => {
    await checkpointer.stop();
    writer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** About `pages` WAL pages of rows, in transactions of 100 rows. */
  function write(pages: number): void {
    const insert = writer.prepare('INSERT INTO t (x) VALUES (randomblob(3500))');
    const batch = writer.transaction(() => {
      for (let i = 0; i < 100; i++) insert.run();
    });
    for (let done = 0; done < pages; done += 100) batch();
  }

  it('takes over from the writing connection, which checkpoints by itself only past the fallback', () => {
    expect(autoCheckpoint).toEqual([FALLBACK_AUTOCHECKPOINT_PAGES]);
  });

  it('a write that finds the WAL long waits for it to be copied back and started over', async () => {
    // A reader holding an old snapshot keeps the passive checkpoints from copying the WAL whole, as a
    // steady writer does: the WAL grows past the threshold.
    const reader = new Database(path, { readonly: true });
    reader.prepare('BEGIN').run();
    reader.prepare('SELECT COUNT(*) FROM t').get();
    write(RESTART_AT_PAGES + 500);
    await until(() => walPages(path) > RESTART_AT_PAGES && checkpointer.walLength > RESTART_AT_PAGES, 'the WAL to grow');
    reader.prepare('COMMIT').run();
    reader.close();

    // Before the next write: the worker copies what is left and the write starts the WAL over.
    await checkpointer.beforeWrite();
    write(10);
    expect(walPages(path)).toBeLessThan(200);
    expect(checkpointer.walLength).toBe(0);
    expect(writer.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: RESTART_AT_PAGES + 500 + 100 });
  });
});
