import { open } from 'node:fs/promises';
import { columnOf, fieldOfHeader, GOODS_COLUMNS, GoodsField } from './goods-sheet.columns';
import { readCsvRows } from './csv-rows';
import { ReadGuard } from './read-guard';
import { SheetError } from './sheet-error';
import { columnName, HyperlinkRange, RawCell, RawRow, RawSheetEvent } from './sheet-rows';
import { readXlsxRows } from './xlsx-rows';

export type SheetFormat = 'xlsx' | 'csv';

export interface SheetUpload {
  buffer: Buffer;
  /** The client's file name: decides CSV when the content is not a zip. */
  filename?: string;
  mimetype?: string;
}

export interface SheetLimits {
  /**
   * Most data rows (the header not counted), and, apart from them, most rows without goods values
   * (blank rows, rows with only ignored columns, repeated header rows).
   */
  maxRows: number;
  /** Most bytes an .xlsx may decompress to (all entries declared, and every byte read). */
  maxUncompressedBytes: number;
  /** Most time reading the whole file may take. */
  timeoutMs: number;
}

export type GoodsValue = string | number | boolean;
export type GoodsValues = Partial<Record<GoodsField, GoodsValue>>;

/** A data row: its row number in the sheet (header = 1) and its non-empty cells keyed by goods field. */
export interface GoodsSheetRow {
  row: number;
  values: GoodsValues;
  /** Why the row cannot be taken as it is (a cell holding a spreadsheet error): it is a FAIL row saying so. */
  refusal?: string;
}

export interface GoodsSheetColumn {
  /** Column name as the sheet shows it (A, B, ...). */
  column: string;
  header: string;
  field: GoodsField;
}

export interface GoodsSheet {
  format: SheetFormat;
  columns: GoodsSheetColumn[];
  /** Header texts of columns that name no goods field, once each. */
  ignoredColumns: string[];
  rows: GoodsSheetRow[];
}

const CSV_TYPES = new Set(['text/csv', 'application/csv', 'text/comma-separated-values', 'text/tab-separated-values']);
const KEY_FIELDS: GoodsField[] = ['id', 'sku', 'url'];

/** Well-known signatures of files that are surely not spreadsheets, for a precise refusal. */
const SIGNATURES: Array<[number[], string]> = [
  [[0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], 'a legacy .xls workbook or a password-protected workbook (save it as .xlsx without a password)'],
  [[0x89, 0x50, 0x4e, 0x47], 'a PNG image'],
  [[0xff, 0xd8, 0xff], 'a JPEG image'],
  [[0x47, 0x49, 0x46, 0x38], 'a GIF image'],
  [[0x25, 0x50, 0x44, 0x46], 'a PDF document'],
  [[0x1f, 0x8b], 'a gzip archive'],
  [[0x52, 0x61, 0x72, 0x21], 'a RAR archive'],
  [[0x37, 0x7a, 0xbc, 0xaf], 'a 7-Zip archive'],
];

function startsWith(buffer: Buffer, bytes: number[]): boolean {
  return buffer.length >= bytes.length && bytes.every((b, i) => buffer[i] === b);
}

/**
 * .xlsx when the content starts with a zip local-file signature (PK\x03\x04), whatever its name;
 * otherwise CSV when the name ends in .csv/.tsv/.txt or the client says text/csv; anything else is
 * refused, with the type named when the signature tells it.
 */
export function detectFormat(upload: SheetUpload): SheetFormat {
  const { buffer } = upload;
  if (buffer.length === 0) throw SheetError.unsupported('The file is empty');
  if (startsWith(buffer, [0x50, 0x4b, 0x03, 0x04])) return 'xlsx';
  if (startsWith(buffer, [0x50, 0x4b, 0x05, 0x06])) throw SheetError.unsupported('The file is an empty zip archive, not an .xlsx workbook');
  for (const [signature, what] of SIGNATURES) {
    if (startsWith(buffer, signature)) throw SheetError.unsupported(`The file is ${what}, not an .xlsx or CSV spreadsheet`);
  }
  const name = (upload.filename ?? '').toLowerCase();
  const mimetype = (upload.mimetype ?? '').toLowerCase().split(';')[0].trim();
  if (/\.(csv|tsv|txt)$/.test(name)) return 'csv';
  if (/\.xls[xmb]?$/.test(name)) {
    throw SheetError.unsupported(`The file is named ${upload.filename} but is not an .xlsx workbook (it is not a zip archive)`);
  }
  if (CSV_TYPES.has(mimetype)) return 'csv';
  throw SheetError.unsupported('The file is neither an .xlsx workbook nor a CSV file (a CSV must be named .csv)');
}

