import { once } from 'node:events';
import { PassThrough, Readable, Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { stringify } from 'csv-stringify/sync';
import { TimeSlicer } from '../common/util/time-slicer';
import type { Goods } from '../goods/entities/goods.entity';
import { neutralizeCsvText } from './csv-text';
import { GOODS_COLUMNS, GoodsField } from './goods-sheet.columns';
import { encodeXlsxText } from './xlsx-text';

export type ExportFormat = 'xlsx' | 'csv';

/** The catalog as a sequence of pages (in id order); the first page has been read already. */
export type GoodsPages = AsyncIterable<Goods[]>;

type CellValue = string | number | null;

/** One goods item as the cells of the template's columns, in template order (null = an empty cell). */
export function exportCells(goods: Goods): CellValue[] {
  return GOODS_COLUMNS.map((column) => cellOf(goods, column.field));
}

function cellOf(goods: Goods, field: GoodsField): CellValue {
  const value = (goods as unknown as Record<GoodsField, string | number | null | undefined>)[field];
  return value === undefined ? null : value;
}

/** The CSV header line and rows: UTF-8 with a byte order mark (so Excel reads Hangul), CRLF lines. */
const CSV_OPTIONS = { record_delimiter: 'windows' } as const;
/** Rows turned into CSV text at a time (a few ms), between which the event loop may run. */
const CSV_SLICE_ROWS = 250;

function csvRecord(cells: CellValue[]): string[] {
  return cells.map((v) => (v === null ? '' : typeof v === 'number' ? String(v) : neutralizeCsvText(v)));
}

/**
 * The CSV export as a stream of text: the header, then the rows in chunks of CSV_SLICE_ROWS. Pages are
 * read only as the consumer reads (Readable.from pulls the generator), so memory stays at about one page
 * whatever the catalog size; destroying the stream (the client went away) ends the generator and its
 * database reads. A client that reads as fast as it is written never lets the stream wait, and SQLite
 * reads the pages synchronously: without the time slicer the whole export would run in one turn of the
 * event loop (a 100,000-goods catalog held every request of every customer for about a second), so the
 * rows are written in slices of a few milliseconds, one turn each, like every other bulk work.
 */
export function csvExport(pages: GoodsPages): Readable {
  async function* chunks(): AsyncGenerator<string> {
    const slicer = new TimeSlicer();
    yield `\uFEFF${stringify([GOODS_COLUMNS.map((c) => c.field)], CSV_OPTIONS)}`;
    for await (const page of pages) {
      for (let i = 0; i < page.length; i += CSV_SLICE_ROWS) {
        if (slicer.due()) await slicer.yield();
        yield stringify(
          page.slice(i, i + CSV_SLICE_ROWS).map((g) => csvRecord(exportCells(g))),
          CSV_OPTIONS,
        );
      }
      if (slicer.due()) await slicer.yield();
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

/** Bytes the xlsx writer may hold between exceljs and the reader before it waits for the reader. */
const XLSX_MAX_PENDING = 1024 * 1024;
/** Rows written between two turns of the event loop (about 5 ms). */
const XLSX_SLICE_ROWS = 250;
/** How often the writer looks again while it waits for bytes to move (besides drain and close events). */
const XLSX_WAIT_MS = 20;

/**
 * The parts of exceljs's streaming writer that buffer: the sheet's StreamBuf (exceljs utils/stream-buf.js)
 * keeps what it has not handed on yet in `buffers` of `bufSize` bytes and hands its data to `pipes` (the
 * zip entry's input) ignoring their backpressure, and the zip (archiver) keeps producing into its
 * readable side. Their streams are readable-stream ones (no writableLength), so their state is read.
 */
interface StreamState {
  _writableState?: { length?: number };
  _readableState?: { length?: number };
}
interface XlsxBuffers {
  sheet: { buffers?: unknown[]; bufSize?: number; pipes?: Array<Writable & StreamState> };
  zip: StreamState;
  out: PassThrough;
}

const buffered = (stream: StreamState) => (stream._writableState?.length ?? 0) + (stream._readableState?.length ?? 0);

/** Bytes written into the workbook that the reader has not taken yet. */
function pendingBytes({ sheet, zip, out }: XlsxBuffers): number {
  let bytes = (sheet.buffers?.length ?? 0) * (sheet.bufSize ?? 65536) + buffered(zip) + out.writableLength + out.readableLength;
  for (const pipe of sheet.pipes ?? []) bytes += buffered(pipe);
  return bytes;
}

/** Waits until the reader has taken most of what was written, or has gone away. */
async function readerCaughtUp(buffers: XlsxBuffers): Promise<void> {
  const { sheet, out } = buffers;
  while (!out.destroyed && pendingBytes(buffers) > XLSX_MAX_PENDING) {
    const ac = new AbortController();
    const signal = ac.signal;
    const events = [once(out, 'drain', { signal }), once(out, 'close', { signal }), delay(XLSX_WAIT_MS, undefined, { signal })];
    for (const pipe of sheet.pipes ?? []) events.push(once(pipe, 'drain', { signal }));
    for (const event of events) event.catch(() => undefined);
    try {
      await Promise.race(events);
    } finally {
      ac.abort();
    }
  }
}

/**
 * The .xlsx export, written by exceljs's streaming WorkbookWriter into the returned stream: sheet
 * "Goods" with the template's header and one row per item, each row committed (written out) as it is
 * added. Text is always a text cell (exceljs writes a string as a string, never as a formula; carriage
 * returns and control characters as `_xHHHH_` escapes, xlsx-text.ts), prices and ids are numbers. After each page the writer waits until the reader has taken all but
 * XLSX_MAX_PENDING bytes of what was written (backpressure: exceljs itself ignores it), so memory stays
 * at about one page; a destroyed stream stops it, and a failure reading a page destroys
 * the stream with that error (the client sees a broken transfer, never a complete-looking file).
 */
export async function xlsxExport(pages: GoodsPages): Promise<Readable> {
  // Loaded at start, as for the template. No styles (bold header, number formats): exceljs resolves a
  // style for every cell, which doubles the CPU an export costs; no shared strings: their table would
  // hold every distinct text of the catalog in memory.
  const { stream } = await import('exceljs');
  const out = new PassThrough();
  const workbook = new stream.xlsx.WorkbookWriter({ stream: out, useStyles: false, useSharedStrings: false });
  workbook.creator = 'livegoods';
  const sheet = workbook.addWorksheet('Goods', { views: [{ state: 'frozen', ySplit: 1 }] });
  sheet.columns = GOODS_COLUMNS.map((c) => ({ header: c.field, key: c.field, width: c.width }));
  const buffers: XlsxBuffers = {
    sheet: (sheet as unknown as { stream: XlsxBuffers['sheet'] }).stream,
    zip: (workbook as unknown as { zip: StreamState }).zip,
    out,
  };

  const write = async () => {
    for await (const page of pages) {
      if (out.destroyed) return;
      for (let i = 0; i < page.length; i++) {
        // ~20 µs of CPU a row: other requests get the event loop between slices of rows.
        if (i > 0 && i % XLSX_SLICE_ROWS === 0) await new Promise((resolve) => setImmediate(resolve));
        sheet.addRow(exportCells(page[i]).map((v) => (typeof v === 'string' ? encodeXlsxText(v) : v))).commit();
      }
      await readerCaughtUp(buffers);
      if (out.destroyed) return;
    }
    sheet.commit();
    await workbook.commit();
  };
  write().catch((err: unknown) => out.destroy(err instanceof Error ? err : new Error(String(err))));
  return out;
}
