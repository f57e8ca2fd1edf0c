import { PagedLayout, PagedText } from './paged-text';

/** Texts added in batches of the given sizes, as a load (pages of rows) or a rebuild (flushes) adds them. */
function laidOut(texts: string[], batches: number[]): PagedText {
  const layout = new PagedLayout();
  let at = 0;
  for (let b = 0; at < texts.length; b++) {
    const size = batches[b % batches.length];
    layout.add(texts.slice(at, at + size));
    at += size;
  }
  return layout.done();
}

describe('PagedText', () => {
  // 10,001 items: three pages of 4,096 and a part of one; empty texts, Hangul and an astral character among them.
  const texts = Array.from({ length: 10_001 }, (_, i) => (i % 1000 === 7 ? '' : `item ${i}${i % 3 ? ' 워치' : ''}${i % 4096 === 4095 ? ' edge😀' : ''}`));

  it('gives each item its text, and the offsets of the texts joined by the separator', () => {
    const text = laidOut(texts, [5000, 1, 333]);
    const joined = texts.join('\u0000');
    expect(text.items).toBe(texts.length);
    expect(text.starts[texts.length]).toBe(joined.length + 1);
    for (let i = 0; i < texts.length; i++) {
      expect(text.item(i)).toBe(texts[i]);
      expect(joined.slice(text.starts[i], text.starts[i + 1] - 1)).toBe(texts[i]);
      expect(text.page(i).slice(text.offset(i), text.offset(i) + texts[i].length)).toBe(texts[i]);
    }
  });

  it('finds the items holding a needle on every page, the first and last of a page included, in order', () => {
    const text = laidOut(texts, [4096, 5000]);
    for (const needle of ['item 1', '😀', 'edge', '워치', 'item 10000', 'item 4096', 'item 0', 'm', '4', 'no such text'])
      expect(text.holding(needle)).toEqual(texts.flatMap((t, i) => (t.includes(needle) ? [i] : [])));
  });

  it('finds the same a page at a time, the items of each page appended in order', () => {
    const text = laidOut(texts, [4096, 5000]);
    expect(text.pageCount).toBe(3);
    for (const needle of ['item 1', 'edge', '워치', 'm']) {
      const found: number[] = [];
      for (let page = 0; page < text.pageCount; page++) text.holding(needle, page, page + 1, found);
      expect(found).toEqual(text.holding(needle));
      expect(text.holding(needle, 1, 2)).toEqual(text.holding(needle).filter((i) => i >= 4096 && i < 8192));
    }
  });

  it('never finds a needle across two items', () => {
    const text = laidOut(['ab', 'cd', 'ab'], [1]);
    expect(text.holding('bc')).toEqual([]);
    expect(text.holding('b')).toEqual([0, 2]);
  });

  it('lays out nothing as no items', () => {
    const text = new PagedLayout().done();
    expect(text.items).toBe(0);
    expect(text.holding('a')).toEqual([]);
  });
});