/**
 * Reads a goods spreadsheet (.xlsx first sheet, or CSV) into rows keyed by goods field. Row 1 is the
 * header: field names or their Korean labels, in any order, unknown columns ignored (reported once).
 * Blank rows, and a row that repeats the column names anywhere (e.g. Korean labels under English ones), are
 * skipped (and counted against the limit). Cell values become plain values; empty cells are absent (not null). Refusals (wrong type,
 * limits, a header without a key column) are SheetErrors; rows are not validated here.
 */
export async function parseGoodsSheet(upload: SheetUpload, limits: SheetLimits): Promise<GoodsSheet> {
  const format = detectFormat(upload);
  const guard = new ReadGuard(limits.timeoutMs);
  try {
    const events = format === 'xlsx' ? readXlsxRows(upload.buffer, limits, guard) : readCsvRows(upload.buffer, guard);
    return await collectGoodsSheet(format, events, limits.maxRows);
  } finally {
    guard.dispose();
  }
}

/** A stored upload (an import job's file), read in place. */
export interface SheetFile {
  path: string;
  filename?: string;
  mimetype?: string;
}

/** What reading a whole stored sheet without keeping its rows tells (an import job's first pass). */
export interface SheetSurvey {
  format: SheetFormat;
  /** Data rows (the header, blank rows and repeated headers not counted). */
  dataRows: number;
  ignoredColumns: string[];
  /** The sheet's hyperlinks (an .xlsx stores them after the rows): the second pass resolves URL cells with them. */
  links: HyperlinkRange[];
}

/** The format of a stored upload, from its first bytes and its name (as detectFormat). */
export async function detectFileFormat(file: SheetFile): Promise<SheetFormat> {
  const handle = await open(file.path, 'r');
  try {
    const head = Buffer.alloc(16);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return detectFormat({ buffer: head.subarray(0, bytesRead), filename: file.filename, mimetype: file.mimetype });
  } finally {
    await handle.close();
  }
}

function fileEvents(format: SheetFormat, path: string, limits: SheetLimits, guard: ReadGuard): AsyncGenerator<RawSheetEvent> {
  return format === 'xlsx' ? readXlsxRows(path, limits, guard) : readCsvRows(path, guard);
}

/**
 * First pass over a stored sheet: type, header and limits checked, rows counted, links collected, and
 * no row kept (memory stays flat whatever the file's size). Refusals are SheetErrors, as parseGoodsSheet's.
 */
export async function surveyGoodsSheet(file: SheetFile, limits: SheetLimits, breatheMs?: number): Promise<SheetSurvey> {
  const format = await detectFileFormat(file);
  const guard = new ReadGuard(limits.timeoutMs, breatheMs);
  try {
    const builder = new GoodsSheetBuilder(format, limits.maxRows, { keep: false });
    for await (const event of fileEvents(format, file.path, limits, guard)) {
      if (event.kind === 'row') builder.addRow(event.row);
      else builder.addHyperlinks(event.links);
    }
    const sheet = builder.finish();
    return { format, dataRows: builder.dataRows, ignoredColumns: sheet.ignoredColumns, links: builder.hyperlinks };
  } finally {
    guard.dispose();
  }
}

/**
 * Second pass over a surveyed sheet: its data rows in order, one at a time, URL cells resolved with the
 * survey's links. The caller consumes them at its own pace (the file is read as they are taken).
 */
export async function* streamGoodsSheet(file: SheetFile, survey: SheetSurvey, limits: SheetLimits, breatheMs?: number): AsyncGenerator<GoodsSheetRow> {
  const guard = new ReadGuard(limits.timeoutMs, breatheMs);
  try {
    const builder = new GoodsSheetBuilder(survey.format, limits.maxRows, { keep: false, links: survey.links });
    for await (const event of fileEvents(survey.format, file.path, limits, guard)) {
      if (event.kind !== 'row') continue;
      const row = builder.addRow(event.row);
      if (row) yield row;
    }
  } finally {
    guard.dispose();
  }
}

/**
 * Builds the goods sheet from the rows a format reader streams. A refusal (a limit, the header) stops
 * the read right at the row that breaks it: the loop ends, which closes the reader and its source.
 */
export async function collectGoodsSheet(format: SheetFormat, events: AsyncIterable<RawSheetEvent>, maxRows: number): Promise<GoodsSheet> {
  const builder = new GoodsSheetBuilder(format, maxRows);
  for await (const event of events) {
    if (event.kind === 'row') builder.addRow(event.row);
    else builder.addHyperlinks(event.links);
  }
  return builder.finish();
}

interface MappedColumn {
  index: number;
  field: GoodsField;
}

/**
 * Turns raw rows into goods rows; keeps the rows (at most maxRows) for the writer. Rows without goods
 * values are skipped but counted: at most maxRows of them besides the data rows, so a file of blank
 * lines costs no more to refuse than a full one costs to read.
 */
