import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { unquoteCsvText } from './csv-text';
import { ReadGuard } from './read-guard';
import { SheetError } from './sheet-error';
import { columnName, RawCell, RawSheetEvent } from './sheet-rows';
import { overlongCell } from './xlsx-rows';
import { MAX_CELL_CHARS, MAX_COLUMNS } from './xlsx-xml-guard';

/** Longest record (one row, all its cells) a CSV may have: far over 10 fields at their limits. */
const MAX_RECORD_CHARS = 1024 * 1024;
/** Bytes of the header line looked at to find the delimiter. */
const HEADER_SCAN = 64 * 1024;
/** Bytes handed to csv-parse at a time (see slices()). */
const SLICE = 256;

/**
 * The upload as UTF-8 bytes without a byte order mark. UTF-8 (with or without BOM) is the format;
 * UTF-16 with a BOM (Excel's "Unicode text") and CP949/EUC-KR (Excel's plain "CSV" on Korean Windows)
 * are converted. Anything else (binary data, other encodings) is refused.
 */
export function csvAsUtf8(buffer: Buffer): Buffer {
  if (buffer[0] === 0xff && buffer[1] === 0xfe) return Buffer.from(new TextDecoder('utf-16le').decode(buffer.subarray(2)), 'utf8');
  if (buffer[0] === 0xfe && buffer[1] === 0xff) return Buffer.from(new TextDecoder('utf-16be').decode(buffer.subarray(2)), 'utf8');
  const bytes = buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf ? buffer.subarray(3) : buffer;
  if (bytes.includes(0)) throw SheetError.unsupported('The file holds binary data: it is not a CSV text file');
  if (isUtf8(bytes)) return bytes;
  try {
    return Buffer.from(new TextDecoder('euc-kr', { fatal: true }).decode(bytes), 'utf8');
  } catch {
    throw SheetError.unsupported('The CSV file is not UTF-8 text (nor CP949/EUC-KR); save it as "CSV UTF-8"');
  }
}

/** The delimiter of the header line: the most frequent of comma, semicolon and tab outside quotes. */
export function detectDelimiter(bytes: Buffer): string {
  const counts = new Map<string, number>([
    [',', 0],
    [';', 0],
    ['\t', 0],
  ]);
  let quoted = false;
  for (let i = 0; i < Math.min(bytes.length, HEADER_SCAN); i++) {
    const ch = String.fromCharCode(bytes[i]);
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\n' || ch === '\r')) break;
    else if (!quoted && counts.has(ch)) counts.set(ch, (counts.get(ch) as number) + 1);
  }
  let best = ',';
  for (const [delimiter, n] of counts) if (n > (counts.get(best) as number)) best = delimiter;
  return best;
}

/**
 * The bytes in small slices, pausing for the event loop between them (a long quoted cell spans many
 * slices without a record). csv-parse turns one slice into records in one go, and a record whose
 * field count differs from the header's is expensive for it (it builds an Error with a stack trace even
 * under relax_column_count), so a large slice of empty lines would hold the event loop for long; small
 * slices keep each step short (`npm run bench:abuse` measures it).
 */
async function* slices(bytes: Buffer, guard: ReadGuard): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += SLICE) {
    await guard.breathe();
    yield bytes.subarray(i, i + SLICE);
  }
}

/** A stored CSV upload's encoding, told from its byte order mark or (a pass over the file) its bytes. */
interface FileEncoding {
  encoding: 'utf-8' | 'utf-16le' | 'utf-16be' | 'euc-kr';
  /** Bytes of the byte order mark. */
  skip: number;
}

