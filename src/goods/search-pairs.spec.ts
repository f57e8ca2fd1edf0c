import { PagedLayout, PagedText } from './paged-text';
import { PairIndex } from './search-pairs';

/** Items laid out as the search corpus lays them out (several pages for more than 4,096 items). */
function layout(items: string[]): PagedText {
  const pages = new PagedLayout();
  pages.add(items);
  return pages.done();
}

/** A deterministic pseudo-random sequence (a linear congruential generator). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

describe('PairIndex', () => {
  const next = random(7);
  const alphabet = ['a', 'b', 'c', 'ß', 's', ' ', '\n', '가', '각', '워', '치', '1', '2', '😀'];
  const word = (length: number) => Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
  const items = Array.from({ length: 3000 }, () => word(1 + Math.floor(next() * 12)));
  const text = layout(items);
  let index: PairIndex;
  beforeAll(async () => {
    // Slices of 250 items, so that the build pauses many times.
    index = (await PairIndex.build(text, 250, () => Promise.resolve(true))) as PairIndex;
  });

  it('its candidates hold every item that contains a needle of two or more units (one list or several)', () => {
    for (let n = 0; n < 400; n++) {
      const needle = word(2 + Math.floor(next() * 3));
      if (needle.length < 2) continue;
      const holding = items.flatMap((item, i) => (item.includes(needle) ? [i] : []));
      for (const lists of [1, 3, 10]) {
        const candidates = [...index.candidates(needle, lists)];
        expect(candidates).toEqual([...candidates].sort((x, y) => x - y));
        expect(holding.filter((i) => !candidates.includes(i))).toEqual([]);
        if (lists === 10)
          expect(candidates.length).toBeLessThanOrEqual(
            items.filter((item) => [...Array(needle.length - 1).keys()].every((k) => item.includes(needle.slice(k, k + 2)))).length,
          );
      }
    }
  });

  it('knows which single units occur, and a pair no item holds gives no candidates', () => {
    expect(index.hasUnit('a'.charCodeAt(0))).toBe(true);
    expect(index.hasUnit('z'.charCodeAt(0))).toBe(false);
    expect([...index.candidates('zz')]).toEqual([]);
    expect([...index.candidates('az')]).toEqual([]);
  });

  it('never pairs units across two items (the separator)', () => {
    const small = layout(['ab', 'cd']);
    return PairIndex.build(small, 1, () => Promise.resolve(true)).then((built) => {
      expect([...(built as PairIndex).candidates('bc')]).toEqual([]);
      expect([...(built as PairIndex).candidates('cd')]).toEqual([1]);
    });
  });

  it('grows its table past many distinct pairs and still finds each of them', async () => {
    const many = Array.from({ length: 40_000 }, (_, i) => String.fromCharCode(0x4e00 + (i % 200), 0x4e00 + Math.floor(i / 200)));
    const big = layout(many);
    const built = (await PairIndex.build(big, 5000, () => Promise.resolve(true))) as PairIndex;
    for (const i of [0, 199, 200, 12_345, 39_999]) expect([...built.candidates(many[i])]).toEqual([i]);
  });

  it('stops when the pause says so', async () => {
    expect(await PairIndex.build(text, 100, () => Promise.resolve(false))).toBeUndefined();
  });
});
