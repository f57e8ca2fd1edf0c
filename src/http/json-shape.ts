import { ApiException } from '../common/errors/api.exception';

/** How deep and how big a parsed request body may be before any validation looks at it. */
export interface JsonShapeLimits {
  /** Most levels of nested arrays and objects (the body itself is level 1). */
  maxDepth: number;
  /** Most values in the whole body: every object, array, string, number, boolean and null counts. */
  maxValues: number;
  /**
   * A bulk body (sync): each element of a top-level array, and a body that is not an array as a whole, may
   * hold at most `maxValues` values and `maxBytes` bytes of JSON text. Without it only the whole body is
   * bounded, and one element of the whole size would be parsed and walked in one go.
   */
  element?: { maxValues: number; maxBytes: number };
}

/**
 * Longest number (or run of bytes that reads as one: digits, signs, `.`, `e`) the text scan reads: a
 * price of 1e12 with its decimals is 20 characters; a run of 31 MB held the event loop for a second.
 */
export const MAX_NUMBER_CHARS = 1000;

/**
 * Walks a parsed body once, iteratively (no recursion, so no stack overflow whatever the nesting), and
 * refuses it as soon as it is nested deeper or holds more values than the route allows: 400 -510 for
 * depth, 413 -413 for size. Validation (class-transformer, class-validator) then only ever sees small,
 * shallow input, whose cost is linear in its size. `counted`: values already counted in earlier parts of
 * the same body (a top-level array checked a group of elements at a time); returns the count so far.
 */
export function checkJsonShape(body: unknown, limits: JsonShapeLimits, counted = 0): number {
  if (body === null || typeof body !== 'object') return counted + 1;
  const stack: Array<{ value: object; depth: number }> = [{ value: body, depth: 1 }];
  let values = counted + 1;
  while (stack.length) {
    const { value, depth } = stack.pop() as { value: object; depth: number };
    if (depth > limits.maxDepth) {
      throw ApiException.invalid(`The request body is nested deeper than ${limits.maxDepth} levels`, [
        { field: 'body', message: `must not be nested deeper than ${limits.maxDepth} levels` },
      ]);
    }
    const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
    values += children.length;
    if (values > limits.maxValues) {
      throw ApiException.tooLarge(`The request body holds more than ${limits.maxValues} values`);
    }
    for (const child of children) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
    }
  }
  return values;
}

