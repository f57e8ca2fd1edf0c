/** The retry schedule of webhook deliveries (docs/webhooks.md, Retries). */
export interface RetrySchedule {
  /** Delay before the second try, in ms; each further one doubles. */
  baseMs: number;
  /** Longest delay between two tries, in ms. */
  maxDelayMs: number;
  /** How long after the event tries may still start, in ms. */
  windowMs: number;
}

/**
 * The delay after the `attempts`-th failed try: base · 2^(attempts-1), capped at maxDelayMs, with "equal
 * jitter" (a random point in the upper half of it), so that receivers coming back from an outage are not
 * hit by every node's retries at the same instant. `random` is in [0, 1).
 */
export function retryDelayMs(attempts: number, schedule: Pick<RetrySchedule, 'baseMs' | 'maxDelayMs'>, random: number = Math.random()): number {
  const exponent = Math.min(Math.max(attempts, 1) - 1, 40);
  const full = Math.min(schedule.maxDelayMs, schedule.baseMs * 2 ** exponent);
  return Math.round(full / 2 + (full / 2) * random);
}

/**
 * When the next try after a failed one is due, or null when the delivery should be given up: that time
 * would fall after the retry window that started with the event.
 */
export function nextAttemptAt(createdAt: Date, attempts: number, now: Date, schedule: RetrySchedule, random: number = Math.random()): Date | null {
  const at = now.getTime() + retryDelayMs(attempts, schedule, random);
  return at > createdAt.getTime() + schedule.windowMs ? null : new Date(at);
}
