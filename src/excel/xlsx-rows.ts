import { StringDecoder } from 'node:string_decoder';
import { Readable } from 'node:stream';
import type * as ExcelJS from 'exceljs';
import { ReadGuard } from './read-guard';
import { SheetError } from './sheet-error';
import { columnIndex, columnName, HyperlinkRange, RawCell, RawSheetEvent } from './sheet-rows';
import { ArchiveLimits, XlsxArchive } from './xlsx-archive';
import { decodeXlsxText } from './xlsx-text';
import { guardedXml, MAX_CELL_CHARS } from './xlsx-xml-guard';
import { GoodsLimits } from '../goods/goods.limits';

/** Distinct strings a workbook may hold (a 10,000-row sheet of 10 text columns needs 100,000). */
export const MAX_SHARED_STRINGS = 1_000_000;

/** The parts of exceljs's streaming reader this module drives (its typings declare almost none). */
interface ExcelCell {
  value: unknown;
  numFmt?: string;
  /** A formula's cached result as the file holds it: NaN when it is an error (exceljs reads `t="e"` so). */
  result?: unknown;
}
interface ExcelRow {
  number: number;
  /** The row's cells by 0-based column (holes where it has none). */
  _cells: Array<ExcelCell | undefined>;
}
interface WorksheetEvent {
  eventType: string;
  value: unknown;
}
interface WorksheetReader {
  parse(): AsyncGenerator<WorksheetEvent[]>;
  /** The sheet's used range, widened by each row as it is read (a pass over all the row's columns). */
  _dimensions: { expandRow(row: unknown): void };
}
interface HyperlinkReader {
  on(event: 'hyperlink', listener: (rel: { rId: string; target?: string }) => void): void;
  on(event: 'error', listener: (err: Error) => void): void;
  read(): Promise<void>;
}
/** Events of WorkbookReader.parse(): worksheets and the sheet's hyperlink rels. */
type WorkbookEvent = { eventType?: string; value?: unknown };
interface WorkbookReaderInternals {
  sharedStrings?: unknown[];
  workbookRels?: unknown[];
  properties?: unknown;
  parse(): AsyncGenerator<WorkbookEvent>;
  _parseSharedStrings(entry: Readable): AsyncGenerator<WorkbookEvent>;
  _parseWorksheet(iterator: AsyncIterable<Buffer | string>, sheetNo: string): Generator<WorkbookEvent>;
  _parseHyperlinks(iterator: AsyncIterable<Buffer | string>, sheetNo: string): Generator<WorkbookEvent>;
}

/**
 * Decodes UTF-8 across chunk boundaries. exceljs's streaming reader decodes each inflated chunk on
 * its own, so a Hangul character split between two 16 kB chunks becomes two U+FFFD (exceljs issues
 * #2063, #2084); strings pass through its decoder untouched.
 */
async function* utf8Chunks(chunks: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  for await (const chunk of chunks) {
    const text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
    if (text) yield text;
  }
  const rest = decoder.end();
  if (rest) yield rest;
}

/**
 * The shared-strings table handed to exceljs: an array that refuses to grow past the cap, and keeps a
 * rich-text string as its plain text (its runs joined): exceljs hands over each run as an object with
 * its font, so a workbook of a few thousand strings of a thousand runs each held the better part of a
 * gigabyte; only the text ever reaches a goods field.
 */
class SharedStrings extends Array<unknown> {
  override push(...items: unknown[]): number {
    if (this.length + items.length > MAX_SHARED_STRINGS) {
      throw SheetError.tooLarge(`The workbook holds more than ${MAX_SHARED_STRINGS.toLocaleString('en-US')} distinct strings`);
    }
    return super.push(...items.map(plainSharedString));
  }
}

function plainSharedString(item: unknown): unknown {
  const runs = (item as { richText?: unknown } | null)?.richText;
  return Array.isArray(runs) ? richText({ richText: runs as Array<{ text?: string | null }> }) : item;
}

/**
 * exceljs's WorkbookReader set up for one sheet: shared strings cached in a capped table (exceljs
 * assigns a fresh array when it meets them; the accessor keeps ours), styles kept (percent formats),
 * hyperlinks emitted, and text decoded across chunks. The XML of the sheet, its relationships and the
 * shared strings reaches exceljs's parser through XlsxXmlGuard: no cell, shared string or tag grows
 * past its bound in memory (the first one over it refuses the file), and cells without a reference get one. The archive orders the parts so that the sheet
 * comes last; the pre-set tables keep exceljs from parking the sheet in a temporary file while it
 * waits for them.
 */
