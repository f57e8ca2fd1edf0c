import { performance } from 'node:perf_hooks';
import { SheetError } from './sheet-error';

/**
 * Bounds the time one upload may take to read, and stops a read that failed elsewhere (the zip
 * source) even when the reader itself would wait forever: every await of the reader goes through
 * `race()`. It also lets the event loop breathe during a long read so other requests are served.
 *
 * A read makes one `race()` per row, so a race must leave nothing behind once its step settles:
 * `Promise.race([step, aborted])` with one long-lived `aborted` promise would add a reaction to it per
 * call, each holding that step's value until the read ends (gigabytes for a file of blank lines).
 * Instead each step in flight registers its own rejecter, removed as soon as the step settles.
 */
export class ReadGuard {
  private readonly deadline: number;
  private readonly timer: NodeJS.Timeout;
  private failure?: Error;
  /** Rejecters of the steps in flight (one at a time in practice). */
  private readonly inFlight = new Set<(err: Error) => void>();
  private lastBreath = performance.now();

  /**
   * `breatheMs`: continuous work between two turns of the event loop. 5 ms, as TimeSlicer's slices:
   * at 25 ms (and Date.now()'s whole milliseconds) the stream steps between two looks made stalls of
   * 45–70 ms while a CSV of blank lines or of long prices was read (`npm run bench:abuse`).
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly breatheMs = 5,
  ) {
    this.deadline = Date.now() + timeoutMs;
    this.timer = setTimeout(() => this.abort(this.timeoutError()), timeoutMs);
    this.timer.unref();
  }

  abort(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    for (const reject of this.inFlight) reject(err);
    this.inFlight.clear();
  }

  /** Throws when aborted or past the deadline (checked on every step: a busy loop may starve the timer). */
  check(): void {
    if (!this.failure && Date.now() > this.deadline) this.abort(this.timeoutError());
    if (this.failure) throw this.failure;
  }

  /** Waits for `step`, unless the read is aborted first. */
  async race<T>(step: Promise<T>): Promise<T> {
    this.check();
    let reject!: (err: Error) => void;
    const raced = new Promise<T>((resolve, fail) => {
      reject = fail;
      step.then(resolve, fail);
    });
    this.inFlight.add(reject);
    let value: T;
    try {
      value = await raced;
    } finally {
      this.inFlight.delete(reject);
    }
    this.check();
    return value;
  }

  /** Yields to the event loop every ~5 ms (breatheMs) of continuous work. */
  async breathe(): Promise<void> {
    if (performance.now() - this.lastBreath < this.breatheMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.lastBreath = performance.now();
    this.check();
  }

  dispose(): void {
    clearTimeout(this.timer);
  }

  private timeoutError(): SheetError {
    return SheetError.unsupported(`The spreadsheet could not be read within ${Math.round(this.timeoutMs / 100) / 10} s; is it truncated or corrupt?`);
  }
}
