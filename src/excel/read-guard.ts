import { SheetError } from './sheet-error';

/**
 * Bounds the time one upload may take to read, and stops a read that failed elsewhere (the zip
 * source) even when the reader itself would wait forever: every await of the reader goes through
 * `race()`. It also lets the event loop breathe during a long read so other requests are served.
 */
export class ReadGuard {
  private readonly deadline: number;
  private readonly timer: NodeJS.Timeout;
  private failure?: Error;
  private rejectAborted!: (err: Error) => void;
  private readonly aborted: Promise<never>;
  private lastBreath = Date.now();

  constructor(private readonly timeoutMs: number) {
    this.deadline = Date.now() + timeoutMs;
    this.aborted = new Promise<never>((_, reject) => (this.rejectAborted = reject));
    this.aborted.catch(() => undefined);
    this.timer = setTimeout(() => this.abort(this.timeoutError()), timeoutMs);
    this.timer.unref();
  }

  abort(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.rejectAborted(err);
  }

  /** Throws when aborted or past the deadline (checked on every step: a busy loop may starve the timer). */
  check(): void {
    if (!this.failure && Date.now() > this.deadline) this.abort(this.timeoutError());
    if (this.failure) throw this.failure;
  }

  /** Waits for `step`, unless the read is aborted first. */
  async race<T>(step: Promise<T>): Promise<T> {
    this.check();
    const value = await Promise.race([step, this.aborted]);
    this.check();
    return value;
  }

  /** Yields to the event loop every ~25 ms of continuous work. */
  async breathe(): Promise<void> {
    if (Date.now() - this.lastBreath < 25) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.lastBreath = Date.now();
    this.check();
  }

  dispose(): void {
    clearTimeout(this.timer);
  }

  private timeoutError(): SheetError {
    return SheetError.unsupported(
      `The spreadsheet could not be read within ${Math.round(this.timeoutMs / 100) / 10} s; is it truncated or corrupt?`,
    );
  }
}
