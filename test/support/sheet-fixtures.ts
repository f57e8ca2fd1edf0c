/**
 * Spreadsheet fixtures built in the tests (no binary fixture is committed): workbooks written with
 * exceljs, hand-made zips (minimal workbooks, zip bombs, lying sizes) written with zlib, and CSV text.
 */
import { randomBytes } from 'node:crypto';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';
import * as ExcelJS from 'exceljs';

export type CellInput = ExcelJS.CellValue;

export interface XlsxOptions {
  /** Sheets placed before the goods sheet in the file (the goods sheet must still be first in tab order to be read). */
  sheetName?: string;
  /** Number formats by 1-based column. */
  numFmts?: Record<number, string>;
  /** Extra sheets after the first. */
  extraSheets?: Array<{ name: string; rows: CellInput[][] }>;
  /** Use shared strings (exceljs's default) or inline strings. */
  sharedStrings?: boolean;
}

/** An .xlsx whose first sheet holds `rows` (row 1 = the first array), written by exceljs. */
export async function xlsx(rows: CellInput[][], options: XlsxOptions = {}): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  const sheet = workbook.addWorksheet(options.sheetName ?? 'Goods');
  rows.forEach((values, i) => {
    const row = sheet.getRow(i + 1);
    values.forEach((value, j) => {
      if (value !== undefined && value !== null) row.getCell(j + 1).value = value;
    });
  });
  for (const [column, format] of Object.entries(options.numFmts ?? {})) sheet.getColumn(Number(column)).numFmt = format;
  for (const extra of options.extraSheets ?? []) {
    const s = workbook.addWorksheet(extra.name);
    extra.rows.forEach((values) => s.addRow(values));
  }
  return Buffer.from(await workbook.xlsx.writeBuffer({ useSharedStrings: options.sharedStrings ?? true }));
}

/** Bytes of a zip entry: a buffer, or chunks produced lazily (for entries of a gigabyte). */
export type EntryData = Buffer | string | (() => Iterable<Buffer>);

export interface ZipEntry {
  name: string;
  data: EntryData;
  /** Claim this uncompressed size in the headers instead of the real one (a lying zip). */
  declaredSize?: number;
  /** Write the entry's local header and data but leave it out of the central directory. */
  hidden?: boolean;
  /** Stored instead of deflated. */
  stored?: boolean;
  /** zlib level for a lazily produced entry (default 1: fast). */
  level?: number;
}

interface Written {
  name: Buffer;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
  stored: boolean;
}

async function deflated(data: EntryData, stored: boolean, level = 1): Promise<{ bytes: Buffer; crc: number; size: number }> {
  if (typeof data === 'string') data = Buffer.from(data, 'utf8');
  if (Buffer.isBuffer(data)) {
    return { bytes: stored ? data : deflateRawSync(data, { level: 6 }), crc: crc32(data), size: data.length };
  }
  const chunks: Buffer[] = [];
  let crc = 0;
  let size = 0;
  const deflate = createDeflateRaw({ level });
  deflate.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise((resolve, reject) => {
    deflate.on('end', resolve);
    deflate.on('error', reject);
  });
  for (const chunk of data()) {
    crc = crc32(chunk, crc);
    size += chunk.length;
    if (!deflate.write(chunk)) await new Promise((r) => deflate.once('drain', r));
  }
  deflate.end();
  await done;
  return { bytes: Buffer.concat(chunks), crc, size };
}

