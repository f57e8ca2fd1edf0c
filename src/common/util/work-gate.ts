/** Why `WorkGate.run` refused or gave up on a task. */
export class WorkGateError extends Error {
  constructor(
    readonly reason: 'full' | 'waited' | 'ran',
    message: string,
  ) {
    super(message);
    this.name = 'WorkGateError';
  }
}

interface Waiter {
  start(): void;
  /** Answers the task with this refusal (it was taken out of the line). */
  refuse(err: WorkGateError): void;
  owner: unknown;
}

/**
 * At most `limit` tasks run at once in this process; at most `maxWaiting` more wait for a turn, in
 * order. Every task has a deadline: a task still waiting then is dropped, and a task still running is
 * answered with a `WorkGateError` at once, but keeps its turn until its work has really ended (what it
 * holds, such as a thread of the libuv pool, is only free then). A task may also be given an earlier
 * deadline for its wait alone.
 *
 * A task may name its owner (a customer): a free turn goes to the first waiting task of the owner with
 * the fewest tasks running, so one owner's many tasks take every turn only while nobody else waits; and
 * with `maxPerOwner`, never more than that many turns, even when others are free. With
 * `maxWaitingPerOwner`, one owner's tasks never fill the whole waiting line, and when a few owners have
 * filled it, a task of an owner with fewer waiting takes the place of the newest of the one with most.
 */
export class WorkGate {
  private running = 0;
  private readonly waiting: Waiter[] = [];
  /** Tasks running per owner (see run). */
  private readonly runningBy = new Map<unknown, number>();

  constructor(
    readonly limit: number,
    readonly maxWaiting: number,
    readonly maxPerOwner = Infinity,
    /** The most tasks of one owner that may wait: past it that owner's next is refused (`full`), others' not. */
    readonly maxWaitingPerOwner = Infinity,
  ) {}

  /** Tasks running now (answered or not). */
  get active(): number {
    return this.running;
  }

  /** Tasks waiting for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Runs `work` in a turn; `work` gets the time left before `deadline` (epoch ms). A task still waiting
   * at `waitUntil` (the deadline unless earlier) is dropped; the deadline may then be Infinity.
   */
  run<T>(deadline: number, work: (remainingMs: number) => Promise<T>, owner?: unknown, waitUntil = deadline): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let answered = false;
      let waiter: Waiter | undefined;
      let timer: NodeJS.Timeout | undefined;
      const answer = (fn: () => void) => {
        if (answered) return;
        answered = true;
        clearTimeout(timer);
        fn();
      };
      const arm = (at: number) => {
        clearTimeout(timer);
        if (at === Infinity) return;
        timer = setTimeout(
          () => {
            if (waiter) {
              const index = this.waiting.indexOf(waiter);
              if (index >= 0) this.waiting.splice(index, 1);
              answer(() => reject(new WorkGateError('waited', 'no turn before the deadline')));
            } else {
              answer(() => reject(new WorkGateError('ran', 'not finished before the deadline')));
            }
          },
          Math.max(0, at - Date.now()),
        );
        timer.unref?.();
      };
      arm(Math.min(waitUntil, deadline));
      const start = () => {
        waiter = undefined;
        if (waitUntil < deadline) arm(deadline);
        this.running += 1;
        this.runningBy.set(owner, (this.runningBy.get(owner) ?? 0) + 1);
        // Called at once; a work that throws instead of rejecting rejects this promise all the same.
        new Promise<T>((done) => done(work(Math.max(0, deadline - Date.now()))))
          .then(
            (value) => answer(() => resolve(value)),
            (err: Error) => answer(() => reject(err)),
          )
          .finally(() => {
            this.running -= 1;
            const left = (this.runningBy.get(owner) ?? 1) - 1;
            if (left > 0) this.runningBy.set(owner, left);
            else this.runningBy.delete(owner);
            this.next();
          });
      };
      waiter = { start, owner, refuse: (err) => answer(() => reject(err)) };
      this.waiting.push(waiter);
      this.next();
      if (!waiter) return;
      if (this.maxWaitingPerOwner !== Infinity && this.waiting.filter((w) => w.owner === owner).length > this.maxWaitingPerOwner) {
        this.waiting.pop();
        answer(() => reject(new WorkGateError('full', `${this.maxWaitingPerOwner} tasks of the same owner are already waiting`)));
      } else if (this.waiting.length > this.maxWaiting) {
        // A full line: with per-owner shares, the newest task of the owner with the most waiting gives its
        // place to this one when this owner has fewer waiting (so a few owners never fill the line for
        // everyone else); otherwise this one is refused.
        const crowded = this.maxWaitingPerOwner !== Infinity ? this.mostWaiting() : undefined;
        if (crowded && crowded.count > this.waiting.filter((w) => w.owner === owner).length) {
          const index = this.waiting.lastIndexOf(crowded.last);
          this.waiting.splice(index, 1);
          crowded.last.refuse(new WorkGateError('full', `${this.waiting.length} tasks are already waiting`));
        } else {
          this.waiting.pop();
          answer(() => reject(new WorkGateError('full', `${this.waiting.length} tasks are already waiting`)));
        }
      }
    });
  }

  /** The owner with the most tasks waiting: how many, and its newest. */
  private mostWaiting(): { count: number; last: Waiter } | undefined {
    const counts = new Map<unknown, { count: number; last: Waiter }>();
    let most: { count: number; last: Waiter } | undefined;
    for (const w of this.waiting) {
      const entry = counts.get(w.owner) ?? { count: 0, last: w };
      entry.count += 1;
      entry.last = w;
      counts.set(w.owner, entry);
      if (!most || entry.count > most.count) most = entry;
    }
    return most;
  }

  private next(): void {
    while (this.running < this.limit && this.waiting.length > 0) {
      // The first waiter of the owner with the fewest tasks running (in order of arrival among equals),
      // of the owners below maxPerOwner.
      let pick = -1;
      let fewest = this.maxPerOwner;
      for (let i = 0; i < this.waiting.length && fewest > 0; i++) {
        const running = this.runningBy.get(this.waiting[i].owner) ?? 0;
        if (running < fewest) [pick, fewest] = [i, running];
      }
      if (pick < 0) return;
      this.waiting.splice(pick, 1)[0].start();
    }
  }
}
