import { PAGE_ITEMS, PagedLayout, PagedText } from './paged-text';

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

  it('continues the whole pages of a text as they are, and lays out the items after them', () => {
    const base = laidOut(texts, [5000]);
    const later = texts.map((t, i) => (i < 2 * PAGE_ITEMS ? t : `later ${i}`));
    // Two pages asked for and kept; five asked for, and the base has two whole ones (10,001 items); none.
    for (const [pages, whole] of [
      [2, 2],
      [5, 2],
      [0, 0],
    ]) {
      const layout = PagedLayout.continuing(base, pages, 10);
      expect(layout.items).toBe(whole * PAGE_ITEMS);
      for (let i = layout.items; i < later.length; i++) layout.push(later[i]);
      const text = layout.done();
      const expected = [...texts.slice(0, whole * PAGE_ITEMS), ...later.slice(whole * PAGE_ITEMS)];
      expect(text.items).toBe(expected.length);
      expect(text.starts[expected.length]).toBe(expected.join('\u0000').length + 1);
      for (let i = 0; i < expected.length; i += 7) expect(text.item(i)).toBe(expected[i]);
      expect(text.item(expected.length - 1)).toBe(expected[expected.length - 1]);
      for (const needle of ['later 9', 'item 81', '워치']) expect(text.holding(needle)).toEqual(expected.flatMap((t, i) => (t.includes(needle) ? [i] : [])));
    }
  });

  it('takes no partial page from the text it continues', () => {
    const base = laidOut(texts.slice(0, PAGE_ITEMS + 5), [1000]);
    const layout = PagedLayout.continuing(base, 2);
    expect(layout.items).toBe(PAGE_ITEMS);
    layout.add(['after']);
    const text = layout.done();
    expect(text.items).toBe(PAGE_ITEMS + 1);
    expect(text.item(PAGE_ITEMS - 1)).toBe(texts[PAGE_ITEMS - 1]);
    expect(text.item(PAGE_ITEMS)).toBe('after');
  });

  it('lays out nothing as no items', () => {
    const text = new PagedLayout().done();
    expect(text.items).toBe(0);
    expect(text.holding('a')).toEqual([]);
  });
});