class GoodsSheetBuilder {
  private columns?: GoodsSheetColumn[];
  private mapped: MappedColumn[] = [];
  private ignored: string[] = [];
  private readonly rows: GoodsSheetRow[] = [];
  /** Data rows met so far (kept or not). */
  dataRows = 0;
  private skipped = 0;
  /** URL cells whose text is not a URL: a hyperlink on them gives the value. */
  private readonly linkCandidates: Array<{ row: GoodsSheetRow; field: GoodsField; index: number }> = [];
  private links: HyperlinkRange[] = [];
  private readonly keep: boolean;
  /** Links known before the rows (a second pass): each row is resolved as it comes. */
  private readonly presetLinks?: LinkIndex;

  constructor(
    private readonly format: SheetFormat,
    private readonly maxRows: number,
    options: { keep?: boolean; links?: HyperlinkRange[] } = {},
  ) {
    this.keep = options.keep ?? true;
    if (options.links?.length) this.presetLinks = new LinkIndex(options.links);
  }

  get hyperlinks(): HyperlinkRange[] {
    return this.links;
  }

  /** Takes one raw row; returns it as a data row, or undefined (the header, a skipped row). */
  addRow(raw: RawRow): GoodsSheetRow | undefined {
    if (!this.columns) {
      this.readHeader(raw);
      return undefined;
    }
    const values: GoodsValues = {};
    const errors: string[] = [];
    let any = false;
    // A row that names each of its columns (the header again, in either spelling: two exports pasted
    // together, Korean labels under English ones) is no goods row wherever it comes: skipped.
    let repeatsHeader = true;
    for (const { index, field } of this.mapped) {
      const cell = raw.cells[index];
      if (!cell) continue;
      const value = fieldValue(field, cell);
      if (value === undefined) continue;
      values[field] = value;
      if (cell.error) errors.push(`${field}: cell ${columnName(index)}${raw.row} holds a spreadsheet error (${String(cell.value)}), not a value`);
      any = true;
      if (repeatsHeader && !(typeof cell.value === 'string' && fieldOfHeader(cell.value) === field)) repeatsHeader = false;
    }
    if (!any || repeatsHeader) {
      this.skipped += 1;
      if (this.skipped > this.maxRows) {
        throw SheetError.tooLarge(
          `The sheet has more than ${this.maxRows.toLocaleString('en-US')} rows without goods values (blank, with ` +
            `only ignored columns, or repeating the header) besides its data rows; reading stopped at row ` +
            `${raw.row.toLocaleString('en-US')}. Delete the empty rows and upload again`,
        );
      }
      return undefined;
    }
    if (this.dataRows >= this.maxRows) {
      throw SheetError.tooManyRows(
        `The sheet has more than ${this.maxRows.toLocaleString('en-US')} data rows, the most one upload takes; split it into several files`,
      );
    }
    this.dataRows += 1;
    // An error (a formula that failed: a VLOOKUP finding nothing, a reference gone) is no value to store.
    const row: GoodsSheetRow = errors.length ? { row: raw.row, values, refusal: errors.join('; ') } : { row: raw.row, values };
    if (this.keep) this.rows.push(row);
    for (const { index, field } of this.mapped) {
      if (columnOf(field).kind === 'url' && typeof values[field] === 'string' && !isHttpUrlText(values[field])) {
        if (this.presetLinks) {
          const target = this.presetLinks.at(row.row, index);
          if (target && isHttpUrlText(target)) values[field] = target;
        } else if (this.keep) {
          this.linkCandidates.push({ row, field, index });
        }
      }
    }
    return row;
  }

  addHyperlinks(links: HyperlinkRange[]): void {
    this.links = this.links.concat(links);
  }

  finish(): GoodsSheet {
    if (!this.columns) throw SheetError.badLayout('The sheet is empty: row 1 must be the header row');
    if (this.links.length && this.linkCandidates.length) {
      const links = new LinkIndex(this.links);
      for (const { row, field, index } of this.linkCandidates) {
        const target = links.at(row.row, index);
        if (target && isHttpUrlText(target)) row.values[field] = target;
      }
    }
    return { format: this.format, columns: this.columns, ignoredColumns: this.ignored, rows: this.rows };
  }