function workbookReader(excel: typeof ExcelJS, source: Readable, date1904: boolean): WorkbookReaderInternals {
  const reader = new excel.stream.xlsx.WorkbookReader(source, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    hyperlinks: 'emit',
    styles: 'cache',
    entries: 'ignore',
  }) as unknown as WorkbookReaderInternals;
  const base = Object.getPrototypeOf(reader) as WorkbookReaderInternals;
  const sharedStrings = new SharedStrings();
  Object.defineProperty(reader, 'sharedStrings', { get: () => sharedStrings, set: () => undefined });
  reader.workbookRels = [];
  reader.properties = { model: { date1904 } };
  reader._parseSharedStrings = function (entry) {
    return base._parseSharedStrings.call(this, Readable.from(guardedXml(utf8Chunks(entry), 'sharedStrings')));
  };
  reader._parseWorksheet = function (iterator, sheetNo) {
    return base._parseWorksheet.call(this, guardedXml(utf8Chunks(iterator), 'sheet'), sheetNo);
  };
  reader._parseHyperlinks = function (iterator, sheetNo) {
    return base._parseHyperlinks.call(this, guardedXml(utf8Chunks(iterator), 'other'), sheetNo);
  };
  return reader;
}

/** A number format that shows a percentage: a % outside quoted text and [brackets]. */
export function isPercentFormat(format: string | undefined): boolean {
  if (!format) return false;
  // One pass: quoted text and [brackets] are skipped to their end (an unclosed one is a character like
  // any other, and so is every later one of its kind), a backslash escapes the next character.
  let quotesClose = true;
  let bracketsClose = true;
  for (let i = 0; i < format.length; i += 1) {
    const c = format[i];
    if (c === '%') return true;
    const closing = c === '"' && quotesClose ? '"' : c === '[' && bracketsClose ? ']' : c === '\\' ? 'escape' : null;
    if (closing === 'escape') {
      if (i + 1 < format.length && !'\n\r\u2028\u2029'.includes(format[i + 1])) i += 1;
    } else if (closing) {
      const end = format.indexOf(closing, i + 1);
      if (end >= 0) i = end;
      else if (closing === '"') quotesClose = false;
      else bracketsClose = false;
    }
  }
  return false;
}

/** Plain text of a rich-text value: its runs joined. */
function richText(value: { richText: Array<{ text?: string | null }> }): string {
  return value.richText.map((run) => run.text ?? '').join('');
}

/**
 * The plain value of an exceljs cell value: rich text joined, a formula's cached result (its formula
 * text, "=B2*0.9", when the file holds no result: it was never calculated, or an error: see
 * isErrorCell), an error as its text (#N/A). Empty values are undefined.
 */
export function plainCellValue(value: unknown): RawCell['value'] | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return Number.isNaN(value) ? undefined : value;
  // `_xHHHH_` escapes: how a carriage return or a control character is written in a cell (the export does).
  if (typeof value === 'string') return decodeXlsxText(value);
  if (typeof value === 'boolean' || value instanceof Date) return value;
  if (typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  if (Array.isArray(v.richText)) return richText(v as { richText: Array<{ text?: string | null }> });
  if ('formula' in v || 'sharedFormula' in v) {
    const result = plainCellValue(v.result);
    if (result !== undefined) return result;
    const formula = typeof v.formula === 'string' ? v.formula : '';
    return formula ? `=${formula}` : undefined;
  }
  if (typeof v.error === 'string') return v.error;
  if (typeof v.text === 'string') return v.text;
  return undefined;
}

/**
 * Whether a cell holds a spreadsheet error (#N/A, #REF!, …), or a formula whose cached result is one: a
 * calculated formula that failed (its value reads as the formula's text, as one never calculated does;
 * exceljs's stream reader keeps such a result only as NaN).
 */
export function isErrorCell(cell: ExcelCell): boolean {
  const v = cell.value;
  if (v === null || typeof v !== 'object') return false;
  if (typeof (v as Record<string, unknown>).error === 'string') return true;
  return ('formula' in v || 'sharedFormula' in v) && typeof cell.result === 'number' && Number.isNaN(cell.result);
}

/** "C5" or "C5:D9" → a range of 1-based rows and 0-based columns. */
function rangeOf(ref: string): Omit<HyperlinkRange, 'target'> | undefined {
  const m = /^\$?([A-Z]{1,3})\$?(\d+)(?::\$?([A-Z]{1,3})\$?(\d+))?$/i.exec(ref.trim());
  if (!m) return undefined;
  const [left, top] = [columnIndex(m[1]), Number(m[2])];
  const [right, bottom] = m[3] ? [columnIndex(m[3]), Number(m[4])] : [left, top];
  return { top: Math.min(top, bottom), bottom: Math.max(top, bottom), left: Math.min(left, right), right: Math.max(left, right) };
}

