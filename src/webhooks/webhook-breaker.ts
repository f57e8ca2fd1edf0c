import { RetrySchedule, retryDelayMs } from './webhook-backoff';

/** Failed tries in a row after which an endpoint is paused (its circuit breaker opens). */
export const BREAKER_THRESHOLD = 5;

/** An endpoint's circuit breaker, as stored on its row. */
export interface BreakerState {
  /** Failed tries in a row; a delivered one resets it. */
  failureStreak: number;
  /** While in the future, none of the endpoint's deliveries is claimed. */
  pausedUntil: Date | null;
}

/**
 * The breaker after some tries of one endpoint (`delivered` per try, in the order they finished). Once
 * BREAKER_THRESHOLD tries in a row have failed, the endpoint is paused for the retry schedule's delay of
 * the (streak − threshold + 1)-th retry: with the defaults 15–30 s, then 30–60 s, 1–2 min, … up to 30–60 min,
 * one more step each time the try made after a pause (the probe) fails too. A failure that ends while the
 * endpoint is already paused (a send started before the pause) counts, but does not lengthen the pause.
 * A delivered try closes the breaker. `opened` says whether this call paused it (so that its pending
 * deliveries are moved to the pause's end).
 */
export function afterTries(
  state: BreakerState,
  delivered: boolean[],
  now: Date,
  schedule: Pick<RetrySchedule, 'baseMs' | 'maxDelayMs'>,
  random: number = Math.random(),
): BreakerState & { opened: boolean } {
  let failureStreak = state.failureStreak;
  let pausedUntil = state.pausedUntil;
  for (const ok of delivered) {
    if (ok) {
      failureStreak = 0;
      pausedUntil = null;
    } else {
      failureStreak += 1;
    }
  }
  const paused = pausedUntil !== null && pausedUntil.getTime() > now.getTime();
  if (failureStreak >= BREAKER_THRESHOLD && !paused) {
    const until = new Date(now.getTime() + retryDelayMs(failureStreak - BREAKER_THRESHOLD + 1, schedule, random));
    return { failureStreak, pausedUntil: until, opened: true };
  }
  return { failureStreak, pausedUntil, opened: false };
}
