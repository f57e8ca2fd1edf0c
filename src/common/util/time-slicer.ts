import { performance } from 'node:perf_hooks';
import { foreground } from './foreground';

/** Bulk work waiting for its next slice, first come first served (see nextTurn). */
const waiting: Array<() => void> = [];
let releasing = false;

function releaseOne(): void {
  const next = waiting.shift();
  // The next one goes in the next turn: immediates set while immediates run wait for the next turn.
  if (waiting.length) setImmediate(releaseOne);
  else releasing = false;
  next?.();
}

/**
 * Resolves in a later turn of the event loop, after everything that was ready has run; of all the bulk
 * work of the process waiting so, one is let go per turn, first come first served. A sync plans one
 * segment while it writes the last, another customer's import runs, an answer is being serialised:
 * each used to get a slice of every turn, so a turn (and every request and live event waiting for it)
 * took as many slices as there were such tasks. Now a turn holds one slice of bulk work, whatever runs.
 */
function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (releasing) return;
    releasing = true;
    setImmediate(releaseOne);
  });
}

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
 * `due()` is a clock read; `yield()` lets the event loop run everything that is ready and waits for its
 * turn among the process's bulk work (one slice per turn of the event loop, see nextTurn), then, while
 * an interactive request is in flight (see ForegroundRequests), waits for it to be answered, for at most
 * `holdMs` (0: not at all, see forRequest); then starts a new slice.
 */
export class TimeSlicer {
  private sliceStart = performance.now();

  constructor(
    private readonly budgetMs = 5,
    private readonly holdMs = 10,
  ) {}

  /**
   * For an interactive request's own large answer (a campaign's 1,000 goods, a public list with goods):
   * it gives up the event loop between slices and takes its turn among the bulk work, but holds for no
   * request in flight. Other requests are its peers, and the request itself counts as one (for its
   * first INTERACTIVE_MS), so holding made it wait up to `holdMs` at each slice for itself.
   */
  static forRequest(): TimeSlicer {
    return new TimeSlicer(5, 0);
  }

  due(): boolean {
    return performance.now() - this.sliceStart >= this.budgetMs;
  }

  async yield(): Promise<void> {
    await nextTurn();
    if (this.holdMs > 0 && foreground.busy) {
      await foreground.idle(this.holdMs);
      // Resumed by a timer or by a request leaving: take a turn of its own again.
      await nextTurn();
    }
    this.sliceStart = performance.now();
  }

  /** `yield()` when the slice's time is up. */
  async pause(): Promise<void> {
    if (this.due()) await this.yield();
  }
}
