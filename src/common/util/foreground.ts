import { performance } from 'node:perf_hooks';

/** A request counts as interactive for this long after it started; past it, it no longer holds bulk work back. */
const INTERACTIVE_MS = 100;

/**
 * Interactive requests before bulk work, on the one event loop they share.
 *
 * Every HTTP request being served is entered here (Lifecycle.track) unless its route does bulk work
 * (`@BulkWork()`: a sync, a spreadsheet import, an export). Between two of its slices, bulk work
 * (TimeSlicer) holds its next slice while such a request is in flight, until it has been answered or
 * for at most the slicer's hold bound: a list page makes a few database round trips and used to give a
 * whole bulk slice (5 ms or more) to each of them; now its continuations run first.
 *
 * Bounded both ways: bulk work keeps at least one slice per hold bound (5 ms of every 15), and a request
 * stops counting once it is INTERACTIVE_MS old (a slow download, an image being fetched for it), so that
 * it cannot hold bulk work back for its whole life. On SQLite a write waiting for its turn
 * (`writerQueued`) waits for the bulk transaction that holds the turn: while one waits, nothing is held
 * back, so that the transaction ends as soon as it can.
 */
export class ForegroundRequests {
  private readonly started = new Map<object, number>();
  private writersQueued = 0;
  private readonly waiting = new Set<() => void>();

  constructor(
    /** The clock that ages requests (INTERACTIVE_MS), in ms. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  enter(request: object): void {
    this.started.set(request, this.now());
  }

  /** Idempotent: a request leaves when answered, or earlier when its route turns out to be bulk work. */
  leave(request: object): void {
    if (this.started.delete(request)) this.wakeIfIdle();
  }

  /** A write queued for SQLite's single write turn; call the returned function when its turn starts. */
  writerQueued(): () => void {
    this.writersQueued += 1;
    this.wakeIfIdle();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.writersQueued -= 1;
    };
  }

  /** An interactive request is in flight, and no write waits for its turn. */
  get busy(): boolean {
    if (this.started.size === 0 || this.writersQueued > 0) return false;
    const youngSince = this.now() - INTERACTIVE_MS;
    for (const since of this.started.values()) if (since > youngSince) return true;
    return false;
  }

  /** Resolves when no longer `busy` (checked as requests leave and writes queue), or after `maxMs`. */
  idle(maxMs: number): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, maxMs);
      this.waiting.add(wake);
    });
  }

  private wakeIfIdle(): void {
    if (this.waiting.size === 0 || this.busy) return;
    for (const wake of [...this.waiting]) wake();
  }
}

/** The process's one event loop has one set of interactive requests. */
export const foreground = new ForegroundRequests();
