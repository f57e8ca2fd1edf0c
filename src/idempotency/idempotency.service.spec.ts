import type { AppConfig } from '../config/app-config';
import type { Transactions } from '../database/transactions';
import { IdempotencyService, RELEASE_RETRY_MS } from './idempotency.service';

describe('IdempotencyService.release', () => {
  const hold = { customerId: 1, keyHash: 'k', owner: 'o' };

  afterEach(() => jest.useRealTimers());

  function serviceWith(failures: number, leaseMs = 60_000): { service: IdempotencyService; calls: () => number } {
    let calls = 0;
    const transactions = {
      run: jest.fn(() => {
        calls += 1;
        return calls <= failures ? Promise.reject(new Error('the database is unavailable')) : Promise.resolve({ affected: 1 });
      }),
    } as unknown as Transactions;
    const config = { idempotency: { leaseMs, ttlMs: 86_400_000 } } as unknown as AppConfig;
    return { service: new IdempotencyService(transactions, config), calls: () => calls };
  }

  it('a release that fails (the database away) is tried again until it holds, so a retry need not wait for the lease', async () => {
    jest.useFakeTimers();
    const { service, calls } = serviceWith(2);
    await expect(service.release(hold)).rejects.toThrow('unavailable');
    await jest.advanceTimersByTimeAsync(RELEASE_RETRY_MS);
    expect(calls()).toBe(2);
    await jest.advanceTimersByTimeAsync(RELEASE_RETRY_MS);
    expect(calls()).toBe(3);
    await jest.advanceTimersByTimeAsync(10 * RELEASE_RETRY_MS);
    expect(calls()).toBe(3);
  });

  it('gives up when the lease would have freed the key anyway, and at shutdown', async () => {
    jest.useFakeTimers();
    const short = serviceWith(100, 5 * RELEASE_RETRY_MS);
    await expect(short.service.release(hold)).rejects.toThrow();
    await jest.advanceTimersByTimeAsync(20 * RELEASE_RETRY_MS);
    expect(short.calls()).toBeLessThanOrEqual(5);
    const stopping = serviceWith(100);
    await expect(stopping.service.release(hold)).rejects.toThrow();
    stopping.service.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(20 * RELEASE_RETRY_MS);
    expect(stopping.calls()).toBe(1);
  });
});
