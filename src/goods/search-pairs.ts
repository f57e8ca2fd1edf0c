import type { PagedText } from './paged-text';

/**
 * Items per segment of a PairIndex (a power of two, a multiple of the corpus's pages); tests set fewer.
 * A segment of 65,536 items of about 50 code units each holds about 13 MB of postings.
 */
export const pairSegmenting = { items: 1 << 16 };

/**
 * An in-memory index of the adjacent pairs of UTF-16 code units of a corpus's items (for each pair, the
 * items holding it, ascending), and which single code units occur at all. It only narrows: an item that
 * holds a needle of two or more units holds every pair of it, so the items holding all of the needle's
 * rarest pairs are a superset of the matches, each still checked by the caller.
 *
 * It is kept in segments of consecutive items (pairSegmenting.items each), each an index of its own
 * (SegmentPairs), so that a corpus rebuilt after writes that left its first items as they were (a bulk
 * create appends its new goods after the others) indexes only the segments after them and shares the
 * others with the corpus it replaces: no second copy of their postings, and no pass over their texts.
 */
export class PairIndex {
  private constructor(
    private readonly segments: readonly SegmentPairs[],
    /** The items of each segment (the last one fewer). */
    private readonly segmentItems: number,
    private readonly units: Uint8Array,
  ) {}

  /** Bytes the index holds. */
  get bytes(): number {
    let bytes = this.units.byteLength;
    for (const segment of this.segments) bytes += segment.bytes;
    return bytes;
  }

  /**
   * Indexes the items of `text`: each segment counts, then fills, in slices of `slice` items with
   * `pause()` awaited between them so that the event loop keeps running. The segments of `reuse` whose
   * items all lie among the first `reuseItems` (the same items, with the same texts, in `text`) are
   * taken as they are.
   */
  static async build(text: PagedText, slice: number, pause: () => Promise<boolean>, reuse?: PairIndex, reuseItems = 0): Promise<PairIndex | undefined> {
    const segmentItems = pairSegmenting.items;
    const segments: SegmentPairs[] = [];
    if (reuse && reuse.segmentItems === segmentItems) {
      const whole = Math.floor(Math.min(reuseItems, text.items) / segmentItems);
      segments.push(...reuse.segments.slice(0, whole));
    }
    for (let from = segments.length * segmentItems; from < text.items; from += segmentItems) {
      const segment = await SegmentPairs.build(text, from, Math.min(text.items, from + segmentItems), slice, pause);
      if (!segment) return undefined;
      segments.push(segment);
    }
    const units = new Uint8Array(65536);
    for (const segment of segments) segment.addUnits(units);
    return new PairIndex(segments, segmentItems, units);
  }

  /** Whether some item holds the code unit. */
  hasUnit(unit: number): boolean {
    return this.units[unit] === 1;
  }

  /**
   * The items that hold every pair of `needle` (two or more units), ascending, intersecting at most the
   * `lists` rarest pairs' lists of each segment (the caller checks every candidate anyway).
   */
  candidates(needle: string, lists = 3): Int32Array {
    const found: Int32Array[] = [];
    let total = 0;
    for (const segment of this.segments) {
      const items = segment.candidates(needle, lists);
      if (!items.length) continue;
      found.push(items);
      total += items.length;
    }
    if (found.length === 1) return found[0];
    const all = new Int32Array(total);
    let at = 0;
    for (const items of found) {
      all.set(items, at);
      at += items.length;
    }
    return all;
  }
}

/** The pair index of one segment of a corpus's items (see PairIndex): the items are numbered as in the corpus. */
class SegmentPairs {
  private keys: Uint32Array;
  private numbers: Int32Array;
  private mask: number;
  private shift: number;
  private pairs = 0;
  private offsets = new Int32Array(0);
  private postings = new Int32Array(0);
  private readonly units = new Uint8Array(65536);

  constructor() {
    this.keys = new Uint32Array(1 << 12);
    this.numbers = new Int32Array(1 << 12).fill(-1);
    this.mask = (1 << 12) - 1;
    this.shift = 20;
  }

  /** Bytes the index holds. */
  get bytes(): number {
    return this.keys.byteLength + this.numbers.byteLength + this.offsets.byteLength + this.postings.byteLength + this.units.byteLength;
  }

