import { PagedLayout, PagedText } from './paged-text';
import { PairIndex, pairSegmenting } from './search-pairs';

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

  describe('in segments', () => {
    const whole = pairSegmenting.items;
    beforeAll(() => (pairSegmenting.items = 512));
    afterAll(() => (pairSegmenting.items = whole));

    /** The items holding every pair of the needle: the candidates when every list is intersected. */
    const holdingPairs = (texts: string[], needle: string) =>
      texts.flatMap((item, i) => ([...Array(needle.length - 1).keys()].every((k) => item.includes(needle.slice(k, k + 2))) ? [i] : []));

    /** Builds, counting the slices (pauses) it takes. */
    async function counted(layout: PagedText, reuse?: PairIndex, reuseItems?: number): Promise<{ index: PairIndex; slices: number }> {
      let slices = 0;
      const pause = () => Promise.resolve(++slices > 0);
      const index = (await PairIndex.build(layout, 100, pause, reuse, reuseItems)) as PairIndex;
      return { index, slices };
    }

    it('gives the items of every segment, in order, as one index does', async () => {
      const { index: segmented } = await counted(text);
      for (let n = 0; n < 300; n++) {
        const needle = word(2 + Math.floor(next() * 2));
        if (needle.length < 2) continue;
        expect([...segmented.candidates(needle, 10)]).toEqual(holdingPairs(items, needle));
        const candidates = [...segmented.candidates(needle)];
        expect(candidates).toEqual([...candidates].sort((x, y) => x - y));
        expect(items.flatMap((item, i) => (item.includes(needle) && !candidates.includes(i) ? [i] : []))).toEqual([]);
      }
      for (const unit of ['a', '가', 'z']) expect(segmented.hasUnit(unit.charCodeAt(0))).toBe(index.hasUnit(unit.charCodeAt(0)));
    });

    it('takes the segments of another index over the items both share, and indexes only the others', async () => {
      const fresh = await counted(text);
      // The same first 1,300 items, then others: segments 0 and 1 (items 0 to 1,023) are taken as they are.
      const changed = items.map((item, i) => (i < 1300 ? item : `${word(4)}zq${i % 7}`));
      const later = layout(changed);
      const reused = await counted(later, fresh.index, 1300);
      const anew = await counted(later);
      // Slices of 100 items, counted then filled: 6 segments (five of 512 items and one of 440) take 2 × (5 × 6 + 5) = 70; the 4 not shared, 2 × (3 × 6 + 5) = 46.
      expect(anew.slices).toBe(70);
      expect(reused.slices).toBe(46);
      for (const needle of ['zq', 'q3', 'ab', '가각', 'a ', 'zq6']) {
        expect([...reused.index.candidates(needle, 10)]).toEqual(holdingPairs(changed, needle));
        expect([...reused.index.candidates(needle, 10)]).toEqual([...anew.index.candidates(needle, 10)]);
      }
      expect(reused.index.hasUnit('z'.charCodeAt(0))).toBe(true);
      expect(fresh.index.hasUnit('z'.charCodeAt(0))).toBe(false);
      expect(reused.index.bytes).toBe(anew.index.bytes);
    });

    it('shares nothing with an index of other segments, or past the items it is told are shared', async () => {
      const fresh = await counted(text);
      expect((await counted(text, fresh.index, 511)).slices).toBe(70);
      pairSegmenting.items = 1024;
      try {
        // Segments of 1,024 items: 2 × (2 × 11 + 10) = 64 slices, all of them.
        expect((await counted(text, fresh.index, 3000)).slices).toBe(64);
      } finally {
        pairSegmenting.items = 512;
      }
    });
  });

  it('stops when the pause says so', async () => {
    expect(await PairIndex.build(text, 100, () => Promise.resolve(false))).toBeUndefined();
  });
});
