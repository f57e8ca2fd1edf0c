import { createHash, Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import { StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { TimeSlicer } from '../common/util/time-slicer';
import { checkJsonShape, JsonShapeLimits, JsonTextScanner } from './json-shape';

/**
 * Large JSON bodies (a 10,000-element sync: about 2.4 MB in, 4 MB out) read and written in time slices.
 *
 * `JSON.parse` and `JSON.stringify` cannot be interrupted: on one such body each holds the event loop
 * for 15–40 ms, and with the text checks, the decoding and the ETag around them a sync call held it
 * twice for about 50 ms on a slow 2-core machine, every other customer's request and every live
 * viewer waiting meanwhile. Here a top-level array is cut at its own commas (found by the same byte scan
 * that checks the body's nesting and size) and parsed or serialised a group of elements at a time, with
 * the event loop free between groups. The result is exactly what the single call gives: the same value,
 * the same error for a malformed body, the same bytes and ETag for an answer.
 */

/** Bytes of text per JSON.parse or Buffer per JSON.stringify call: well under a millisecond each. */
const GROUP_BYTES = 64 * 1024;
/** Array elements serialised per JSON.stringify call. */
const GROUP_ELEMENTS = 100;
const JSON_TYPE = 'application/json; charset=utf-8';
/** Bytes the text scan covers between two looks at the clock. */
const SCAN_STEP = 256 * 1024;

/** body-parser's refusal for text that is not JSON (or, strict, not an object or an array at the top). */
export class JsonSyntaxError extends SyntaxError {
  readonly type = 'entity.parse.failed';
}

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * Parses a UTF-8 JSON body as body-parser's `json({ strict: true })` would, with checkJsonShape(limits)
 * run on the result: a leading BOM is dropped, an empty body is `{}`, anything but an object or an array
 * at the top is refused (JsonSyntaxError), and so is malformed text; a body nested too deep or holding too
 * many values is refused (JsonShapeError / ApiException) before it is parsed, by JsonTextScanner. A
 * top-level array is parsed in groups of elements, with `slicer` pausing between them; anything else in
 * one call.
 */
export async function parseJsonInSlices(body: Buffer, limits: JsonShapeLimits, slicer: TimeSlicer): Promise<unknown> {
  const from = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  if (body.length === from) return {};
  const scanner = new JsonTextScanner(limits, true);
  for (let at = from; at < body.length; at += SCAN_STEP) {
    scanner.scan(body, at, Math.min(body.length, at + SCAN_STEP));
    await slicer.pause();
  }
  let first = from;
  while (first < body.length && isSpace(body[first])) first += 1;
  if (body[first] !== 0x5b && body[first] !== 0x7b) throw new JsonSyntaxError('Unexpected token: the body is not a JSON object or array');
  if (body[first] !== 0x5b) {
    const value: unknown = parseText(textOf(body, from, body.length, scanner.longNumbers));
    checkJsonShape(value, limits);
    return value;
  }
  // An array: its elements start after `[` and after each top-level comma, and it ends at the `]` that
  // brings the depth back to 0, with nothing but white space after it.
  const close = scanner.closedAt;
  if (close < 0) throw new JsonSyntaxError('Unexpected end of JSON input');
  for (let i = close + 1; i < body.length; i += 1) if (!isSpace(body[i])) throw new JsonSyntaxError('Unexpected non-whitespace character after JSON');
  // (The scanner notes no comma after the array has closed.)
  const commas = scanner.topLevelCommas;
  const result: unknown[] = [];
  // `[]` (or `[ ]`) has no element; an empty element anywhere else is refused by JSON.parse.
  if (!commas.length && body.subarray(first + 1, close).every(isSpace)) return result;
  let counted = 0;
  let start = first + 1;
  let next = 0;
  while (start <= close) {
    // A group: whole elements up to about GROUP_BYTES, ending before a top-level comma or at `]`.
    let end = close;
    while (next < commas.length) {
      const comma = commas[next++];
      if (comma - start >= GROUP_BYTES) {
        end = comma;
        break;
      }
    }
    const part = parseText(`[${textOf(body, start, end, scanner.longNumbers)}]`) as unknown[];
    // The values of the groups so far, the array itself counted once.
    counted = checkJsonShape(part, limits, Math.max(0, counted - 1));
    for (const element of part) result.push(element);
    start = end + 1;
    await slicer.pause();
  }
  return result;
}

/**
 * The body's text from `start` to `end`, with each number in `long` (sorted, see
 * JsonTextScanner.longNumbers) written as a string of its digits: JSON.parse keeps a binary double of 15
 * significant digits exactly, and would round one with more (`123456789012.12345` would be read as
 * 123456789012.12344, `1000000000000.00005` as 1e12, under a price's limit). Read as text, such a number
 * is rounded on its decimal digits, as a price given as text is, and checked against the limits as sent.
 */
function textOf(body: Buffer, start: number, end: number, long: ReadonlyArray<[number, number]>): string {
  let at = start;
  let text = '';
  for (const [from, to] of long) {
    if (to <= start) continue;
    if (from >= end) break;
    text += `${body.toString('utf8', at, from)}"${body.toString('latin1', from, to)}"`;
    at = to;
  }
  return at === start ? body.toString('utf8', start, end) : text + body.toString('utf8', at, end);
}

function parseText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new JsonSyntaxError(err instanceof Error ? err.message : String(err));
  }
}

