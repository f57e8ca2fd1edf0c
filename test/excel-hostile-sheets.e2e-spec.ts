import { minimalXlsx, rowXml, streamedXlsx } from './support/sheet-fixtures';
import { describeEngines } from './support/test-app';
import { expectSheetError, sheetUploads } from './support/sheet-uploads';

/**
 * Spreadsheets whose cost on the synchronous import (POST /excel without async=true, dry runs too) was out
 * of proportion to their size (docs/api-reference.md, spreadsheet limits): a 70 KB .xlsx of a row of
 * 10,000,000 nested unknown elements took the process to 1.4-3.1 GB (the XML parser's stack of open
 * tags); 10,000 rows with a cell in column XFD took 12 s of main thread (exceljs walked every column of
 * every row); a CSV record of a million empty cells held the event loop for 150-260 ms each. This app
 * reads a file for at most 5 s, so a file that costs out of proportion ends as a timeout (415) here.
 */

const SHEET_HEAD = '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>';
const SHEET_TAIL = '</sheetData></worksheet>';
const HEADER = rowXml(1, ['sku', 'name']);

/** The minimal workbook around a sheet streamed from `sheet` (and `extra` parts). */
const workbook = streamedXlsx;

/** `count` copies of `text`, about 1 MB at a time. */
function* repeated(text: string, count: number): Iterable<Buffer> {
  const per = Math.max(1, Math.floor((1024 * 1024) / text.length));
  const chunk = Buffer.from(text.repeat(per));
  for (let left = count; left > 0; left -= per) yield left >= per ? chunk : Buffer.from(text.repeat(left));
}

/** A workbook whose row 2 names shared string `index`, the shared strings (`<si>`…) streamed from `strings`. */
const withSharedStrings = (index: number, strings: () => Iterable<Buffer>) =>
  workbook(
    function* () {
      yield Buffer.from(`${SHEET_HEAD}${HEADER}<row r="2"><c r="A2" t="s"><v>${index}</v></c></row>${SHEET_TAIL}`);
    },
    [
      {
        name: 'xl/sharedStrings.xml',
        level: 9,
        data: function* () {
          yield Buffer.from('<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">');
          yield* strings();
          yield Buffer.from('</sst>');
        },
      },
    ],
  );

const NESTED = 10_000_000;

/** Row 2 holds 10,000,000 nested unknown elements (the audit's 70 KB file). */
const deepSheet = () =>
  workbook(function* () {
    yield Buffer.from(`${SHEET_HEAD}${HEADER}<row r="2">`);
    yield* repeated('<x>', NESTED);
    yield* repeated('</x>', NESTED);
    yield Buffer.from(`</row>${SHEET_TAIL}`);
  });

/** 10,000 rows of a sku in A and a number in XFD (`headerToo`: the header names XFD as well). */
const farColumn = (headerToo: boolean) =>
  workbook(function* () {
    const three = rowXml(1, ['sku', 'name', 'url']);
    const header = headerToo ? three.replace('</row>', '<c r="XFD1" t="inlineStr"><is><t>note</t></is></c></row>') : three;
    yield Buffer.from(SHEET_HEAD + header);
    for (let k = 0; k < 10_000; k += 1000) {
      const rows = Array.from({ length: 1000 }, (_, j) => {
        const r = k + j + 2;
        return rowXml(r, [`FAR-${r}`, 'Far', `https://shop.example.com/${r}`]).replace('</row>', `<c r="XFD${r}"><v>1</v></c></row>`);
      });
      yield Buffer.from(rows.join(''));
    }
    yield Buffer.from(SHEET_TAIL);
  });