/**
 * Streams the rows of the first sheet of an .xlsx upload (see XlsxArchive for what is checked
 * before exceljs sees a byte), then its hyperlinks. Every step is bounded by the guard.
 */
export async function* readXlsxRows(upload: Buffer | string, limits: ArchiveLimits, guard: ReadGuard): AsyncGenerator<RawSheetEvent> {
  // Loaded at start on the main thread (see buildGoodsTemplate); on first use in the sheet worker.
  const excel = await import('exceljs');
  const archive = await XlsxArchive.open(upload, limits);
  const source = archive.stream(() => guard.breathe());
  archive.onFailure((err) => guard.abort(err));
  const reader = workbookReader(excel, source, archive.date1904);
  const workbookEvents = reader.parse();
  const relTargets = new Map<string, string>();
  const links: Array<{ ref: string; rId: string }> = [];
  let lastRow = 0;
  try {
    for (;;) {
      const step = await guard.race(workbookEvents.next());
      if (step.done) break;
      const event = step.value;
      if (event.eventType === 'worksheet') {
        const sheet = event.value as WorksheetReader;
        // Never read here, and each row's update of it walks every column up to the row's last one.
        sheet._dimensions = { expandRow: () => undefined };
        const sheetEvents = sheet.parse();
        for (;;) {
          const batch = await guard.race(sheetEvents.next());
          if (batch.done) break;
          for (const { eventType, value } of batch.value) {
            if (eventType === 'row') {
              const row = rawRow(value as ExcelRow, lastRow);
              lastRow = row.row;
              yield { kind: 'row', row };
            } else if (eventType === 'hyperlink') {
              links.push(value as { ref: string; rId: string });
            }
          }
          await guard.breathe();
        }
      } else if (event.eventType === 'hyperlinks') {
        const rels = event.value as HyperlinkReader;
        rels.on('hyperlink', (rel) => {
          if (rel.target) relTargets.set(rel.rId, rel.target);
        });
        rels.on('error', (err) => guard.abort(SheetError.unsupported(`The sheet's links cannot be read (${err.message})`)));
        await guard.race(rels.read());
      }
    }
    const ranges: HyperlinkRange[] = [];
    for (const { ref, rId } of links) {
      const target = relTargets.get(rId);
      const range = target ? rangeOf(ref) : undefined;
      if (target && range) ranges.push({ ...range, target });
    }
    if (ranges.length) yield { kind: 'hyperlinks', links: ranges };
  } catch (err) {
    if (err instanceof SheetError) throw err;
    throw SheetError.unsupported(`The sheet cannot be read (${err instanceof Error ? err.message : String(err)})`);
  } finally {
    source.destroy();
    archive.close();
  }
}

/** Rows up to this many columns are walked column by column; wider ones are read by their cells' keys. */
const WALKED_COLUMNS = 256;

/**
 * A row without its optional `r` attribute follows the previous one. A text longer than an Excel cell
 * holds (written by something else than Excel, or rich text of many runs) refuses the file.
 */
function rawRow(row: ExcelRow, previous: number): { row: number; cells: Array<RawCell | undefined> } {
  const number = Number.isInteger(row.number) && row.number > 0 ? row.number : previous + 1;
  const cells: Array<RawCell | undefined> = [];
  const take = (cell: ExcelCell | undefined, index: number) => {
    const value = cell ? plainCellValue(cell.value) : undefined;
    if (value === undefined) return;
    if (typeof value === 'string' && value.length > MAX_CELL_CHARS) throw overlongCell(`${columnName(index)}${number}`, value.length);
    cells[index] = cell && isErrorCell(cell) ? { value, error: true } : isPercentFormat(cell?.numFmt) ? { value, percent: true } : { value };
  };
  // A row's cells hold holes up to its last column (XFD: 16,384): a wide row's cells are found by
  // their keys (as many as it has cells), not by walking every column as exceljs's eachCell does.
  const all = row._cells;
  if (all.length <= WALKED_COLUMNS) all.forEach(take);
  else for (const key of Object.keys(all)) take(all[Number(key)], Number(key));
  return { row: number, cells };
}

/** The refusal of a cell of more than MAX_CELL_CHARS characters (also for a CSV cell). */
export function overlongCell(ref: string, length: number): SheetError {
  return SheetError.tooLarge(
    `Cell ${ref} holds ${length.toLocaleString('en-US')} characters, more than the ${MAX_CELL_CHARS.toLocaleString('en-US')} an Excel cell holds ` +
      `(no goods field takes more than ${GoodsLimits.description.toLocaleString('en-US')}); refused`,
  );
}
