import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from 'typeorm';

/**
 * Work a request wants done inside each write transaction it commits, as that transaction's last
 * statement: the Idempotency-Key it holds is marked applied in the same commit as its write (see
 * IdempotencyInterceptor). `pending` is true until a transaction carrying the mark has committed.
 */
export interface CommitMark {
  pending: boolean;
  apply(em: EntityManager): Promise<void>;
}

/** The mark of the request running now: set for what a handler does, and everything that follows from it. */
const marks = new AsyncLocalStorage<CommitMark>();

/** Runs `work` (a request's handler) with `mark`: Transactions applies it before each COMMIT while pending. */
export function runWithCommitMark<T>(mark: CommitMark, work: () => T): T {
  return marks.run(mark, work);
}

/** The pending mark of the request running now, if any. */
export function pendingCommitMark(): CommitMark | null {
  const mark = marks.getStore();
  return mark?.pending ? mark : null;
}
