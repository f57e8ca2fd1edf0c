import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { Entry, fromBufferPromise, openPromise, ZipFile } from 'yauzl';
import { SheetError } from './sheet-error';

export interface ArchiveLimits {
  /** Most bytes all entries of the zip may decompress to, declared and actual. */
  maxUncompressedBytes: number;
}

/** The parts of the workbook the sheet reader needs, under the names exceljs's WorkbookReader expects. */
const SHARED_STRINGS = 'xl/sharedStrings.xml';
const STYLES = 'xl/styles.xml';
const SHEET = 'xl/worksheets/sheet1.xml';
const SHEET_RELS = 'xl/worksheets/_rels/sheet1.xml.rels';

const MAX_ENTRIES = 100_000;
/** workbook.xml and its rels are a few kB in practice. */
const MAX_INDEX_BYTES = 8 * 1024 * 1024;
/** styles.xml only tells which cells are percentages; a bloated one is skipped, not refused. */
const MAX_STYLES_BYTES = 16 * 1024 * 1024;

const mb = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`;

interface Part {
  name: string;
  entry: Entry;
}

/**
 * An .xlsx upload checked before any XML is parsed: the central directory read (a truncated or
 * non-zip file fails here), the declared decompressed size of all entries summed and capped, the
 * workbook and its first sheet located. `stream()` then produces a minimal zip for exceljs with only
 * the parts the reader needs, stored uncompressed and fed from yauzl's size-checked inflater: an
 * entry that inflates to more than it declares, or data hidden outside the central directory, never
 * reaches the XML parser, and every byte that does is counted against the cap again.
 */
export class XlsxArchive {
  private failure?: SheetError;
  private readonly failureListeners: Array<(err: Error) => void> = [];

  private constructor(
    private readonly zip: ZipFile,
    private readonly parts: Part[],
    private readonly limits: ArchiveLimits,
    /** Name of the first sheet's part in the upload (for messages). */
    readonly sheetPath: string,
    /** The workbook counts dates from 1904 (old Mac Excel). */
    readonly date1904: boolean,
  ) {}

  /** `source`: the upload in memory, or the path of a stored upload (read in place, never loaded whole). */
  static async open(source: Buffer | string, limits: ArchiveLimits): Promise<XlsxArchive> {
    let zip: ZipFile;
    try {
      const options = { lazyEntries: true, validateEntrySizes: true, strictFileNames: false };
      zip = typeof source === 'string' ? await openPromise(source, { ...options, autoClose: false }) : await fromBufferPromise(source, options);
    } catch (err) {
      throw SheetError.unsupported(`The file is not a readable .xlsx workbook (${reason(err)})`);
    }
    try {
      return await XlsxArchive.inspect(zip, limits);
    } catch (err) {
      zip.close();
      if (err instanceof SheetError) throw err;
      throw SheetError.unsupported(`The file is not a readable .xlsx workbook (${reason(err)})`);
    }
  }

  private static async inspect(zip: ZipFile, limits: ArchiveLimits): Promise<XlsxArchive> {
    if (zip.entryCount > MAX_ENTRIES) {
      throw SheetError.unsupported(`The zip archive holds ${zip.entryCount} entries; an .xlsx workbook has a few dozen`);
    }
    const entries = new Map<string, Entry>();
    let declared = 0;
    for await (const entry of zip.eachEntry()) {
      declared += entry.uncompressedSize;
      if (declared > limits.maxUncompressedBytes) {
        throw SheetError.tooLarge(
          `The workbook decompresses to more than ${mb(limits.maxUncompressedBytes)} (entry ${entry.fileName} alone ` +
            `declares ${mb(entry.uncompressedSize)}); refused as a possible zip bomb`,
        );
      }
      // Part names are case-insensitive in OOXML.
      entries.set(entry.fileName.replace(/^\/+/, '').toLowerCase(), entry);
    }

    const workbook = entries.get('xl/workbook.xml');
    if (!workbook) {
      throw SheetError.unsupported('The zip archive has no workbook (xl/workbook.xml): it is not an .xlsx spreadsheet');
    }
    const relsEntry = entries.get('xl/_rels/workbook.xml.rels');
    const workbookXml = await readText(zip, workbook, MAX_INDEX_BYTES);
    const relsXml = relsEntry ? await readText(zip, relsEntry, MAX_INDEX_BYTES) : '';
    const sheetPath = firstSheetPath(workbookXml, relsXml) ?? (entries.has(SHEET) ? SHEET : undefined);
    const sheet = sheetPath ? entries.get(sheetPath.toLowerCase()) : undefined;
    if (!sheetPath || !sheet) {
      throw SheetError.unsupported(sheetPath ? `The workbook's first sheet (${sheetPath}) is missing from the file` : 'The workbook has no worksheet');
    }

    const parts: Part[] = [];
    const sharedStrings = entries.get(SHARED_STRINGS.toLowerCase());
    if (sharedStrings) parts.push({ name: SHARED_STRINGS, entry: sharedStrings });
    const styles = entries.get(STYLES.toLowerCase());
    if (styles && styles.uncompressedSize <= MAX_STYLES_BYTES) parts.push({ name: STYLES, entry: styles });
    const sheetRels = entries.get(relsPathOf(sheetPath).toLowerCase());
    if (sheetRels) parts.push({ name: SHEET_RELS, entry: sheetRels });
    parts.push({ name: SHEET, entry: sheet });
    for (const part of parts) {
      if (!part.entry.canDecodeFileData()) {
        throw SheetError.unsupported(
          part.entry.isEncrypted()
            ? 'The workbook is encrypted; save it without a password'
            : `The workbook part ${part.entry.fileName} uses an unsupported compression method (${part.entry.compressionMethod})`,
        );
      }
    }
    return new XlsxArchive(zip, parts, limits, sheetPath, uses1904Dates(workbookXml));
  }

  /** Called once when streaming the parts fails (a lying entry size, a corrupt deflate stream, the cap). */
  onFailure(listener: (err: Error) => void): void {
    if (this.failure) listener(this.failure);
    else this.failureListeners.push(listener);
  }

  /**
   * The minimal zip exceljs reads: shared strings, styles and the sheet's rels before the sheet itself.
   * `pace` is awaited before each chunk (the caller's deadline and event-loop breathing).
   */
  stream(pace: () => Promise<void> = () => Promise.resolve()): Readable {
    const stream = Readable.from(this.generate(pace), { objectMode: false, highWaterMark: 64 * 1024 });
    stream.on('error', (err) => this.fail(err));
    return stream;
  }

  /**
   * The first sheet's XML alone, inflated and counted against the cap like `stream()`'s (for a survey
   * that needs neither the shared strings nor the styles). Failures are SheetErrors.
   */
  async *sheetXml(pace: () => Promise<void> = () => Promise.resolve()): AsyncGenerator<Buffer> {
    const sheet = this.parts[this.parts.length - 1].entry;
    let data;
    try {
      data = await this.zip.openReadStreamPromise(sheet);
    } catch (err) {
      throw this.fail(err instanceof Error ? err : new Error(String(err)));
    }
    try {
      yield* this.inflated(data, { bytes: 0 }, pace);
    } catch (err) {
      if (err instanceof SheetError) throw err;
      throw this.fail(err instanceof Error ? err : new Error(String(err)));
    } finally {
      data.destroy();
    }
  }

  close(): void {
    this.zip.close();
  }

  /** Records the first failure (as a SheetError) and tells the listeners; returns the failure recorded. */
  private fail(err: Error): SheetError {
    if (this.failure) return this.failure;
    if (err instanceof SheetError) this.failure = err;
    else if (/too many bytes/.test(err.message)) {
      this.failure = SheetError.tooLarge(`A workbook part decompresses to more than it declares (${reason(err)}); refused as a possible zip bomb`);
    } else this.failure = SheetError.unsupported(`The workbook is corrupt (${reason(err)})`);
    for (const listener of this.failureListeners.splice(0)) listener(this.failure);
    return this.failure;
  }

  /** A part's decompressed chunks, added to `counted.bytes`; past the workbook's limit, a SheetError. */
  private async *inflated(data: NodeJS.ReadableStream, counted: { bytes: number }, pace: () => Promise<void>): AsyncGenerator<Buffer> {
    for await (const chunk of data as AsyncIterable<Buffer>) {
      counted.bytes += chunk.length;
      if (counted.bytes > this.limits.maxUncompressedBytes) {
        throw SheetError.tooLarge(`The workbook decompresses to more than ${mb(this.limits.maxUncompressedBytes)}; refused as a possible zip bomb`);
      }
      await pace();
      yield chunk;
    }
  }

  private async *generate(pace: () => Promise<void>): AsyncGenerator<Buffer> {
    const counted = { bytes: 0 };
    for (const part of this.parts) {
      yield localFileHeader(part.name, part.entry);
      const data = await this.zip.openReadStreamPromise(part.entry);
      try {
        yield* this.inflated(data, counted, pace);
      } finally {
        data.destroy();
      }
    }
    yield endOfCentralDirectory();
  }
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function readText(zip: ZipFile, entry: Entry, max: number): Promise<string> {
  if (entry.uncompressedSize > max) {
    throw SheetError.tooLarge(`The workbook part ${entry.fileName} declares ${mb(entry.uncompressedSize)}; refused`);
  }
  if (!entry.canDecodeFileData()) throw SheetError.unsupported('The workbook is encrypted; save it without a password');
  const stream = await zip.openReadStreamPromise(entry);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** A stored (method 0) local file header with the sizes and CRC the central directory declares. */
function localFileHeader(name: string, entry: Entry): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4); // version needed to extract
  header.writeUInt16LE(0x0800, 6); // UTF-8 name
  header.writeUInt16LE(0, 8); // stored
  header.writeUInt16LE(0, 10); // time
  header.writeUInt16LE(0x21, 12); // date: 1980-01-01
  header.writeUInt32LE(entry.crc32 >>> 0, 14);
  header.writeUInt32LE(entry.uncompressedSize, 18);
  header.writeUInt32LE(entry.uncompressedSize, 22);
  header.writeUInt16LE(nameBytes.length, 26);
  header.writeUInt16LE(0, 28);
  return Buffer.concat([header, nameBytes]);
}

