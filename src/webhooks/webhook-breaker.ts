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

/** One finished try of an endpoint, as the breaker reads it. */
export interface BreakerTry {
  /** Whether the receiver took it. */
  delivered: boolean;
  /** When the try started. */
  startedAt: Date;
}

/**
 * The breaker after some tries of one endpoint (in the order they finished). Once BREAKER_THRESHOLD tries
 * in a row have failed, the endpoint is paused for the retry schedule's delay of the
 * (streak − threshold + 1)-th retry: with the defaults 15–30 s, then 30–60 s, 1–2 min, … up to 30–60 min,
 * exactly one step more each time the try made after a pause (the probe) fails too.
 * A failed try that started before the endpoint's last pause ended (one under way when the breaker opened,
 * whether it ends during the pause or after it) says nothing the pause did not already act on: it does
 * not count, so it neither lengthens this pause nor any later one. Only tries begun after the last pause
 * ended (or with no pause since the last delivered try) count.
 * A delivered try closes the breaker, whenever it started. `opened` says whether this call paused it (so
 * that its pending deliveries are moved to the pause's end).
 */
export function afterTries(
  state: BreakerState,
  tries: BreakerTry[],
  now: Date,
  schedule: Pick<RetrySchedule, 'baseMs' | 'maxDelayMs'>,
  random: number = Math.random(),
): BreakerState & { opened: boolean } {
  let failureStreak = state.failureStreak;
  let pausedUntil = state.pausedUntil;
  let opened = false;
  for (const t of tries) {
    if (t.delivered) {
      failureStreak = 0;
      pausedUntil = null;
      opened = false;
      continue;
    }
    if (pausedUntil !== null && t.startedAt.getTime() < pausedUntil.getTime()) continue; // under way when the pause began
    failureStreak += 1;
    const paused = pausedUntil !== null && pausedUntil.getTime() > now.getTime();
    if (failureStreak >= BREAKER_THRESHOLD && !paused) {
      pausedUntil = new Date(now.getTime() + retryDelayMs(failureStreak - BREAKER_THRESHOLD + 1, schedule, random));
      opened = true;
    }
  }
  return { failureStreak, pausedUntil, opened };
}
