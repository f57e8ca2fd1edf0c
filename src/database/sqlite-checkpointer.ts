import { Logger } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { finishedWithin } from '../common/util/finished-within';

/** How often the checkpointer copies the WAL back into the database file. */
export const CHECKPOINT_INTERVAL_MS = 25;
/**
 * WAL pages (4 kB) past which the writing connection checkpoints by itself at a commit, as SQLite does by
 * default at 1,000: only when the checkpointer does not keep up (or is gone, see `stop`).
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;
/** SQLite's own default, put back when the checkpointer stops. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

/**
 * The worker: its own connection to the file, a PASSIVE checkpoint every interval (it waits for no reader
 * and no writer: the writer goes on appending to the WAL meanwhile, and SQLite starts the WAL over at the
 * next write once everything in it has been copied).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
const timer = setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

/**
 * Checkpoints an SQLite database in WAL mode on a thread of its own (docs/decisions/0013).
 *
 * By default SQLite checkpoints at a commit that finds the WAL over 1,000 pages: the committing
 * connection copies the WAL into the database file and syncs it, and better-sqlite3 does that on the
 * event loop. A bulk write (an import job's chunk: its goods, their indexes and 1,000 row results) grows
 * the WAL past that at nearly every commit, which made commits of 30 ms on average and up to 170 ms,
 * while other customers' requests waited. Here the writing connection checkpoints only as a fallback
 * (FALLBACK_AUTOCHECKPOINT_PAGES) and a worker thread does it every CHECKPOINT_INTERVAL_MS instead.
 */
export class SqliteCheckpointer {
  private readonly logger = new Logger(SqliteCheckpointer.name);
  private worker?: Worker;
  private stopped = false;

  constructor(
    private readonly path: string,
    /** Sets the writing connection's wal_autocheckpoint (pages). */
    private readonly setAutoCheckpoint: (pages: number) => Promise<void>,
  ) {}

  /** Starts the worker; resolves once its connection is open (or, should it fail, once the default is back). */
  async start(): Promise<void> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: this.path, driver: require.resolve('better-sqlite3'), intervalMs: CHECKPOINT_INTERVAL_MS },
    });
    this.worker = worker;
    worker.unref();
    const ready = new Promise<boolean>((resolve) => {
      worker.once('message', () => resolve(true));
      worker.once('error', () => resolve(false));
      worker.once('exit', () => resolve(false));
    });
    worker.on('error', (err) => {
      this.logger.warn(`SQLite checkpointer failed (${err.message}); the writing connection checkpoints by itself again`);
      void this.fallBack();
    });
    worker.on('exit', () => {
      if (!this.stopped) void this.fallBack();
    });
    if (await ready) await this.setAutoCheckpoint(FALLBACK_AUTOCHECKPOINT_PAGES);
  }

  /** Closes the worker's connection (before the writer's, which removes the WAL when it is the last). */
  async stop(): Promise<void> {
    this.stopped = true;
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    // Referenced while it closes: an unreferenced worker and timer would let the process end mid-shutdown.
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close');
    await finishedWithin(exited, 2000);
    await worker.terminate();
  }

  private async fallBack(): Promise<void> {
    this.worker = undefined;
    if (this.stopped) return;
    await this.setAutoCheckpoint(DEFAULT_AUTOCHECKPOINT_PAGES).catch((err: unknown) => {
      this.logger.warn(`wal_autocheckpoint not restored: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
}
