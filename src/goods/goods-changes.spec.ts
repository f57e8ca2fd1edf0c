import { Logger } from '@nestjs/common';
import type { Tenant } from '../auth/decorators';
import { changesWhatViewersSee, GoodsChangeHooks } from './goods-changes';

const tenant: Tenant = { id: 7, accessKey: 'k', currency: 'KRW', baseUrl: 'http://x', operator: {} };

describe('changesWhatViewersSee', () => {
  it('counts the fields of a goods summary, not the description or the mediaUrl text alone', () => {
    for (const field of ['name', 'brand', 'url', 'sku', 'originalPrice', 'discountedPrice', 'discountPercentage'] as const) {
      expect(changesWhatViewersSee([field])).toBe(true);
    }
    expect(changesWhatViewersSee(['description'])).toBe(false);
    expect(changesWhatViewersSee(['mediaUrl'])).toBe(false);
    expect(changesWhatViewersSee([])).toBe(false);
    expect(changesWhatViewersSee(['description', 'name'])).toBe(true);
  });
});

describe('GoodsChangeHooks', () => {
  it('calls every handler once per write with the distinct ids; nothing for none', async () => {
    const hooks = new GoodsChangeHooks();
    const calls: number[][] = [];
    hooks.register(async (t, ids) => {
      expect(t).toBe(tenant);
      calls.push(ids);
    });
    await hooks.changed(tenant, [3, 1, 3, 2, 1]);
    await hooks.changed(tenant, new Set<number>());
    expect(calls).toEqual([[3, 1, 2]]);
  });

  it('a failing handler is logged and does not stop the others or fail the write', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const hooks = new GoodsChangeHooks();
      const seen: number[] = [];
      hooks.register(() => Promise.reject(new Error('database away')));
      hooks.register(async (_t, ids) => {
        seen.push(...ids);
      });
      await expect(hooks.changed(tenant, [5])).resolves.toBeUndefined();
      expect(seen).toEqual([5]);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('database away'));
    } finally {
      warn.mockRestore();
    }
  });
});