  /** Indexes items `first` to `stop` - 1 of `text`: counts, then fills, in slices (see PairIndex.build). */
  static async build(text: PagedText, first: number, stop: number, slice: number, pause: () => Promise<boolean>): Promise<SegmentPairs | undefined> {
    const index = new SegmentPairs();
    let counts: Int32Array = new Int32Array(1 << 12);
    let last: Int32Array = new Int32Array(1 << 12).fill(-1);
    for (let from = first; from < stop; from += slice) {
      for (let i = from; i < Math.min(stop, from + slice); i++) {
        const page = text.page(i);
        const end = text.end(i);
        for (let k = text.offset(i); k < end; k++) {
          const a = page.charCodeAt(k);
          index.units[a] = 1;
          if (k + 1 === end) break;
          const number = index.numberOf(((a << 16) | page.charCodeAt(k + 1)) >>> 0, true);
          if (number >= counts.length) {
            counts = grow(counts, 0);
            last = grow(last, -1);
          }
          if (last[number] !== i) {
            last[number] = i;
            counts[number]++;
          }
        }
      }
      if (!(await pause())) return undefined;
    }
    const offsets = new Int32Array(index.pairs + 1);
    for (let p = 0; p < index.pairs; p++) offsets[p + 1] = offsets[p] + counts[p];
    const postings = new Int32Array(offsets[index.pairs]);
    const fill = offsets.slice(0, index.pairs);
    last.fill(-1);
    for (let from = first; from < stop; from += slice) {
      for (let i = from; i < Math.min(stop, from + slice); i++) {
        const page = text.page(i);
        const end = text.end(i);
        for (let k = text.offset(i); k + 1 < end; k++) {
          const number = index.numberOf(((page.charCodeAt(k) << 16) | page.charCodeAt(k + 1)) >>> 0, false);
          if (last[number] !== i) {
            last[number] = i;
            postings[fill[number]++] = i;
          }
        }
      }
      if (!(await pause())) return undefined;
    }
    index.offsets = offsets;
    index.postings = postings;
    return index;
  }

  /** Marks in `units` the code units the segment's items hold. */
  addUnits(units: Uint8Array): void {
    for (let unit = 0; unit < units.length; unit++) units[unit] |= this.units[unit];
  }

  /** The segment's items that hold every pair of `needle`, ascending (see PairIndex#candidates). */
  candidates(needle: string, lists = 3): Int32Array {
    const found: Int32Array[] = [];
    for (let k = 0; k + 1 < needle.length; k++) {
      const number = this.numberOf(((needle.charCodeAt(k) << 16) | needle.charCodeAt(k + 1)) >>> 0, false);
      if (number < 0) return new Int32Array(0);
      found.push(this.postings.subarray(this.offsets[number], this.offsets[number + 1]));
    }
    found.sort((x, y) => x.length - y.length);
    let result = found[0];
    for (let l = 1; l < Math.min(lists, found.length) && result.length; l++) result = intersect(result, found[l]);
    return result;
  }

  /** The number of a pair (a new one when `add`), or -1. */
  private numberOf(key: number, add: boolean): number {
    let slot = Math.imul(key, 0x9e3779b1) >>> this.shift;
    for (;;) {
      const number = this.numbers[slot];
      if (number === -1) break;
      if (this.keys[slot] === key) return number;
      slot = (slot + 1) & this.mask;
    }
    if (!add) return -1;
    this.keys[slot] = key;
    this.numbers[slot] = this.pairs++;
    if (this.pairs * 2 > this.mask) this.rehash();
    return this.pairs - 1;
  }

  private rehash(): void {
    const { keys, numbers } = this;
    this.keys = new Uint32Array(keys.length * 2);
    this.numbers = new Int32Array(keys.length * 2).fill(-1);
    this.mask = keys.length * 2 - 1;
    this.shift -= 1;
    for (let s = 0; s < keys.length; s++) {
      if (numbers[s] === -1) continue;
      let slot = Math.imul(keys[s], 0x9e3779b1) >>> this.shift;
      while (this.numbers[slot] !== -1) slot = (slot + 1) & this.mask;
      this.keys[slot] = keys[s];
      this.numbers[slot] = numbers[s];
    }
  }
}

function grow(array: Int32Array, filler: number): Int32Array {
  const bigger = new Int32Array(array.length * 2).fill(filler);
  bigger.set(array);
  return bigger;
}

/** The values in both ascending lists. */
function intersect(x: Int32Array, y: Int32Array): Int32Array {
  const out = new Int32Array(Math.min(x.length, y.length));
  let n = 0;
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] < y[j]) i++;
    else if (x[i] > y[j]) j++;
    else {
      out[n++] = x[i];
      i++;
      j++;
    }
  }
  return out.subarray(0, n);
}
