import { afterTries, BREAKER_THRESHOLD } from './webhook-breaker';

describe('webhook endpoint breaker', () => {
  const schedule = { baseMs: 30_000, maxDelayMs: 3_600_000 };
  const now = new Date('2026-01-01T00:00:00Z');
  const closed = { failureStreak: 0, pausedUntil: null };
  /** n failed tries, begun at `at` (before `now` by default). */
  const fails = (n: number, at = new Date(now.getTime() - 1000)) => Array.from({ length: n }, () => ({ delivered: false, startedAt: at }));
  const ok = (at = new Date(now.getTime() - 1000)) => ({ delivered: true, startedAt: at });

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
      const next = afterTries(state, fails(1, at), at, schedule, 0);
      expect(next.opened).toBe(true);
      pauses.push((next.pausedUntil as Date).getTime() - at.getTime());
      at = next.pausedUntil as Date; // the probe is made when the pause ends
      state = next;
    }
    expect(pauses).toEqual([15_000, 30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000, 1_800_000]);
  });

  it('does not count failures of sends that started before the pause, ending during it', () => {
    const paused = { failureStreak: BREAKER_THRESHOLD, pausedUntil: new Date(now.getTime() + 20_000) };
    const next = afterTries(paused, fails(2), now, schedule, 0);
    expect(next).toEqual({ failureStreak: BREAKER_THRESHOLD, pausedUntil: paused.pausedUntil, opened: false });
  });

  it('opens at the first step when more than the threshold fail in one batch (the rest were under way)', () => {
    const next = afterTries(closed, fails(BREAKER_THRESHOLD + 3), now, schedule, 0);
    expect(next).toEqual({ failureStreak: BREAKER_THRESHOLD, pausedUntil: new Date(now.getTime() + 15_000), opened: true });
  });

  it('pauses exactly one step longer after each failed probe, whatever failed while paused or ended after the pause', () => {
    const pauses: number[] = [];
    let state = { failureStreak: 0, pausedUntil: null as Date | null };
    let at = now;
    // The first pause opens with two more tries under way (endpoint concurrency); they fail during it.
    let next = afterTries(state, fails(BREAKER_THRESHOLD, new Date(at.getTime() - 100)), at, schedule, 0);
    const begun = new Date(at.getTime() - 50);
    pauses.push((next.pausedUntil as Date).getTime() - at.getTime());
    state = afterTries(next, fails(2, begun), new Date(at.getTime() + 1000), schedule, 0);
    expect(state).toEqual({ failureStreak: BREAKER_THRESHOLD, pausedUntil: next.pausedUntil, opened: false });
    for (let i = 0; i < 4; i += 1) {
      at = state.pausedUntil as Date; // the probe is made when the pause ends
      next = afterTries(state, fails(1, at), new Date(at.getTime() + 200), schedule, 0);
      expect(next.opened).toBe(true);
      pauses.push((next.pausedUntil as Date).getTime() - at.getTime() - 200);
      // A slow try begun before the first pause ends (fails) only now, after later pauses: it does not count.
      state = afterTries(next, fails(1, begun), new Date(at.getTime() + 300), schedule, 0);
      expect(state).toEqual({ ...next, opened: false });
    }
    expect(pauses).toEqual([15_000, 30_000, 60_000, 120_000, 240_000]);
  });

  it('closes on a delivered try, whatever came before (even one begun before the pause); only failures after it count', () => {
    const paused = { failureStreak: 9, pausedUntil: new Date(now.getTime() - 1) };
    expect(afterTries(paused, [ok(new Date(now.getTime() - 60_000))], now, schedule)).toEqual({ failureStreak: 0, pausedUntil: null, opened: false });
    expect(afterTries(paused, [...fails(1), ok(), ...fails(1)], now, schedule)).toEqual({ failureStreak: 1, pausedUntil: null, opened: false });
  });
});