/** A zip archive (deflated entries, no zip64), written entry by entry. */
export async function zip(entries: ZipEntry[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  const central: Written[] = [];
  let offset = 0;
  for (const entry of entries) {
    const stored = !!entry.stored;
    const { bytes, crc, size } = await deflated(entry.data, stored, entry.level);
    const name = Buffer.from(entry.name, 'utf8');
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(0x0800, 6);
    header.writeUInt16LE(stored ? 0 : 8, 8);
    header.writeUInt16LE(0x21, 12);
    header.writeUInt32LE(crc >>> 0, 14);
    header.writeUInt32LE(bytes.length, 18);
    header.writeUInt32LE(Math.min(entry.declaredSize ?? size, 0xffffffff), 22);
    header.writeUInt16LE(name.length, 26);
    parts.push(header, name, bytes);
    if (!entry.hidden) {
      central.push({ name, crc, compressed: bytes.length, size: entry.declaredSize ?? size, offset, stored });
    }
    offset += header.length + name.length + bytes.length;
  }
  const cdStart = offset;
  for (const w of central) {
    const record = Buffer.alloc(46);
    record.writeUInt32LE(0x02014b50, 0);
    record.writeUInt16LE(20, 4);
    record.writeUInt16LE(20, 6);
    record.writeUInt16LE(0x0800, 8);
    record.writeUInt16LE(w.stored ? 0 : 8, 10);
    record.writeUInt16LE(0x21, 14);
    record.writeUInt32LE(w.crc >>> 0, 16);
    record.writeUInt32LE(w.compressed, 20);
    record.writeUInt32LE(Math.min(w.size, 0xffffffff), 24);
    record.writeUInt16LE(w.name.length, 28);
    record.writeUInt32LE(w.offset, 42);
    parts.push(record, w.name);
    offset += record.length + w.name.length;
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(central.length, 8);
  end.writeUInt16LE(central.length, 10);
  end.writeUInt32LE(offset - cdStart, 12);
  end.writeUInt32LE(cdStart, 16);
  parts.push(end);
  return Buffer.concat(parts);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
  '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' +
  '</Types>';
const ROOT_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>' +
  '</Relationships>';
const WORKBOOK =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ' +
  'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">' +
  '<sheets><sheet name="Goods" sheetId="1" r:id="rId1"/></sheets></workbook>';
const WORKBOOK_RELS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>' +
  '</Relationships>';

function xmlEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function columnLetters(index: number): string {
  let name = '';
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

/** `<row>` XML with inline strings and numbers. */
export function rowXml(rowNumber: number, values: Array<string | number | undefined>): string {
  const cells = values
    .map((value, i) => {
      if (value === undefined) return '';
      const ref = `${columnLetters(i)}${rowNumber}`;
      return typeof value === 'number'
        ? `<c r="${ref}"><v>${value}</v></c>`
        : `<c r="${ref}" t="inlineStr"><is><t xml:space="preserve">${xmlEscape(value)}</t></is></c>`;
    })
    .join('');
  return `<row r="${rowNumber}">${cells}</row>`;
}

/**
 * A minimal hand-written .xlsx (one sheet, inline strings) whose sheet XML is produced row by row:
 * `rowAt(i)` gives data row i (0-based; sheet row i + 2). Large sheets never exist as one string.
 */
export async function minimalXlsx(
  header: string[],
  count: number,
  rowAt: (i: number) => Array<string | number | undefined>,
  extraEntries: ZipEntry[] = [],
  level = 1,
): Promise<Buffer> {
  function* sheet(): Iterable<Buffer> {
    yield Buffer.from(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>' +
        rowXml(1, header),
    );
    let batch: string[] = [];
    for (let i = 0; i < count; i++) {
      batch.push(rowXml(i + 2, rowAt(i)));
      if (batch.length === 5000) {
        yield Buffer.from(batch.join(''));
        batch = [];
      }
    }
    yield Buffer.from(`${batch.join('')}</sheetData></worksheet>`);
  }
  return zip([
    { name: '[Content_Types].xml', data: CONTENT_TYPES },
    { name: '_rels/.rels', data: ROOT_RELS },
    { name: 'xl/workbook.xml', data: WORKBOOK },
    { name: 'xl/_rels/workbook.xml.rels', data: WORKBOOK_RELS },
    { name: 'xl/worksheets/sheet1.xml', data: sheet, level },
    ...extraEntries,
  ]);
}

/** The parts of a minimal workbook, for building odd zips around them. */
export const MINIMAL_PARTS = { CONTENT_TYPES, ROOT_RELS, WORKBOOK, WORKBOOK_RELS };

/** The minimal workbook (MINIMAL_PARTS) around a first sheet whose XML `sheet` streams, and `extra` parts. */
export function streamedXlsx(sheet: () => Iterable<Buffer>, extra: ZipEntry[] = []): Promise<Buffer> {
  return zip([
    { name: '[Content_Types].xml', data: MINIMAL_PARTS.CONTENT_TYPES },
    { name: '_rels/.rels', data: MINIMAL_PARTS.ROOT_RELS },
    { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
    { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
    { name: 'xl/worksheets/sheet1.xml', data: sheet, level: 9 },
    ...extra,
  ]);
}

/** `size` zero bytes, produced 1 MiB at a time. */
export function zeros(size: number): () => Iterable<Buffer> {
  return function* () {
    const chunk = Buffer.alloc(1024 * 1024);
    for (let left = size; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
  };
}

/** A valid goods workbook plus a 1 GiB zero-filled entry (about 1 MB compressed). */
export async function zipBombXlsx(): Promise<Buffer> {
  return minimalXlsx(['sku', 'name', 'url'], 1, () => ['BOMB-1', 'Bomb', 'https://shop.example.com/bomb'], [
    { name: 'xl/media/zeros.bin', data: zeros(1024 * 1024 * 1024), level: 9 },
  ]);
}

/** A CSV text from rows (cells quoted when needed, CRLF line ends as Excel writes them). */
export function csv(rows: Array<Array<string | number | undefined>>, options: { bom?: boolean; delimiter?: string } = {}): Buffer {
  const delimiter = options.delimiter ?? ',';
  const text = rows
    .map((row) =>
      row
        .map((cell) => {
          const s = cell === undefined ? '' : String(cell);
          return /[",;\t\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
        })
        .join(delimiter),
    )
    .join('\r\n');
  return Buffer.from(`${options.bom ? '\ufeff' : ''}${text}\r\n`, 'utf8');
}

/** A PNG signature and header, then noise. */
export function pngBytes(): Buffer {
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), randomBytes(2048)]);
}

/** Random bytes that do not happen to start like a zip. */
export function noise(size: number): Buffer {
  const bytes = randomBytes(size);
  bytes[0] = 0x00;
  return bytes;
}