/** An empty end-of-central-directory record: the sequential reader stops cleanly on it. */
function endOfCentralDirectory(): Buffer {
  const record = Buffer.alloc(22);
  record.writeUInt32LE(0x06054b50, 0);
  return record;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeXml(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (whole, e: string) => {
    if (e[0] !== '#') return XML_ENTITIES[e.toLowerCase()] ?? '';
    const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    // A reference to no character (past U+10FFFF) is left as written.
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** One tag of an XML text: its name without a namespace prefix, whether it closes, and the text after its name. */
interface XmlTag {
  local: string;
  closing: boolean;
  rest: string;
}

const NAME_CHAR = /[\w.:-]/;

/**
 * The tags of `xml` in order, read by one pass of indexOf (workbook.xml and its rels hold up to
 * MAX_INDEX_BYTES of what a client sent: a regular expression over them, `<x\b[^>]*>` tried at each
 * `<` of `<x <x <x…` with no `>`, took seconds of the main thread for a 2 KB upload). A tag without its
 * `>` ends the reading.
 */
function* xmlTags(xml: string): Generator<XmlTag> {
  let at = xml.indexOf('<');
  while (at >= 0) {
    const end = xml.indexOf('>', at + 1);
    if (end < 0) return;
    const closing = xml[at + 1] === '/';
    let nameEnd = closing ? at + 2 : at + 1;
    while (nameEnd < end && NAME_CHAR.test(xml[nameEnd])) nameEnd += 1;
    const name = xml.slice(closing ? at + 2 : at + 1, nameEnd);
    yield { local: name.slice(name.lastIndexOf(':') + 1), closing, rest: xml.slice(nameEnd, end) };
    at = xml.indexOf('<', end + 1);
  }
}

/** The attributes of a tag (the text after its name), in one pass: `name="value"` or `name='value'`, entities decoded. */
function attributesOf(text: string): Map<string, string> {
  const attributes = new Map<string, string>();
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) break;
    let nameEnd = eq;
    while (nameEnd > i && /\s/.test(text[nameEnd - 1])) nameEnd -= 1;
    let nameStart = nameEnd;
    while (nameStart > i && NAME_CHAR.test(text[nameStart - 1])) nameStart -= 1;
    let q = eq + 1;
    while (q < text.length && /\s/.test(text[q])) q += 1;
    const quote = text[q];
    if (quote !== '"' && quote !== "'") {
      i = eq + 1;
      continue;
    }
    const close = text.indexOf(quote, q + 1);
    if (close < 0) break;
    if (nameStart < nameEnd) attributes.set(text.slice(nameStart, nameEnd), decodeXml(text.slice(q + 1, close)));
    i = close + 1;
  }
  return attributes;
}

/**
 * The part name of the workbook's first sheet (in tab order): the first `<sheet>` inside `<sheets>` of
 * workbook.xml, whose relationship id the workbook's rels resolve to a target under xl/.
 */
export function firstSheetPath(workbookXml: string, relsXml: string): string | undefined {
  let inSheets = false;
  let firstSheet: XmlTag | undefined;
  for (const tag of xmlTags(workbookXml)) {
    if (tag.local === 'sheets') {
      if (tag.closing) break;
      inSheets = true;
    } else if (inSheets && tag.local === 'sheet' && !tag.closing) {
      firstSheet = tag;
      break;
    }
  }
  if (!firstSheet) return undefined;
  const relId = [...attributesOf(firstSheet.rest)].find(([name]) => name.endsWith(':id'))?.[1];
  if (!relId) return undefined;
  for (const tag of xmlTags(relsXml)) {
    if (tag.local !== 'Relationship' || tag.closing) continue;
    const attributes = attributesOf(tag.rest);
    if (attributes.get('Id') !== relId) continue;
    const target = attributes.get('Target');
    if (!target) return undefined;
    return target.startsWith('/') ? posix.normalize(target.slice(1)) : posix.normalize(posix.join('xl', target));
  }
  return undefined;
}

function uses1904Dates(workbookXml: string): boolean {
  for (const tag of xmlTags(workbookXml)) {
    if (tag.local !== 'workbookPr' || tag.closing) continue;
    const value = attributesOf(tag.rest).get('date1904');
    return value === '1' || value === 'true';
  }
  return false;
}

/** xl/worksheets/sheet1.xml → xl/worksheets/_rels/sheet1.xml.rels */
function relsPathOf(partPath: string): string {
  return posix.join(posix.dirname(partPath), '_rels', `${posix.basename(partPath)}.rels`);
}