describeEngines(
  'spreadsheets whose reading cost was out of proportion to their size',
  __filename,
  (ctx) => {
    const { upload, ended } = sheetUploads(ctx);

    const expectError = expectSheetError;

    /** The most this process's RSS grew over its level before, sampled while `work` runs. */
    async function rssGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
      const before = process.memoryUsage().rss;
      let peak = before;
      const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      try {
        const result = await work();
        return { result, growthMb: (Math.max(peak, process.memoryUsage().rss) - before) / 2 ** 20 };
      } finally {
        clearInterval(timer);
      }
    }

    it('a row of 10,000,000 nested elements: 415 saying the sheet nests too deeply (upload, dry run, job), with little memory', async () => {
      const c = await ctx().createCustomer();
      const file = await deepSheet();
      expect(file.length).toBeLessThan(200 * 1024);
      const message = /^The workbook XML nests elements more than 64 deep \(in the sheet, at row 2\), where a worksheet nests a handful; refused$/;
      const { result, growthMb } = await rssGrowth(() => upload(c, file, 'deep.xlsx'));
      expectError(result, 415, -415, message);
      expect(growthMb).toBeLessThan(300);
      expectError(await upload(c, file, 'deep.xlsx', '?dryRun=true'), 415, -415, message);
      const job = await ended(c, await upload(c, file, 'deep.xlsx', '?async=true'));
      expect(job).toMatchObject({ state: 'failed', rowsDone: 0 });
      expect(job.error).toMatch(/^The workbook XML nests elements more than 64 deep/);
    }, 120_000);

    it('shared strings nested 100,000 deep: 415 naming xl/sharedStrings.xml', async () => {
      const c = await ctx().createCustomer();
      const file = await withSharedStrings(0, function* () {
        yield Buffer.from('<si>');
        yield* repeated('<r>', 100_000);
        yield* repeated('</r>', 100_000);
        yield Buffer.from('</si>');
      });
      expectError(
        await upload(c, file, 'sst.xlsx', '?dryRun=true'),
        415,
        -415,
        /^The workbook XML nests elements more than 64 deep \(in xl\/sharedStrings\.xml/,
      );
    }, 60_000);

    it('a shared string of 9,000,000 empty rich-text runs (a 480 KB file): 413 naming it (upload, job), with little memory', async () => {
      const c = await ctx().createCustomer();
      const file = await withSharedStrings(1, function* () {
        yield Buffer.from('<si><t>a</t></si><si>');
        yield* repeated('<r><rPr><b/></rPr></r>', 9_000_000);
        yield Buffer.from('</si>');
      });
      expect(file.length).toBeLessThan(600 * 1024);
      const message =
        /^Shared string 1 of the workbook \(xl\/sharedStrings\.xml, counted from 0\) is made of more than 32,767 rich-text runs, more than an Excel cell has characters; refused$/;
      const { result, growthMb } = await rssGrowth(() => upload(c, file, 'runs.xlsx'));
      expectError(result, 413, -413, message);
      expect(growthMb).toBeLessThan(300);
      const job = await ended(c, await upload(c, file, 'runs.xlsx', '?async=true'));
      expect(job).toMatchObject({ state: 'failed', rowsDone: 0 });
      expect(job.error).toBe(`${result.body._e}; no row was applied`);
    }, 120_000);

    it('10,000 rows with a cell in column XFD: read (the XFD cells ignored), also when the header names XFD', async () => {
      const c = await ctx().createCustomer();
      for (const headerToo of [false, true]) {
        const res = await upload(c, await farColumn(headerToo), 'far.xlsx', '?dryRun=true');
        expect({ status: res.status, message: res.body._e, total: res.body.totalCount, failed: res.body.failCount }).toEqual({
          status: 200,
          total: 10_000,
          failed: 0,
        });
        expect(res.body.results[9_999]).toMatchObject({ row: 10_001, sku: 'FAR-10001', name: 'Far' });
      }
    }, 120_000);

    it('rows of 16,000 empty cells after their sku: read, the empty cells ignored', async () => {
      const c = await ctx().createCustomer();
      const file = await workbook(function* () {
        yield Buffer.from(SHEET_HEAD + HEADER);
        for (let r = 2; r <= 301; r++) yield Buffer.from(`<row r="${r}"><c r="A${r}" t="inlineStr"><is><t>W${r}</t></is></c>${'<c/>'.repeat(16_000)}</row>`);
        yield Buffer.from(SHEET_TAIL);
      });
      const res = await upload(c, file, 'wide.xlsx', '?dryRun=true');
      expect({ status: res.status, message: res.body._e, total: res.body.totalCount }).toEqual({ status: 200, total: 300 });
      // A 16,385th cell in a row is still refused, empty or not.
      const over = await workbook(function* () {
        yield Buffer.from(`${SHEET_HEAD}${HEADER}<row r="2"><c r="A2"><v>1</v></c>${'<c/>'.repeat(16_384)}</row>${SHEET_TAIL}`);
      });
      expectError(await upload(c, over, 'over.xlsx', '?dryRun=true'), 413, -413, /^Row 2 has more than 16,384 cells/);
    }, 60_000);

    it('a CSV of records of 1,000,000 empty cells: 413 naming the row, before the record is built', async () => {
      const c = await ctx().createCustomer();
      const file = Buffer.from('sku,name\n' + `${','.repeat(1_000_000)}\n`.repeat(19));
      const message = /^Row 2 of the CSV file has more than 16,384 cells, the most columns \(A to XFD\) a spreadsheet has; refused$/;
      expectError(await upload(c, file, 'wide.csv'), 413, -413, message);
      expectError(await upload(c, file, 'wide.csv', '?dryRun=true'), 413, -413, message);
      // Within the bound, a wide record is read.
      const ok = Buffer.from(`sku,name\nCSV-1,Fine${','.repeat(16_000)}\n`);
      const res = await upload(c, ok, 'ok.csv', '?dryRun=true');
      expect({ status: res.status, total: res.body.totalCount }).toEqual({ status: 200, total: 1 });
    }, 60_000);

    it('the process still serves an ordinary upload', async () => {
      const c = await ctx().createCustomer();
      const res = await upload(c, await minimalXlsx(['sku', 'name', 'url'], 1, () => ['AFTER', 'Fine', 'https://shop.example.com/after']), 'fine.xlsx');
      expect({ status: res.status, created: res.body.createCount }).toEqual({ status: 200, created: 1 });
    }, 30_000);
  },
  { IMPORT_JOB_POLL_MS: '100', EXCEL_PARSE_TIMEOUT_MS: '5000' },
);
