import { GoodsListCache, MAX_CACHED_IDS } from './goods-list-cache';

const ids = (count: number, from = 0) => Array.from({ length: count }, (_, k) => from + count - k);

describe('GoodsListCache', () => {
  it('answers an entry only at the version it was kept for, and forgets it once a newer version is read', () => {
    const cache = new GoodsListCache();
    cache.set(1, 'watch', 7, 3, [30, 20, 10]);
    expect(cache.get(1, 'watch', 7)).toEqual({ version: 7, count: 3, ids: Float64Array.from([30, 20, 10]) });
    expect(cache.get(2, 'watch', 7)).toBeUndefined();
    // A request that read the catalog before version 7 gets nothing, and leaves the entry.
    expect(cache.get(1, 'watch', 6)).toBeUndefined();
    expect(cache.get(1, 'watch', 7)?.count).toBe(3);
    expect(cache.get(1, 'watch', 8)).toBeUndefined();
    // Dropped when found stale: not even the version it was kept for finds it now.
    expect(cache.get(1, 'watch', 7)).toBeUndefined();
  });

  it('keeps the count without the ids past MAX_CACHED_IDS', () => {
    const cache = new GoodsListCache();
    cache.set(1, 'a', 1, MAX_CACHED_IDS, ids(MAX_CACHED_IDS));
    cache.set(1, 'e', 1, MAX_CACHED_IDS + 1, ids(MAX_CACHED_IDS + 1));
    cache.set(1, '', 1, 12);
    expect(cache.get(1, 'a', 1)?.ids?.length).toBe(MAX_CACHED_IDS);
    expect(cache.get(1, 'e', 1)).toEqual({ version: 1, count: MAX_CACHED_IDS + 1, ids: undefined });
    expect(cache.get(1, '', 1)).toEqual({ version: 1, count: 12, ids: undefined });
  });

  it('keeps at most 32 MB of ids, dropping the least recently used entries first', () => {
    const cache = new GoodsListCache();
    // 1,000,000 ids are 8 MB: four fit.
    for (const keyword of ['k1', 'k2', 'k3', 'k4']) cache.set(1, keyword, 1, 1_000_000, ids(1_000_000));
    expect(cache.get(1, 'k1', 1)).toBeDefined(); // now the most recently used
    cache.set(1, 'k5', 1, 1_000_000, ids(1_000_000));
    expect(cache.get(1, 'k2', 1)).toBeUndefined();
    for (const keyword of ['k1', 'k3', 'k4', 'k5']) expect(cache.get(1, keyword, 1)?.count).toBe(1_000_000);
    // Entries without ids cost nothing against the bound, and replacing an entry gives its bytes back.
    for (let k = 0; k < 100; k++) cache.set(2, `few ${k}`, 1, 1);
    cache.set(1, 'k3', 1, 2, [2, 1]);
    cache.set(1, 'k6', 1, 1_000_000, ids(1_000_000));
    for (const keyword of ['k1', 'k3', 'k4', 'k5', 'k6']) expect(cache.get(1, keyword, 1)).toBeDefined();
    expect(cache.get(2, 'few 0', 1)).toBeDefined();
  });
});
