import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { csv, MINIMAL_PARTS, rowXml, xlsx, zip } from '../../test/support/sheet-fixtures';
import { GoodsSheetRow, parseGoodsSheet, SheetLimits, streamGoodsSheet, surveyGoodsSheet } from './goods-sheet.parser';
import { csvCell } from './import-jobs.service';
import { SheetError } from './sheet-error';
import type { ParsedElement } from '../sync/element-parser';
import { countSheetRows, readJobSheet } from './sheet-reader';

/** Import jobs read their stored upload in two passes (survey, then stream): the rows must be those of the in-memory parser. */

const LIMITS: SheetLimits = { maxRows: 10_000, maxUncompressedBytes: 200 * 1024 * 1024, timeoutMs: 30_000 };
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'livegoods-stored-sheet-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function store(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

async function twoPasses(bytes: Buffer, filename: string, limits: SheetLimits = LIMITS): Promise<{ dataRows: number; rows: GoodsSheetRow[] }> {
  const file = { path: store(filename, bytes), filename };
  const survey = await surveyGoodsSheet(file, limits, 5);
  const rows: GoodsSheetRow[] = [];
  for await (const row of streamGoodsSheet(file, survey, limits, 5)) rows.push(row);
  return { dataRows: survey.dataRows, rows };
}

