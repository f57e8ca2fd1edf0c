import type { Response } from 'supertest';
import { csv, minimalXlsx, rowXml, streamedXlsx } from './support/sheet-fixtures';
import { describeEngines, TestCustomer } from './support/test-app';
import { expectSheetError, sheetUploads } from './support/sheet-uploads';

/**
 * Cells no spreadsheet program writes (docs/api-reference.md, spreadsheet limits): a 150,000,000-character
 * cell (148 KB compressed) took the reading thread's heap with it, and on an import job's worker the
 * whole process (a crash loop, as every node claimed the job again); a FAIL row echoed it whole.
 */

const SHEET_HEAD =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' +
  '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>' +
  rowXml(1, ['sku', 'name', 'url']);
const SHEET_TAIL = '</sheetData></worksheet>';
const HUGE = 150_000_000;

/** `count` copies of `byte`, 1 MiB at a time. */
function* repeated(byte: string, count: number): Iterable<Buffer> {
  const chunk = Buffer.alloc(1024 * 1024, byte);
  for (let left = count; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
}

/** The minimal workbook around a sheet streamed from `sheet` (and `extra` parts). */
const workbook = streamedXlsx;

function once<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () => (built ??= build());
}

/** A2 an inline string of 150,000,000 'y's. */
const inlineCell = once(() =>
  workbook(function* () {
    yield Buffer.from(`${SHEET_HEAD}<row r="2"><c r="A2" t="inlineStr"><is><t>`);
    yield* repeated('y', HUGE);
    yield Buffer.from(`</t></is></c></row>${SHEET_TAIL}`);
  }),
);

/** A2 shared string 0, of 150,000,000 'x's. */
const sharedString = once(() =>
  workbook(
    function* () {
      yield Buffer.from(`${SHEET_HEAD}<row r="2"><c r="A2" t="s"><v>0</v></c><c r="B2" t="inlineStr"><is><t>Name</t></is></c></row>${SHEET_TAIL}`);
    },
    [
      {
        name: 'xl/sharedStrings.xml',
        level: 9,
        data: function* () {
          yield Buffer.from('<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>');
          yield* repeated('x', HUGE);
          yield Buffer.from('</t></si></sst>');
        },
      },
    ],
  ),
);

/** A header row of 1,000,000 cells without references (r is optional in OOXML). */
const wideHeader = once(() =>
  workbook(function* () {
    yield Buffer.from(
      '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">',
    );
    const cells = Buffer.from('<c t="inlineStr"><is><t>c</t></is></c>'.repeat(10_000));
    for (let i = 0; i < 100; i++) yield cells;
    yield Buffer.from(`</row>${SHEET_TAIL}`);
  }),
);