/** Thrown by JsonTextScanner; `type` tells BodyParserGuard which refusal it is. */
export class JsonShapeError extends Error {
  constructor(
    readonly type: 'entity.too.deep' | 'entity.too.many.values' | 'entity.element.too.large' | 'entity.number.too.long',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Significant digits every decimal of which a binary double gives back (DBL_DIG): a JSON number with
 * more may come out of JSON.parse rounded.
 */
export const LONG_NUMBER_DIGITS = 15;
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * The same limits as checkJsonShape, checked on the raw UTF-8 text before it is parsed: one pass over
 * the bytes (strings skipped), stopping at the first bracket too deep or the first value too many. An
 * array bomb (`[[],[],…]`, millions of arrays in a few MB) would cost JSON.parse long event-loop stalls and
 * much memory; refused here, it costs one pass over the bytes (`npm run bench:abuse`). Counts containers
 * and separators, which is within one of checkJsonShape's count per container.
 *
 * Resumable: `scan` covers the bytes from where the last call stopped up to `to`, so that a large body can
 * be checked in time slices (one scanner per text: it remembers where the
 * text's next backslash and quote are). With `recordTopLevel` it also notes where a
 * top-level array's elements are separated (`topLevelCommas`) and where it closes (`closedAt`), so that
 * the array can be parsed a group of elements at a time (see sliced-json.ts).
 */
export class JsonTextScanner {
  private depth = 0;
  private values = 1;
  private inString = false;
  private next = 0;
  /**
   * The first backslash, and the first quote, at or after the scan's last look for one (Infinity: none
   * left in the text): each search starts past the last one found, so that a string of many escapes
   * costs one pass, not a search to its end per escape.
   */
  private backslashAt = -1;
  private quoteAt = -1;
  /** Offsets of the commas between the top-level array's elements (depth 1, outside strings). */
  readonly topLevelCommas: number[] = [];
  /** Offset of the bracket that first brought the depth back to 0; -1 while it has not. */
  closedAt = -1;
  /**
   * [start, end) of each number outside strings with more digits than a binary double keeps
   * (LONG_NUMBER_DIGITS): JSON.parse would round it (`123456789012.12345` becomes 123456789012.12344),
   * so the text is parsed with such numbers read as their own digits (see sliced-json.ts).
   */
  readonly longNumbers: Array<[number, number]> = [];
  /** With limits.element: where the current element (or the whole body, not an array) starts; -1 before it does. */
  private elementStart = -1;
  /** With limits.element: the value count when it started. */
  private elementValues = 0;
  /** The body is a top-level array (its elements are bounded one by one), not an object. */
  private topArray = false;

  constructor(
    private readonly limits: JsonShapeLimits,
    private readonly recordTopLevel = false,
  ) {}

  scan(text: Uint8Array, from: number, to: number): void {
    const { maxDepth, maxValues, element } = this.limits;
    let { depth, values, inString } = this;
    let i = Math.max(from, this.next);
    // A Buffer view (no copy) for its native indexOf.
    const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
    try {
      for (; i < to; i += 1) {
        if (inString) {
          // The string's end: its next quote that no backslash escapes. Found with Buffer's native
          // byte search (most of a body is string contents) rather than a look at every byte.
          const end = this.stringEnd(bytes, i, to);
          if (end < 0) {
            i = -end - 1; // the next scan resumes in the string there (past an escape at the boundary)
            break;
          }
          inString = false;
          i = end;
          continue;
        }
        const c = text[i];
        if (c === 0x22) inString = true;
        else if (c === 0x5b || c === 0x7b) {
          if (depth === 0 && element && this.elementStart < 0) {
            this.topArray = c === 0x5b;
            this.elementStart = this.topArray ? i + 1 : i;
            this.elementValues = this.topArray ? values + 1 : values;
          }
          depth += 1;
          if (depth > maxDepth) throw new JsonShapeError('entity.too.deep', `The request body is nested deeper than ${maxDepth} levels`);
          values += 1;
          if (values > maxValues) throw new JsonShapeError('entity.too.many.values', `The request body holds more than ${maxValues} values`);
          if (element && values - this.elementValues > element.maxValues && this.closedAt < 0) this.tooManyInElement(element.maxValues);
        } else if (c === 0x5d || c === 0x7d) {
          depth -= 1;
          if (depth === 0 && this.closedAt < 0) {
            this.closedAt = i;
            if (element) this.checkElementBytes(i, element.maxBytes);
          }
        } else if (c === 0x2c) {
          values += 1;
          if (values > maxValues) throw new JsonShapeError('entity.too.many.values', `The request body holds more than ${maxValues} values`);
          if (depth === 1 && this.recordTopLevel && this.closedAt < 0) this.topLevelCommas.push(i);
          if (element && this.closedAt < 0) {
            if (depth === 1 && this.topArray) {
              // The next element starts.
              this.checkElementBytes(i, element.maxBytes);
              this.elementStart = i + 1;
              this.elementValues = values;
            } else if (values - this.elementValues > element.maxValues) this.tooManyInElement(element.maxValues);
          }
        } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
          // A number: read to its end (past `to` if it runs on: the whole text is at hand), at most MAX_NUMBER_CHARS.
          i = this.number(bytes, i) - 1;
        }
      }
      // An element that goes on past this part is refused as soon as it is over its size, not at its end.
      if (element && this.elementStart >= 0 && this.closedAt < 0) this.checkElementBytes(i, element.maxBytes);
    } finally {
      this.depth = depth;
      this.values = values;
      this.inString = inString;
      this.next = i;
    }
  }

  /** What limits.element bounds, as a refusal names it. */
  private get element(): string {
    return this.topArray ? 'An element of the request body' : 'A request body that is not a JSON array';
  }

  private tooManyInElement(max: number): never {
    throw new JsonShapeError('entity.too.many.values', `${this.element} holds more than ${max} values`);
  }

  /** Refuses the element (or the body, not an array) that started at elementStart when it is over `max` bytes by `at`. */
  private checkElementBytes(at: number, max: number): void {
    if (at - this.elementStart <= max) return;
    throw new JsonShapeError('entity.element.too.large', `${this.element} is over ${Math.floor(max / 1024)} KB of JSON text`);
  }

  /** The end of the number (or number-like run of bytes) at `from`; notes it in longNumbers when long. */
  private number(text: Buffer, from: number): number {
    let significant = 0;
    let mantissa = true;
    let i = from;
    const last = Math.min(text.length, from + MAX_NUMBER_CHARS + 1);
    for (; i < last; i += 1) {
      const c = text[i];
      if (c >= 0x30 && c <= 0x39) {
        if (mantissa && (significant > 0 || c !== 0x30)) significant += 1;
      } else if (c === 0x65 || c === 0x45) mantissa = false;
      else if (c !== 0x2e && c !== 0x2d && c !== 0x2b) break;
    }
    if (i - from > MAX_NUMBER_CHARS) {
      throw new JsonShapeError('entity.number.too.long', `The request body holds a number longer than ${MAX_NUMBER_CHARS} characters`);
    }
    // Only a well-formed JSON number: anything else is left for JSON.parse to refuse.
    if (significant > LONG_NUMBER_DIGITS && JSON_NUMBER.test(text.toString('latin1', from, i))) this.longNumbers.push([from, i]);
    return i;
  }

  /**
   * In a string at `from`: the offset of its closing quote before `to`; or, when it does not close
   * there, -(offset + 1) of where scanning resumes (`to`, or just past an escaped character that lies
   * beyond `to`). The closing quote is found with Buffer's native indexOf, unless a backslash comes
   * first: a string with escapes is read a byte at a time from there to its end (a search per escape
   * would cost more than reading the bytes).
   */
  private stringEnd(text: Buffer, from: number, to: number): number {
    if (this.backslashAt < from) {
      const found = text.indexOf(0x5c, from);
      this.backslashAt = found < 0 ? Infinity : found;
    }
    if (this.quoteAt < from) {
      const found = text.indexOf(0x22, from);
      this.quoteAt = found < 0 ? Infinity : found;
    }
    if (this.quoteAt < this.backslashAt) return this.quoteAt < to ? this.quoteAt : -(to + 1);
    let i = Math.min(this.backslashAt, to);
    for (; i < to; i += 1) {
      const c = text[i];
      if (c === 0x5c) i += 1;
      else if (c === 0x22) return i;
    }
    return -(i + 1);
  }
}