async function fileEncoding(path: string, guard: ReadGuard): Promise<FileEncoding> {
  const handle = await open(path, 'r');
  const head = Buffer.alloc(3);
  try {
    await handle.read(head, 0, 3, 0);
  } finally {
    await handle.close();
  }
  if (head[0] === 0xff && head[1] === 0xfe) return { encoding: 'utf-16le', skip: 2 };
  if (head[0] === 0xfe && head[1] === 0xff) return { encoding: 'utf-16be', skip: 2 };
  const skip = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let valid = true;
  for await (const chunk of createReadStream(path, { start: skip, highWaterMark: 64 * 1024 }) as AsyncIterable<Buffer>) {
    guard.check();
    if (chunk.includes(0)) throw SheetError.unsupported('The file holds binary data: it is not a CSV text file');
    if (valid) {
      try {
        utf8.decode(chunk, { stream: true });
      } catch {
        valid = false;
      }
    }
    await guard.breathe();
  }
  if (valid) {
    try {
      utf8.decode();
    } catch {
      valid = false;
    }
  }
  return { encoding: valid ? 'utf-8' : 'euc-kr', skip };
}

/** A stored CSV upload as UTF-8 bytes in small slices (see slices()), decoded as it is read. */
async function* fileSlices(path: string, { encoding, skip }: FileEncoding, guard: ReadGuard): AsyncGenerator<Buffer> {
  const decoder = encoding === 'utf-8' ? null : new TextDecoder(encoding, { fatal: encoding === 'euc-kr' });
  const decode = (chunk?: Buffer): Buffer => {
    if (!decoder) return chunk ?? Buffer.alloc(0);
    try {
      return Buffer.from(chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode(), 'utf8');
    } catch {
      throw SheetError.unsupported('The CSV file is not UTF-8 text (nor CP949/EUC-KR); save it as "CSV UTF-8"');
    }
  };
  for await (const chunk of createReadStream(path, { start: skip, highWaterMark: 64 * 1024 }) as AsyncIterable<Buffer>) {
    const bytes = decoder ? decode(chunk) : chunk;
    for (let i = 0; i < bytes.length; i += SLICE) {
      await guard.breathe();
      yield bytes.subarray(i, i + SLICE);
    }
  }
  if (decoder) {
    const rest = decode();
    if (rest.length) yield rest;
  }
}

/** The first bytes of a stored CSV upload as UTF-8 (to find its delimiter). */
async function fileHead(path: string, encoding: FileEncoding, guard: ReadGuard): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const slice of fileSlices(path, encoding, guard)) {
    parts.push(slice);
    size += slice.length;
    if (size >= HEADER_SCAN) break;
  }
  return Buffer.concat(parts);
}

/**
 * Streams the records of a CSV upload (csv-parse: quoted cells may hold delimiters, quotes and line
 * breaks): `source` is the upload in memory, or the path of a stored upload (read as a stream).
 */
