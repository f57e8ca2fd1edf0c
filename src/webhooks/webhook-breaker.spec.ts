import { afterTries, BREAKER_THRESHOLD } from './webhook-breaker';

describe('webhook endpoint breaker', () => {
  const schedule = { baseMs: 30_000, maxDelayMs: 3_600_000 };
  const now = new Date('2026-01-01T00:00:00Z');
  const closed = { failureStreak: 0, pausedUntil: null };
  const fails = (n: number) => Array.from({ length: n }, () => false);

  it('counts failed tries in a row and stays closed below the threshold', () => {
    const next = afterTries(closed, fails(BREAKER_THRESHOLD - 1), now, schedule, 0);
    expect(next).toEqual({ failureStreak: BREAKER_THRESHOLD - 1, pausedUntil: null, opened: false });
  });

  it('opens at the threshold for the first retry delay of the schedule (15–30 s with the defaults)', () => {
    const low = afterTries(closed, fails(BREAKER_THRESHOLD), now, schedule, 0);
    expect(low.opened).toBe(true);
    expect(low.pausedUntil?.getTime()).toBe(now.getTime() + 15_000);
    const high = afterTries(closed, fails(BREAKER_THRESHOLD), now, schedule, 0.999999);
    expect(high.pausedUntil?.getTime()).toBe(now.getTime() + 30_000);
  });

  it('pauses one step longer each time the probe after a pause fails, up to the longest delay', () => {
    const pauses: number[] = [];
    let state = { failureStreak: BREAKER_THRESHOLD - 1, pausedUntil: null as Date | null };
    let at = now;
    for (let i = 0; i < 10; i += 1) {
      const next = afterTries(state, [false], at, schedule, 0);
      expect(next.opened).toBe(true);
      pauses.push((next.pausedUntil as Date).getTime() - at.getTime());
      at = next.pausedUntil as Date; // the probe is made when the pause ends
      state = next;
    }
    expect(pauses).toEqual([15_000, 30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000, 1_800_000]);
  });

  it('does not lengthen a pause with failures of sends that started before it', () => {
    const paused = { failureStreak: BREAKER_THRESHOLD, pausedUntil: new Date(now.getTime() + 20_000) };
    const next = afterTries(paused, [false], now, schedule, 0);
    expect(next).toEqual({ failureStreak: BREAKER_THRESHOLD + 1, pausedUntil: paused.pausedUntil, opened: false });
  });

  it('closes on a delivered try, whatever came before; only failures after it count', () => {
    const paused = { failureStreak: 9, pausedUntil: new Date(now.getTime() - 1) };
    expect(afterTries(paused, [true], now, schedule)).toEqual({ failureStreak: 0, pausedUntil: null, opened: false });
    expect(afterTries(paused, [false, true, false], now, schedule)).toEqual({ failureStreak: 1, pausedUntil: null, opened: false });
  });
});
