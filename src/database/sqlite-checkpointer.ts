import { Logger } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { finishedWithin } from '../common/util/finished-within';

/** How often the checkpointer copies the WAL back into the database file. */
export const CHECKPOINT_INTERVAL_MS = 25;
/**
 * WAL pages (4 kB) past which the writing connection checkpoints by itself at a commit, as SQLite does by
 * default at 1,000: only when the checkpointer does not keep up (or is gone, see `stop`). 400 MB: more
 * than one write transaction adds to the WAL (a 10,000-element sync into a catalog of 1,000,000 goods
 * writes about 150 MB of it, its index pages scattered), which beforeWrite started short. At 10,000 pages
 * every such commit checkpointed the whole WAL on the event loop, for 0.2-0.4 s.
 */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 100_000;
/** SQLite's own default, put back when the checkpointer stops. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
/**
 * WAL pages past which a write transaction first waits for the checkpointer to copy the whole WAL back
 * and have it started over (`beforeWrite`): well before the fallback above, so that a steady writer
 * keeps the WAL short without a checkpoint at its own commits.
 */
export const RESTART_AT_PAGES = 4_000;
/** Longest a write waits for that; past it, it goes on (the fallback still bounds the WAL). */
const RESTART_WAIT_MS = 2000;

/**
 * The worker: its own connection to the file, a PASSIVE checkpoint every interval (it waits for no reader
 * and no writer: the writer goes on appending to the WAL meanwhile, and SQLite starts the WAL over at the
 * next write once everything in it has been copied). It tells the WAL's length (pages) when it changes.
 * Asked to, it runs a RESTART checkpoint: it waits (on this thread) for the writer to be between
 * transactions, copies what is left and makes the next write start the WAL over.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true, timeout: workerData.restartWaitMs });
db.pragma('synchronous = NORMAL');
let told = -1;
const checkpoint = (mode) => {
  const [result] = db.pragma('wal_checkpoint(' + mode + ')');
  return result;
};
const timer = setInterval(() => {
  const { log } = checkpoint('PASSIVE');
  if (log !== told) parentPort.postMessage({ walPages: (told = log) });
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'restart') {
    let done = false;
    try {
      done = checkpoint('RESTART').busy === 0;
    } catch {
      // SQLITE_BUSY past the timeout: the next write asks again.
    }
    parentPort.postMessage({ restarted: done });
    return;
  }
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
 *
 * A steady writer (an import job's chunks back to back) leaves the passive checkpoints no moment where
 * the whole WAL has been copied as the next write starts, so SQLite never starts the WAL over: it grew
 * to the fallback, and then about every tenth commit checkpointed on the event loop for 40-70 ms. So a
 * write transaction that finds the WAL past RESTART_AT_PAGES first waits, off the event loop, for the
 * worker's RESTART checkpoint (beforeWrite).
 */
export class SqliteCheckpointer {
  private readonly logger = new Logger(SqliteCheckpointer.name);
  private worker?: Worker;
  private stopped = false;
  /** The WAL's length in pages, as the worker last told it. */
  private walPages = 0;
  /** The RESTART checkpoint asked for and not answered yet (one at a time). */
  private restarting?: Promise<void>;
  private restarted?: () => void;

  constructor(
    private readonly path: string,
    /** Sets the writing connection's wal_autocheckpoint (pages). */
    private readonly setAutoCheckpoint: (pages: number) => Promise<void>,
  ) {}

  /** Starts the worker; resolves once its connection is open (or, should it fail, once the default is back). */
  async start(): Promise<void> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path: this.path, driver: require.resolve('better-sqlite3'), intervalMs: CHECKPOINT_INTERVAL_MS, restartWaitMs: RESTART_WAIT_MS },
    });
    this.worker = worker;
    worker.unref();
    worker.on('message', (message: { walPages?: number; restarted?: boolean }) => {
      if (typeof message !== 'object' || message === null) return;
      if (typeof message.walPages === 'number') this.walPages = message.walPages;
      if (message.restarted !== undefined) {
        // The next write starts the WAL over (the worker's next report says so too).
        if (message.restarted) this.walPages = 0;
        this.restarted?.();
      }
    });
    const ready = new Promise<boolean>((resolve) => {
      worker.once('message', () => resolve(true));
      worker.once('error', () => resolve(false));
      worker.once('exit', () => resolve(false));
    });
    worker.on('error', (err: unknown) => {
      // What the worker threw comes back cloned: a SQLite error may arrive as a plain object, or without its message.
      const { message, code } = (err ?? {}) as { message?: unknown; code?: unknown };
      const reason = [message, code].filter((part) => typeof part === 'string' && part !== '').join(', ') || String(err);
      this.logger.warn(`SQLite checkpointer failed (${reason}); the writing connection checkpoints by itself again`);
      void this.fallBack();
    });
    worker.on('exit', () => {
      if (!this.stopped) void this.fallBack();
    });
    if (await ready) await this.setAutoCheckpoint(FALLBACK_AUTOCHECKPOINT_PAGES);
  }

  /** The WAL's length in pages as the worker last told it (0 once a RESTART checkpoint has run). */
  get walLength(): number {
    return this.walPages;
  }

  /**
   * Called before each write transaction, outside it: when the WAL has grown past RESTART_AT_PAGES, waits
   * (for at most RESTART_WAIT_MS) for the worker to copy it all back and have the next write start it over.
   */
  async beforeWrite(): Promise<void> {
    const worker = this.worker;
    if (!worker || this.walPages < RESTART_AT_PAGES) return;
    this.restarting ??= new Promise<void>((resolve) => {
      this.restarted = resolve;
      worker.postMessage('restart');
    }).finally(() => {
      this.restarting = undefined;
      this.restarted = undefined;
    });
    await finishedWithin(this.restarting, RESTART_WAIT_MS + 500);
  }

  /** Closes the worker's connection (before the writer's, which removes the WAL when it is the last). */
  async stop(): Promise<void> {
    this.stopped = true;
    const worker = this.worker;
    this.worker = undefined;
    // A write waiting for a RESTART goes on (the writing connection closes after it anyway).
    this.restarted?.();
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
    this.restarted?.();
    if (this.stopped) return;
    await this.setAutoCheckpoint(DEFAULT_AUTOCHECKPOINT_PAGES).catch((err: unknown) => {
      this.logger.warn(`wal_autocheckpoint not restored: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
}
