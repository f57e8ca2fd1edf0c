import { performance } from 'node:perf_hooks';
import { foreground } from './foreground';

/**
 * Cuts a long CPU-bound loop into slices so that it never holds the event loop for long: other requests,
 * live viewers and timers run between the slices.
 *
 *     const slicer = new TimeSlicer();
 *     for (const x of many) {
 *       if (slicer.due()) await slicer.yield();
 *       work(x);
 *     }
 *
 * `due()` is a clock read; `yield()` lets the event loop run everything that is ready (setImmediate),
 * then, while an interactive request is in flight (see ForegroundRequests), waits for it to be answered,
 * for at most `holdMs`; then starts a new slice.
 */
export class TimeSlicer {
  private sliceStart = performance.now();

  constructor(
    private readonly budgetMs = 5,
    private readonly holdMs = 10,
  ) {}

  due(): boolean {
    return performance.now() - this.sliceStart >= this.budgetMs;
  }

  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (foreground.busy) await foreground.idle(this.holdMs);
    this.sliceStart = performance.now();
  }

  /** `yield()` when the slice's time is up. */
  async pause(): Promise<void> {
    if (this.due()) await this.yield();
  }
}