/** The weak ETag Express (the `etag` package) gives a body of `length` bytes whose SHA-1 `hash` has taken. */
export function weakEtag(hash: Hash, length: number): string {
  return `W/"${length.toString(16)}-${hash.digest('base64').substring(0, 27)}"`;
}

/** JSON as UTF-8 chunks, its length and the weak ETag Express would give it. */
export interface JsonBytes {
  chunks: Buffer[];
  length: number;
  etag: string;
}

/**
 * JSON text written a piece at a time, kept as UTF-8 chunks of about GROUP_BYTES (never one string or
 * Buffer of the whole), and hashed as the chunks are cut, for the weak ETag Express gives the whole.
 */
export class JsonChunks {
  private readonly chunks: Buffer[] = [];
  private readonly hash = createHash('sha1');
  private length = 0;
  private pending = '';

  write(text: string): void {
    this.pending += text;
    if (this.pending.length >= GROUP_BYTES) this.cut();
  }

  end(): JsonBytes {
    if (this.pending) this.cut();
    return { chunks: this.chunks, length: this.length, etag: weakEtag(this.hash, this.length) };
  }

  private cut(): void {
    const chunk = Buffer.from(this.pending);
    this.pending = '';
    this.chunks.push(chunk);
    this.hash.update(chunk);
    this.length += chunk.length;
  }
}

/**
 * Writes `JSON.stringify(value)` to `out` in time slices: a top-level array, or an array-valued property
 * of a top-level object, an element at a time (a group of up to GROUP_ELEMENTS small ones per
 * JSON.stringify call), with `slicer` pausing between them. (Anything else, and a value with its own
 * toJSON, in one call.)
 */
async function writeJsonInSlices(value: unknown, out: JsonChunks, slicer: TimeSlicer): Promise<void> {
  const array = async (items: unknown[]) => {
    out.write('[');
    let i = 0;
    while (i < items.length) {
      // A group of elements whose text stays near GROUP_BYTES: one element first (it may be 30 KB: a
      // goods item with its description), then as many more as the first one's size lets in.
      const first = JSON.stringify(items.slice(i, i + 1)).slice(1, -1);
      out.write(`${i ? ',' : ''}${first}`);
      i += 1;
      const more = Math.min(GROUP_ELEMENTS - 1, Math.floor(GROUP_BYTES / Math.max(1, first.length)), items.length - i);
      if (more > 0) {
        out.write(`,${JSON.stringify(items.slice(i, i + more)).slice(1, -1)}`);
        i += more;
      }
      if (slicer.due()) await slicer.yield();
    }
    out.write(']');
  };
  const hasToJson = (v: object) => typeof (v as { toJSON?: unknown }).toJSON === 'function';
  if (Array.isArray(value)) await array(value);
  else if (value === null || typeof value !== 'object' || hasToJson(value)) out.write(JSON.stringify(value) ?? '');
  else {
    let comma = '';
    out.write('{');
    for (const [key, item] of Object.entries(value)) {
      if (Array.isArray(item)) {
        out.write(`${comma}${JSON.stringify(key)}:`);
        await array(item);
      } else {
        const text = JSON.stringify(item);
        if (text === undefined) continue; // undefined, a function: JSON.stringify leaves the key out
        out.write(`${comma}${JSON.stringify(key)}:${text}`);
      }
      comma = ',';
    }
    out.write('}');
  }
}

/** The UTF-8 bytes of `JSON.stringify(value)`, as chunks of about GROUP_BYTES, built in time slices (writeJsonInSlices). */
export async function jsonChunksInSlices(value: unknown, slicer: TimeSlicer): Promise<Buffer[]> {
  const out = new JsonChunks();
  await writeJsonInSlices(value, out, slicer);
  return out.end().chunks;
}

/**
 * Serialises `body` (an object, its values JSON as `res.json` would send them) to the bytes
 * `JSON.stringify(body)` gives, in time slices (writeJsonInSlices), as chunks; and the weak ETag
 * Express would give them.
 */
export async function stringifyInSlices(body: Record<string, unknown>, slicer: TimeSlicer): Promise<JsonBytes> {
  const out = new JsonChunks();
  await writeJsonInSlices(body, out, slicer);
  return out.end();
}

/**
 * A large JSON answer for a route to return: serialised in slices (stringifyInSlices) and sent a chunk
 * at a time (jsonChunksAnswer: never one write of the whole body), with the ETag `res.json` would have
 * given it.
 */
export async function largeJsonAnswer(res: Response, body: object, slicer = new TimeSlicer()): Promise<StreamableFile | string> {
  return jsonChunksAnswer(res, await stringifyInSlices(body as Record<string, unknown>, slicer));
}

/**
 * JSON already in UTF-8 chunks, for a route to return: sent a chunk at a time as
 * `application/json; charset=utf-8` with its length and this ETag. A conditional GET or HEAD whose copy
 * is still current gets its 304 as from `res.json`: the answer is then an empty string, which Express
 * turns into the 304.
 */
export function jsonChunksAnswer(res: Response, { chunks, length, etag }: JsonBytes): StreamableFile | string {
  res.setHeader('ETag', etag);
  if (res.req?.fresh) {
    res.setHeader('Content-Type', JSON_TYPE);
    return '';
  }
  return new StreamableFile(Readable.from(chunks, { objectMode: false }), { type: JSON_TYPE, length });
}