  private readHeader(raw: RawRow): void {
    if (raw.row !== 1) {
      throw SheetError.badLayout(
        'Row 1 must be the header row (field names such as sku, name, url, or their Korean labels 상품코드, 상품명, 상품URL); it is empty',
      );
    }
    const columns: GoodsSheetColumn[] = [];
    const ignored = new Set<string>();
    raw.cells.forEach((cell, index) => {
      const header = cell ? headerText(cell) : '';
      if (!header) return;
      const field = fieldOfHeader(header);
      if (!field) {
        ignored.add(header);
        return;
      }
      const twin = columns.find((c) => c.field === field);
      if (twin) {
        throw SheetError.badLayout(`Columns ${twin.column} (${twin.header}) and ${columnName(index)} (${header}) both hold ${field}; keep one of them`);
      }
      columns.push({ column: columnName(index), header, field });
      this.mapped.push({ index, field });
    });
    if (!columns.some((c) => KEY_FIELDS.includes(c.field))) {
      const labels = KEY_FIELDS.map((f) => `${f} (${columnOf(f).label})`).join(', ');
      const found = columns.length ? `it names ${columns.map((c) => c.header).join(', ')}` : 'it names no goods field';
      throw SheetError.badLayout(
        `The header row (row 1) needs at least one of the key columns ${labels}; ${found}. ` +
          `Known columns: ${GOODS_COLUMNS.map((c) => `${c.field}/${c.label}`).join(', ')}`,
      );
    }
    this.columns = columns;
    this.ignored = [...ignored];
  }
}

/** A sheet's hyperlinks by cell: a link usually covers one cell (looked up by cell); the rare ranges are scanned. */
class LinkIndex {
  private readonly byCell = new Map<string, string>();
  private readonly ranges: HyperlinkRange[];

  constructor(links: HyperlinkRange[]) {
    this.ranges = links.filter((l) => l.top !== l.bottom || l.left !== l.right);
    for (const l of links) if (l.top === l.bottom && l.left === l.right) this.byCell.set(`${l.top}:${l.left}`, l.target);
  }

  at(row: number, column: number): string | undefined {
    return this.byCell.get(`${row}:${column}`) ?? this.ranges.find((l) => l.top <= row && row <= l.bottom && l.left <= column && column <= l.right)?.target;
  }
}

function headerText(cell: RawCell): string {
  const v = cell.value;
  return (v instanceof Date ? v.toISOString() : String(v)).trim();
}

function isHttpUrlText(text: string): boolean {
  return /^https?:\/\/[^\s/]/i.test(text.trim());
}

/** A currency mark before an amount, and one after it: ₩39,000 · 39,000원 · KRW 39000 · $1,234.50 */
const CURRENCY_BEFORE = /^(?:[₩￦$€£¥]|[A-Z]{3}(?=[\s\d]))/u;
const CURRENCY_AFTER = /(?:원|[₩￦$€£¥]|[A-Z]{3})$/u;
const GROUPED = /^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/;
const PLAIN = /^-?(?:\d+(?:\.\d*)?|\.\d+)$/;

/** Numeric text of an amount ("₩39,000" → "39000"), or undefined when the text is no plain amount. */
function amountText(text: string): string | undefined {
  const bare = text.trim().replace(CURRENCY_BEFORE, '').trimStart().replace(CURRENCY_AFTER, '').trimEnd();
  if (GROUPED.test(bare)) return bare.replace(/,/g, '');
  return PLAIN.test(bare) ? bare : undefined;
}

/** Text that ends in a percent sign without it ("12.5 %" → "12.5"); other text as it is. */
function withoutPercentSign(text: string): string {
  const trimmed = text.trim();
  if (!trimmed.endsWith('%')) return text;
  const amount = trimmed.slice(0, -1).trimEnd();
  return /[\n\r\u2028\u2029]/.test(amount) ? text : amount;
}

/** An Excel date serial (days since 1899-12-30) for a date cell read in a number column. */
function excelSerial(date: Date): number {
  return date.getTime() / 86_400_000 + 25_569;
}

/** The value of a cell for a goods field, or undefined when the cell is empty. */
export function fieldValue(field: GoodsField, cell: RawCell): GoodsValue | undefined {
  const { value } = cell;
  const kind = columnOf(field).kind;
  if (typeof value === 'string' && value.trim() === '') return undefined;
  switch (kind) {
    case 'text':
    case 'url':
      if (typeof value === 'number') return String(value);
      if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
      if (value instanceof Date) return value.toISOString().replace(/T00:00:00\.000Z$/, '');
      return value;
    case 'id':
      return value instanceof Date ? excelSerial(value) : typeof value === 'string' ? value.trim() : value;
    case 'decimal':
    case 'percent': {
      if (typeof value === 'number') {
        // 10% is stored as 0.1 in a percentage-formatted cell; the field counts in percent.
        return kind === 'percent' && cell.percent ? Number((value * 100).toFixed(10)) : value;
      }
      if (value instanceof Date) return excelSerial(value);
      if (typeof value !== 'string') return value;
      return amountText(kind === 'percent' ? withoutPercentSign(value) : value) ?? value;
    }
    default: {
      const unreachable: never = kind;
      return unreachable;
    }
  }
}
