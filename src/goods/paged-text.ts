/** What separates two items' texts (no keyword holding it is matched in memory). */
export const SEPARATOR = '\u0000';

/** Items per page: a power of two, so that an item's page is its index shifted. */
const PAGE_BITS = 12;
export const PAGE_ITEMS = 1 << PAGE_BITS;

/**
 * The texts of a corpus's items, numbered from 0, as if joined by SEPARATOR into one string (item i spans
 * starts[i] .. starts[i + 1] - 1 of it), but kept as pages of PAGE_ITEMS items, each page one string:
 * joining a whole catalog into one string copies it in one go, which at 1,000,000 goods held the event
 * loop for 120–350 ms on a 2-core VM; a page is joined in well under a millisecond.
 */
export class PagedText {
  constructor(
    private readonly pages: readonly string[],
    /** Offsets in the joined string: item i starts at starts[i]; the last entry is the joined length + 1. */
    readonly starts: Int32Array,
  ) {}

  /** The number of items. */
  get items(): number {
    return this.starts.length - 1;
  }

  /** The page holding item i. */
  page(i: number): string {
    return this.pages[i >>> PAGE_BITS];
  }

  /** Where item i starts in its page. */
  offset(i: number): number {
    return this.starts[i] - this.starts[i & ~(PAGE_ITEMS - 1)];
  }

  /** Where item i ends in its page (the offset after its last unit). */
  end(i: number): number {
    return this.offset(i) + this.starts[i + 1] - this.starts[i] - 1;
  }

  /** The text of item i. */
  item(i: number): string {
    return this.page(i).slice(this.offset(i), this.end(i));
  }

  /** The number of pages (PAGE_ITEMS items each, the last one fewer). */
  get pageCount(): number {
    return this.pages.length;
  }

  /** The first `count` pages, the strings themselves (a layout continuing them shares them, see PagedLayout.continuing). */
  firstPages(count: number): string[] {
    return this.pages.slice(0, count);
  }

  /**
   * The items whose text holds `needle` (without SEPARATOR), in order: of every page, or of pages
   * `fromPage` to `toPage` - 1 (appended to `found`), for a caller that takes them a few at a time.
   */
  holding(needle: string, fromPage = 0, toPage = this.pages.length, found: number[] = []): number[] {
    for (let p = fromPage; p < Math.min(toPage, this.pages.length); p++) {
      const page = this.pages[p];
      const first = p << PAGE_BITS;
      const base = this.starts[first];
      const last = Math.min(this.items, first + PAGE_ITEMS) - 1;
      let pos = page.indexOf(needle);
      while (pos !== -1) {
        const item = this.itemAt(first, last, base + pos);
        found.push(item);
        pos = page.indexOf(needle, this.starts[item + 1] - base);
      }
    }
    return found;
  }

  /** The item among first..last whose span holds the offset `at` of the joined string. */
  private itemAt(first: number, last: number, at: number): number {
    let lo = first;
    let hi = last;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/**
 * Builds a PagedText from texts added in order, a batch at a time (any sizes); a page is joined once it is
 * full. The offsets go into one Int32Array, sized for `capacity` items (and doubled past it).
 */
export class PagedLayout {
  private readonly pages: string[];
  private pending: string[] = [];
  private starts: Int32Array;
  private count: number;
  /** The length of the texts joined so far, as one string, plus one. */
  length: number;

  constructor(capacity = 1024, pages: string[] = [], starts?: Int32Array) {
    const items = pages.length * PAGE_ITEMS;
    this.pages = pages;
    this.starts = new Int32Array(Math.max(capacity, items, 1) + 1);
    if (starts) this.starts.set(starts.subarray(0, items));
    this.count = items;
    this.length = starts ? starts[items] : 0;
  }

  /**
   * A layout whose first items are those of the first `pages` whole pages of `base`, as they are: the same
   * page strings, not copies (a corpus rebuilt after writes that left its first items alone shares them
   * with the corpus it replaces). Fewer pages if `base` has fewer whole ones.
   */
  static continuing(base: PagedText, pages: number, capacity = 1024): PagedLayout {
    const whole = Math.max(0, Math.min(pages, Math.floor(base.items / PAGE_ITEMS)));
    return new PagedLayout(capacity, base.firstPages(whole), base.starts);
  }

  /** The number of items added (those of the pages it continues included). */
  get items(): number {
    return this.count;
  }

  add(texts: readonly string[]): void {
    for (const text of texts) this.push(text);
  }

  /** Adds one item's text after the others. */
  push(text: string): void {
    // Room for this offset and for the final one (see done).
    if (this.count + 2 > this.starts.length) {
      const bigger = new Int32Array(this.starts.length * 2);
      bigger.set(this.starts);
      this.starts = bigger;
    }
    this.starts[this.count++] = this.length;
    this.length += text.length + 1;
    this.pending.push(text);
    if (this.pending.length === PAGE_ITEMS) this.flush();
  }

  done(): PagedText {
    if (this.pending.length) this.flush();
    const starts = this.starts.length === this.count + 1 ? this.starts : this.starts.slice(0, this.count + 1);
    starts[this.count] = this.length;
    this.starts = new Int32Array(1);
    this.count = 0;
    this.length = 0;
    return new PagedText(this.pages.splice(0), starts);
  }

  private flush(): void {
    this.pages.push(this.pending.join(SEPARATOR));
    this.pending = [];
  }
}