describe('a stored sheet read in two passes', () => {
  it('CSV (UTF-8 with BOM, semicolons, quoted line breaks, blank lines): the same rows as the in-memory parser', async () => {
    const bytes = csv(
      [['sku', 'name', 'url', 'Color'], ['A', 'multi\nline', 'https://shop.example.com/a', 'red'], [], ['B', '상품 "B"', 'https://shop.example.com/b', '']],
      { bom: true, delimiter: ';' },
    );
    const memory = await parseGoodsSheet({ buffer: bytes, filename: 'a.csv' }, LIMITS);
    const stored = await twoPasses(bytes, 'a.csv');
    expect(stored.rows).toEqual(memory.rows);
    expect(stored.dataRows).toBe(2);
  });

  it('CSV in CP949 and in UTF-16: decoded while streaming, Hangul split across reads intact', async () => {
    const lines = ['sku,name'];
    for (let i = 0; i < 30_000; i++) lines.push(`K-${i},상품 ${i}`);
    const text = lines.join('\n');
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const stored = await twoPasses(utf16, 'u16.csv', { ...LIMITS, maxRows: 50_000 });
    expect(stored.rows).toHaveLength(30_000);
    expect(stored.rows[29_999]).toEqual({ row: 30_001, values: { sku: 'K-29999', name: '상품 29999' } });
    const cp949 = Buffer.concat([Buffer.from('sku,name\nC,'), Buffer.from([0xbb, 0xf3, 0xc7, 0xb0]), Buffer.from('\n')]);
    expect((await twoPasses(cp949, 'cp949.csv')).rows).toEqual([{ row: 2, values: { sku: 'C', name: '상품' } }]);
  });

  it('.xlsx: links stored after the rows resolve URL cells in the second pass', async () => {
    const sheetXml =
      '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ' +
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheetData>' +
      rowXml(1, ['sku', 'url']) +
      rowXml(2, ['A', 'Link']) +
      rowXml(3, ['B', 'https://shop.example.com/b']) +
      '</sheetData><hyperlinks><hyperlink ref="B2" r:id="rId1"/></hyperlinks></worksheet>';
    const sheetRels =
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" ' +
      'Target="https://shop.example.com/linked" TargetMode="External"/></Relationships>';
    const file = await zip([
      { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
      { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
      { name: 'xl/worksheets/sheet1.xml', data: sheetXml },
      { name: 'xl/worksheets/_rels/sheet1.xml.rels', data: sheetRels },
    ]);
    expect((await twoPasses(file, 'links.xlsx')).rows).toEqual([
      { row: 2, values: { sku: 'A', url: 'https://shop.example.com/linked' } },
      { row: 3, values: { sku: 'B', url: 'https://shop.example.com/b' } },
    ]);
  });

  it('the survey refuses what the in-memory parser refuses: a row limit (marked as such), a header without a key column', async () => {
    const rows = [['sku'], ...Array.from({ length: 11 }, (_, i) => [`S-${i}`])];
    const err = await surveyGoodsSheet({ path: store('many.xlsx', await xlsx(rows)), filename: 'many.xlsx' }, { ...LIMITS, maxRows: 10 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SheetError);
    expect((err as SheetError).tooManyRows).toBe(true);
    expect((err as SheetError).message).toMatch(/more than 10 data rows/);
    const header = await surveyGoodsSheet({ path: store('nokey.csv', csv([['name'], ['x']])), filename: 'nokey.csv' }, LIMITS).catch((e: unknown) => e);
    expect((header as SheetError).tooManyRows).toBe(false);
    expect((header as SheetError).message).toMatch(/key columns/);
  });
});

describe('an import job reading its stored file', () => {
  it('takes the count the upload took instead of counting the file again; a CSV has no quick count', async () => {
    const path = store('job.xlsx', await xlsx([['sku', 'name'], ['J-1', 'One'], [], ['J-2', 'Two']]));
    const counted = await countSheetRows({ path, filename: 'job.xlsx' }, LIMITS);
    expect(counted).toEqual({ valueRows: 2, rows: 2, hasLinks: false });
    expect(await countSheetRows({ path: store('job.csv', csv([['sku'], ['C-1']])), filename: 'job.csv' }, LIMITS)).toBeNull();

    const read = async (given?: typeof counted) => {
      const sheet = await readJobSheet({ path, filename: 'job.xlsx' }, LIMITS, 0, given ?? undefined);
      const rows: ParsedElement[] = [];
      for await (const row of sheet.rows) rows.push(row);
      return { dataRows: sheet.dataRows, exact: sheet.exact, finalDataRows: sheet.finalDataRows, rows: rows.map((r) => r.row) };
    };
    expect(await read()).toEqual({ dataRows: 2, exact: false, finalDataRows: 2, rows: [2, 4] });
    expect(await read(counted)).toEqual({ dataRows: 2, exact: false, finalDataRows: 2, rows: [2, 4] });
    // A count the file does not match shows that the given one is used, not a new one (the rows are read all the same).
    expect(await read({ valueRows: 7, rows: 9, hasLinks: false })).toEqual({ dataRows: 7, exact: false, finalDataRows: 2, rows: [2, 4] });
    // One telling of hyperlinks, or more rows than a job takes, still means a full survey first.
    expect(await read({ valueRows: 7, rows: 9, hasLinks: true })).toMatchObject({ dataRows: 2, exact: true });
    expect(await read({ valueRows: 7, rows: LIMITS.maxRows + 1, hasLinks: false })).toMatchObject({ dataRows: 2, exact: true });
  }, 120_000); // small files, but read on worker threads: a heavily loaded machine may take long to start them

  it('hands its rows over validated as sync elements: a write, or a FAIL row whose over-long text is shown cut', async () => {
    const long = 'N'.repeat(30_000);
    const path = store(
      'validated.csv',
      csv([
        ['sku', 'name', 'originalPrice'],
        ['V-1', 'Valid one', '1200'],
        ['V-2', long, '10'],
        ['V-3', 'Bad price', 'abc'],
      ]),
    );
    const sheet = await readJobSheet({ path, filename: 'validated.csv' }, LIMITS, 0);
    const rows: ParsedElement[] = [];
    for await (const row of sheet.rows) rows.push(row);
    expect(rows.map((r) => r.row)).toEqual([2, 3, 4]);
    expect(rows[0].error).toBeUndefined();
    expect(rows[0].write).toMatchObject({ sku: 'V-1', name: 'Valid one', originalPrice: 1200 });
    expect(rows[1].write).toBeUndefined();
    expect(rows[1].echo).toMatchObject({ sku: 'V-2', name: `${'N'.repeat(256)}…` });
    expect(rows[1].error).toMatch(/name is shown cut to its first 256 of 30,000 characters/);
    expect(rows[2].write).toBeUndefined();
    expect(rows[2].error).toMatch(/originalPrice/);
  }, 120_000);
});

describe('csvCell (failures CSV)', () => {
  it.each([
    [null, ''],
    [undefined, ''],
    [12.5, '12.5'],
    [true, 'true'],
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['=HYPERLINK("x")', '"\'=HYPERLINK(""x"")"'],
    ['-5', "'-5"],
    ['@sum', "'@sum"],
  ])('%j → %s', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });
});