export async function* readCsvRows(source: Buffer | string, guard: ReadGuard): AsyncGenerator<RawSheetEvent> {
  if (typeof source !== 'string') {
    const bytes = csvAsUtf8(source);
    yield* readCsvStream(detectDelimiter(bytes), slices(bytes, guard), guard);
    return;
  }
  const encoding = await fileEncoding(source, guard);
  const delimiter = detectDelimiter(await fileHead(source, encoding, guard));
  yield* readCsvStream(delimiter, fileSlices(source, encoding, guard), guard);
}

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts the cells of each CSV record in the bytes on their way to csv-parse, and refuses (413) the first
 * record of more than MAX_COLUMNS (16,384, columns A to XFD) before csv-parse has seen more of it:
 * csv-parse builds a record whole (an array of its cells, copied again into an error object when its
 * cell count differs from the header's), so a 1 MB record of a million empty cells held the event loop
 * for 150-260 ms. Quotes are read as csv-parse reads them (relax_quotes: a quote opens a quoted cell only
 * at a cell's start; `""` inside one is a quote); a line break outside quotes ends a record (CRLF one).
 */
export class CsvRecordWidth {
  private cells = 1;
  private row = 1;
  private atCellStart = true;
  private quoted = false;
  /** In a quoted cell, after a quote that may close it or be the first of `""`. */
  private quoteSeen = false;
  private afterCr = false;
  private readonly delimiter: number;

  constructor(delimiter: string) {
    this.delimiter = delimiter.charCodeAt(0);
  }

  check(bytes: Buffer): void {
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i];
      if (this.quoted) {
        if (c === QUOTE) {
          this.quoteSeen = !this.quoteSeen;
          continue;
        }
        if (!this.quoteSeen) continue;
        this.quoted = false;
        this.quoteSeen = false;
      }
      const afterCr = this.afterCr;
      this.afterCr = c === CR;
      if (c === this.delimiter) {
        this.atCellStart = true;
        if (++this.cells > MAX_COLUMNS) {
          throw SheetError.tooLarge(
            `Row ${this.row.toLocaleString('en-US')} of the CSV file has more than ${MAX_COLUMNS.toLocaleString('en-US')} cells, ` +
              'the most columns (A to XFD) a spreadsheet has; refused',
          );
        }
      } else if (c === LF || c === CR) {
        if (!(c === LF && afterCr)) this.row += 1;
        this.cells = 1;
        this.atCellStart = true;
      } else {
        if (c === QUOTE && this.atCellStart) this.quoted = true;
        this.atCellStart = false;
      }
    }
  }
}

/** The bytes, each slice's records counted first (see CsvRecordWidth). */
async function* widthChecked(input: AsyncGenerator<Buffer>, delimiter: string): AsyncGenerator<Buffer> {
  const width = new CsvRecordWidth(delimiter);
  for await (const bytes of input) {
    width.check(bytes);
    yield bytes;
  }
}

/**
 * The records of UTF-8 input. A record's row number is its position, header = 1, as a spreadsheet shows
 * the file: a cell with a line break stays in one row, an empty line is a (blank) row.
 */
async function* readCsvStream(delimiter: string, input: AsyncGenerator<Buffer>, guard: ReadGuard): AsyncGenerator<RawSheetEvent> {
  const parser = parse({
    delimiter,
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: false,
    max_record_size: MAX_RECORD_CHARS,
  });
  const source = Readable.from(widthChecked(input, delimiter), { objectMode: false });
  source.on('error', (err) => guard.abort(err));
  source.pipe(parser);
  const records = parser[Symbol.asyncIterator]() as AsyncIterator<string[]>;
  let row = 0;
  try {
    for (;;) {
      const step = await guard.race(records.next());
      if (step.done) break;
      row += 1;
      // A quote before a formula start is the export's neutralisation (csv-text.ts): taken off again.
      // A cell as long as no spreadsheet holds refuses the file, as in an .xlsx (its FAIL row would echo it).
      const long = step.value.findIndex((value) => value.length > MAX_CELL_CHARS);
      if (long >= 0) throw overlongCell(`${columnName(long)}${row}`, step.value[long].length);
      const cells: Array<RawCell | undefined> = step.value.map((value) => (value === '' ? undefined : { value: unquoteCsvText(value) }));
      yield { kind: 'row', row: { row, cells } };
      await guard.breathe();
    }
  } catch (err) {
    // A record past MAX_RECORD_CHARS holds a cell longer than any spreadsheet cell (or ten near it): as an
    // over-long cell, 413, not the parser's words.
    if (err instanceof CsvError && err.code === 'CSV_MAX_RECORD_SIZE') {
      throw SheetError.tooLarge(
        `Row ${row + 1} holds more than ${MAX_RECORD_CHARS.toLocaleString('en-US')} characters (a cell holds at most ${MAX_CELL_CHARS.toLocaleString('en-US')}, the most an Excel cell holds); refused`,
      );
    }
    if (err instanceof CsvError) throw SheetError.unsupported(`The CSV file is malformed: ${err.message}`);
    throw err;
  } finally {
    source.destroy();
    parser.destroy();
  }
}