describeEngines(
  'spreadsheet cells no spreadsheet program writes',
  __filename,
  (ctx) => {
    const { upload, ended } = sheetUploads(ctx);

    function expectError(res: Response, status: number, code: number, message: RegExp): void {
      expectSheetError(res, status, code, message);
      expect(res.text.length).toBeLessThan(2_000);
    }

    /** The process still serves: health, and an ordinary upload applied. */
    async function stillServing(c: TestCustomer, sku: string): Promise<void> {
      await ctx().http.get('/health').expect(200);
      const ok = await upload(c, await minimalXlsx(['sku', 'name', 'url'], 1, () => [sku, 'Fine', `https://shop.example.com/${sku}`]), 'fine.xlsx');
      expect({ status: ok.status, created: ok.body.createCount }).toEqual({ status: 200, created: 1 });
    }

    async function goodsOf(c: TestCustomer): Promise<number> {
      const [{ n }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [c.id]);
      return Number(n);
    }

    it('a 150,000,000-character inline cell: 413 naming the cell (upload, dry run), a job that fails saying so; nothing written, the process serves on', async () => {
      const c = await ctx().createCustomer();
      const file = await inlineCell();
      expect(file.length).toBeLessThan(1024 * 1024);
      const message = /^Cell A2 holds more than 32,767 characters, the most an Excel cell holds; refused$/;
      expectError(await upload(c, file, 'inline.xlsx'), 413, -413, message);
      expectError(await upload(c, file, 'inline.xlsx', '?dryRun=true'), 413, -413, message);
      const job = await ended(c, await upload(c, file, 'inline.xlsx', '?async=true'));
      expect(job).toMatchObject({ state: 'failed', rowsDone: 0 });
      expect(job.error).toMatch(/^Cell A2 holds more than 32,767 characters.*; no row was applied$/);
      expect(await goodsOf(c)).toBe(0);
      await stillServing(c, 'AFTER-INLINE');
    }, 180_000);

    it('a 150,000,000-character shared string: 413 naming it (upload, dry run), a job that fails saying so', async () => {
      const c = await ctx().createCustomer();
      const file = await sharedString();
      const message = /^Shared string 0 of the workbook \(xl\/sharedStrings\.xml, counted from 0\) holds more than 32,767 characters/;
      expectError(await upload(c, file, 'sst.xlsx'), 413, -413, message);
      expectError(await upload(c, file, 'sst.xlsx', '?dryRun=true'), 413, -413, message);
      const job = await ended(c, await upload(c, file, 'sst.xlsx', '?async=true'));
      expect(job).toMatchObject({ state: 'failed', rowsDone: 0 });
      expect(job.error).toMatch(message);
      await stillServing(c, 'AFTER-SST');
    }, 180_000);

    it('a cell over its field but within 32,767 characters is a FAIL row whose echo is cut, and its message says so', async () => {
      const c = await ctx().createCustomer();
      const sku = 's'.repeat(20_000);
      const file = await minimalXlsx(['sku', 'name', 'url'], 2, (i) =>
        i === 0 ? [sku, 'Long', 'https://shop.example.com/long'] : ['OK-1', 'Fine', 'https://shop.example.com/ok'],
      );
      for (const query of ['?dryRun=true', '']) {
        const res = await upload(c, file, 'long.xlsx', query);
        expect(res.status).toBe(200);
        expect(res.text.length).toBeLessThan(4_000);
        const [fail, ok] = res.body.results;
        expect(fail).toMatchObject({ row: 2, status: 'FAIL', sku: `${'s'.repeat(256)}…`, name: 'Long' });
        expect(fail.message).toBe('sku must be at most 128 characters (sku is shown cut to its first 256 of 20,000 characters)');
        expect(ok).toMatchObject({ row: 3, status: 'CREATE' });
      }
      // A CSV cell past what a spreadsheet cell holds is refused as in an .xlsx.
      expectError(
        await upload(
          c,
          csv([
            ['sku', 'name'],
            ['A', 'x'.repeat(40_000)],
          ]),
          'long.csv',
        ),
        413,
        -413,
        /^Cell B2 holds 40,000 characters, more than the 32,767/,
      );
      // A row of more than the longest record a CSV may have (a cell of 2 MB) likewise, not the parser's words.
      expectError(
        await upload(
          c,
          csv([
            ['sku', 'name'],
            ['A', 'x'.repeat(2_000_000)],
          ]),
          'longer.csv',
        ),
        413,
        -413,
        /^Row 2 holds more than 1,048,576 characters \(a cell holds at most 32,767, the most an Excel cell holds\); refused$/,
      );
      // The JSON sync cuts the echo the same way.
      const sync = await ctx()
        .http.post(`/v1/goods/${c.accessKey}/sync`)
        .set('Authorization', c.auth())
        .send([{ sku, name: 'Long', url: 'https://shop.example.com/l' }]);
      expect(sync.status).toBe(200);
      expect(sync.body.results[0]).toMatchObject({ status: 'FAIL', sku: `${'s'.repeat(256)}…` });
      expect(sync.body.results[0].message).toMatch(/sku is shown cut to its first 256 of 20,000 characters/);
    }, 60_000);

    it('cells without a reference are read in order; a header of 1,000,000 of them is 413 with a plain message', async () => {
      const c = await ctx().createCustomer();
      const noRefs = await workbook(function* () {
        yield Buffer.from(
          '<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>' +
            '<row><c t="inlineStr"><is><t>sku</t></is></c><c t="inlineStr"><is><t>name</t></is></c><c t="inlineStr"><is><t>url</t></is></c></row>' +
            '<row><c t="inlineStr"><is><t>NOREF-1</t></is></c><c t="inlineStr"><is><t>No ref</t></is></c><c t="inlineStr"><is><t>https://shop.example.com/noref</t></is></c></row>' +
            SHEET_TAIL,
        );
      });
      const ok = await upload(c, noRefs, 'noref.xlsx');
      expect({ status: ok.status, message: ok.body._e }).toEqual({ status: 200 });
      expect(ok.body.results[0]).toMatchObject({ row: 2, status: 'CREATE', sku: 'NOREF-1', name: 'No ref', url: 'https://shop.example.com/noref' });

      const wide = await wideHeader();
      const message = /^Row 1 has more than 16,384 cells, the most columns \(A to XFD\) an Excel sheet has; refused$/;
      expectError(await upload(c, wide, 'wide.xlsx'), 413, -413, message);
      const job = await ended(c, await upload(c, wide, 'wide.xlsx', '?async=true'));
      expect(job).toMatchObject({ state: 'failed' });
      expect(job.error).toMatch(/^Row 1 has more than 16,384 cells/);
    }, 120_000);
  },
  { IMPORT_JOB_POLL_MS: '100' },
);
