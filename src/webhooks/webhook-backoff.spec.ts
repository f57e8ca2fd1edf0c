import { nextAttemptAt, retryDelayMs } from './webhook-backoff';

describe('webhook retry schedule', () => {
  const schedule = { baseMs: 30_000, maxDelayMs: 3_600_000, windowMs: 86_400_000 };

  it('doubles from the base, with the jitter in the upper half', () => {
    expect(retryDelayMs(1, schedule, 0)).toBe(15_000);
    expect(retryDelayMs(1, schedule, 0.999999)).toBe(30_000);
    expect(retryDelayMs(2, schedule, 0)).toBe(30_000);
    expect(retryDelayMs(3, schedule, 0.5)).toBe(90_000);
    for (let attempts = 1; attempts <= 6; attempts += 1) {
      const full = 30_000 * 2 ** (attempts - 1);
      const d = retryDelayMs(attempts, schedule);
      expect(d).toBeGreaterThanOrEqual(full / 2);
      expect(d).toBeLessThanOrEqual(full);
    }
  });

  it('caps the delay at maxDelayMs, even after very many tries', () => {
    expect(retryDelayMs(8, schedule, 0)).toBe(1_800_000);
    expect(retryDelayMs(8, schedule, 0.999999)).toBeLessThanOrEqual(3_600_000);
    expect(retryDelayMs(1000, schedule, 0)).toBe(1_800_000);
    expect(Number.isFinite(retryDelayMs(1e9, schedule, 1))).toBe(true);
  });

  it('treats 0 tries like the first', () => {
    expect(retryDelayMs(0, schedule, 0)).toBe(15_000);
  });

  it('gives up once the next try would fall past the window', () => {
    const created = new Date('2026-01-01T00:00:00Z');
    const early = nextAttemptAt(created, 1, new Date('2026-01-01T00:00:01Z'), schedule, 0);
    expect(early?.toISOString()).toBe('2026-01-01T00:00:16.000Z');
    const late = new Date(created.getTime() + 86_400_000 - 60_000);
    expect(nextAttemptAt(created, 20, late, schedule, 0)).toBeNull();
  });

  it('adds up to about a day of tries with the default settings (about 30 tries)', () => {
    const created = new Date(0);
    let now = created;
    let attempts = 1;
    for (;;) {
      const next = nextAttemptAt(created, attempts, now, schedule, 0.5);
      if (!next) break;
      now = next;
      attempts += 1;
    }
    expect(attempts).toBeGreaterThan(20);
    expect(attempts).toBeLessThan(40);
    expect(now.getTime()).toBeLessThanOrEqual(86_400_000);
  });
});
