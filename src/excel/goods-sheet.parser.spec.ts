import * as ExcelJS from 'exceljs';
import { csv, minimalXlsx, MINIMAL_PARTS, noise, pngBytes, rowXml, xlsx, zip, zipBombXlsx, zeros } from '../../test/support/sheet-fixtures';
import { fieldOfHeader, GOODS_COLUMNS, normalizeHeader } from './goods-sheet.columns';
import { collectGoodsSheet, detectFormat, GoodsSheet, parseGoodsSheet, SheetLimits } from './goods-sheet.parser';
import { buildGoodsTemplate } from './goods-template';
import { SheetError, SheetRefusal } from './sheet-error';
import { RawSheetEvent } from './sheet-rows';
import { firstSheetPath } from './xlsx-archive';
import { MAX_SHARED_STRINGS, plainCellValue } from './xlsx-rows';

const LIMITS: SheetLimits = { maxRows: 10_000, maxUncompressedBytes: 200 * 1024 * 1024, timeoutMs: 30_000 };
const HEADER = GOODS_COLUMNS.map((c) => c.field);
const KOREAN = GOODS_COLUMNS.map((c) => c.label);

function parse(buffer: Buffer, filename = 'goods.xlsx', limits: Partial<SheetLimits> = {}, mimetype?: string): Promise<GoodsSheet> {
  return parseGoodsSheet({ buffer, filename, mimetype }, { ...LIMITS, ...limits });
}

async function refusal(promise: Promise<unknown>): Promise<SheetError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(SheetError);
    return err as SheetError;
  }
  throw new Error('expected a SheetError');
}

function rowsOf(sheet: GoodsSheet): Array<[number, Record<string, unknown>]> {
  return sheet.rows.map((r) => [r.row, r.values]);
}

const SHEET_XML_HEAD =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>';
const SHEET_XML_TAIL = '</sheetData></worksheet>';

describe('goods sheet columns', () => {
  it.each([
    ['sku', 'sku'],
    ['SKU', 'sku'],
    [' Original Price ', 'originalPrice'],
    ['media_url', 'mediaUrl'],
    ['discount-percentage', 'discountPercentage'],
    ['상품코드', 'sku'],
    ['상품 코드', 'sku'],
    ['상품명 (필수)', 'name'],
    ['name*', 'name'],
    ['상품URL', 'url'],
    ['상품url', 'url'],
    ['이미지URL', 'mediaUrl'],
    ['정가', 'originalPrice'],
    ['할인가', 'discountedPrice'],
    ['할인율', 'discountPercentage'],
    ['상품ID', 'id'],
    ['ｓｋｕ', 'sku'],
  ])('header %p names %p', (header, field) => {
    expect(fieldOfHeader(header)).toBe(field);
  });

  it.each(['Color', '재고', 'price', 'id2', ''])('header %p names no field', (header) => {
    expect(fieldOfHeader(header)).toBeUndefined();
  });

  it('every field and Korean label of the documented header is known', () => {
    expect(HEADER).toEqual(['id', 'sku', 'url', 'name', 'brand', 'description', 'mediaUrl', 'originalPrice', 'discountedPrice', 'discountPercentage']);
    expect(KOREAN).toEqual(['상품ID', '상품코드', '상품URL', '상품명', '브랜드', '설명', '이미지URL', '정가', '할인가', '할인율']);
    expect(normalizeHeader('Discounted Price')).toBe('discountedprice');
  });
});

describe('detectFormat', () => {
  const xlsxBytes = Buffer.from('PK\x03\x04rest', 'latin1');
  it.each([
    [xlsxBytes, 'goods.xlsx', undefined, 'xlsx'],
    [xlsxBytes, 'goods.csv', undefined, 'xlsx'],
    [xlsxBytes, 'noname', 'application/octet-stream', 'xlsx'],
    [Buffer.from('sku\n'), 'goods.csv', undefined, 'csv'],
    [Buffer.from('sku\n'), 'GOODS.CSV', undefined, 'csv'],
    [Buffer.from('sku\n'), 'goods.tsv', undefined, 'csv'],
    [Buffer.from('sku\n'), 'upload', 'text/csv', 'csv'],
    [Buffer.from('sku\n'), 'upload', 'text/csv; charset=utf-8', 'csv'],
  ])('%p named %p (%p) is %p', (buffer, filename, mimetype, format) => {
    expect(detectFormat({ buffer, filename, mimetype })).toBe(format);
  });

  it.each([
    [Buffer.alloc(0), 'goods.xlsx', /empty/],
    [Buffer.from('sku,name\nA,B\n'), 'goods.xlsx', /named goods\.xlsx but is not an \.xlsx/],
    [Buffer.from('sku,name\nA,B\n'), 'goods', /neither/],
    [Buffer.from('sku,name\nA,B\n'), 'goods.xls', /not an \.xlsx/],
    [pngBytes(), 'goods.xlsx', /PNG/],
    [Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2]), 'goods.csv', /JPEG/],
    [Buffer.from('%PDF-1.7\n'), 'goods.csv', /PDF/],
    [Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0]), 'goods.xls', /legacy \.xls/],
    [Buffer.from('PK\x05\x06' + '\0'.repeat(18), 'latin1'), 'goods.xlsx', /empty zip/],
  ])('refuses %#: %p', (buffer, filename, message) => {
    let error: unknown;
    try {
      detectFormat({ buffer, filename });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SheetError);
    expect((error as SheetError).refusal).toBe(SheetRefusal.Unsupported);
    expect((error as SheetError).message).toMatch(message);
  });
});

describe('parseGoodsSheet: .xlsx', () => {
  it('reads English headers: rows keyed by field, numbered as in the sheet', async () => {
    const sheet = await parse(
      await xlsx([
        HEADER,
        [null, 'SW-7', 'https://shop.example.com/SW-7', '스마트 워치 7', 'Sampletech', '45 mm', null, 399000, 359100.5, 10],
        [],
        [5, null, null, 'Only a name'],
      ]),
    );
    expect(sheet.format).toBe('xlsx');
    expect(sheet.columns.map((c) => [c.column, c.field])).toEqual(HEADER.map((f, i) => [String.fromCharCode(65 + i), f]));
    expect(sheet.ignoredColumns).toEqual([]);
    expect(rowsOf(sheet)).toEqual([
      [
        2,
        {
          sku: 'SW-7',
          url: 'https://shop.example.com/SW-7',
          name: '스마트 워치 7',
          brand: 'Sampletech',
          description: '45 mm',
          originalPrice: 399000,
          discountedPrice: 359100.5,
          discountPercentage: 10,
        },
      ],
      [4, { id: 5, name: 'Only a name' }],
    ]);
  });

  it('reads Korean headers in any order; unknown columns are ignored and reported once', async () => {
    const sheet = await parse(
      await xlsx([
        ['메모', '할인율', '상품명', 'Color', '상품코드', '메모', '상품URL'],
        ['note', 5, '린넨 셔츠', 'white', 'LS-1', 'again', 'https://shop.example.com/LS-1'],
      ]),
    );
    expect(sheet.columns.map((c) => `${c.column}:${c.field}`)).toEqual(['B:discountPercentage', 'C:name', 'E:sku', 'G:url']);
    expect(sheet.ignoredColumns).toEqual(['메모', 'Color']);
    expect(rowsOf(sheet)).toEqual([[2, { discountPercentage: 5, name: '린넨 셔츠', sku: 'LS-1', url: 'https://shop.example.com/LS-1' }]]);
  });

  it('skips a second header row of labels, blank rows and rows with only unknown columns', async () => {
    const sheet = await parse(
      await xlsx([
        [...HEADER, 'memo'],
        [...KOREAN, '메모'],
        [null, null, null, null, null, '   '],
        [null, null, null, null, null, null, null, null, null, null, 'only a memo'],
        [null, 'A'],
      ]),
    );
    expect(rowsOf(sheet)).toEqual([[5, { sku: 'A' }]]);
  });

  it('turns numbers, numeric text, currency text, rich text, formulas, errors, dates and booleans into plain values', async () => {
    const sheet = await parse(
      await xlsx(
        [
          ['sku', 'name', 'brand', 'originalPrice', 'discountedPrice', 'discountPercentage', 'description', 'id'],
          [
            12345,
            { richText: [{ text: 'Bold ' }, { text: 'name', font: { bold: true } }] },
            true,
            '₩39,000',
            '1,234.50',
            '15%',
            new Date(Date.UTC(2024, 0, 31)),
            '42',
          ],
          [
            'F',
            { formula: 'A3&"x"', result: 'Fx' },
            { formula: '1/0', result: { error: '#DIV/0!' } },
            { formula: 'B2*2' },
            { formula: '10*2', result: 20 },
            0.125,
            { error: '#N/A' },
            7,
          ],
          ['C', 'c', 'c', 'KRW 1000', '12,000원', ' 7.5 % ', 'text', '8'],
          ['P', 'p', 'p', '1.2.3', 'abc', 'ten', 'x', 'abc'],
        ],
        { numFmts: { 6: '0.0%' } },
      ),
    );
    expect(rowsOf(sheet)).toEqual([
      [
        2,
        {
          sku: '12345',
          name: 'Bold name',
          brand: 'TRUE',
          originalPrice: '39000',
          discountedPrice: '1234.50',
          discountPercentage: '15',
          description: '2024-01-31',
          id: '42',
        },
      ],
      [3, { sku: 'F', name: 'Fx', brand: '=1/0', originalPrice: '=B2*2', discountedPrice: 20, discountPercentage: 12.5, description: '#N/A', id: 7 }],
      [4, { sku: 'C', name: 'c', brand: 'c', originalPrice: '1000', discountedPrice: '12000', discountPercentage: '7.5', description: 'text', id: '8' }],
      // Text that is no plain amount is passed on as it is: the writer reports the row.
      [5, { sku: 'P', name: 'p', brand: 'p', originalPrice: '1.2.3', discountedPrice: 'abc', discountPercentage: 'ten', description: 'x', id: 'abc' }],
    ]);
  });

  it('a percentage-formatted cell counts in percent (10% is 10, not 0.1); a plain number is taken as it is', async () => {
    const sheet = await parse(
      await xlsx(
        [
          ['sku', 'discountPercentage', 'originalPrice'],
          ['A', 0.1, 0.5],
          ['B', 0.123456, 12],
        ],
        { numFmts: { 2: '0%', 3: '"₩"#,##0.00' } },
      ),
    );
    expect(rowsOf(sheet)).toEqual([
      [2, { sku: 'A', discountPercentage: 10, originalPrice: 0.5 }],
      [3, { sku: 'B', discountPercentage: 12.3456, originalPrice: 12 }],
    ]);
    const plain = await parse(
      await xlsx([
        ['sku', 'discountPercentage'],
        ['A', 10],
      ]),
    );
    expect(plain.rows[0].values.discountPercentage).toBe(10);
  });

  it('a hyperlink cell in a URL column gives its link when its text is not a URL; other cells keep their text', async () => {
    const sheet = await parse(
      await xlsx([
        ['sku', 'url', 'mediaUrl', 'name'],
        [
          'A',
          { text: '상품 페이지', hyperlink: 'https://shop.example.com/a' },
          { text: 'https://cdn.example.com/shown.jpg', hyperlink: 'https://cdn.example.com/target.jpg' },
          { text: 'Named', hyperlink: 'https://shop.example.com/named' },
        ],
        ['B', 'no link', null, 'b'],
      ]),
    );
    expect(rowsOf(sheet)).toEqual([
      [2, { sku: 'A', url: 'https://shop.example.com/a', mediaUrl: 'https://cdn.example.com/shown.jpg', name: 'Named' }],
      [3, { sku: 'B', url: 'no link', name: 'b' }],
    ]);
  });

  it('applies a hyperlink over a range of cells, and ignores links inside the workbook', async () => {
    const sheetXml =
      '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ' +
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheetData>' +
      rowXml(1, ['sku', 'url']) +
      rowXml(2, ['A', 'Link']) +
      rowXml(3, ['B', 'Link']) +
      rowXml(4, ['C', 'Sheet2!A1']) +
      '</sheetData><hyperlinks><hyperlink ref="B2:B3" r:id="rId1"/><hyperlink ref="B4" location="Sheet2!A1"/></hyperlinks></worksheet>';
    const sheetRels =
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" ' +
      'Target="https://shop.example.com/range?a=1&amp;b=2" TargetMode="External"/></Relationships>';
    const file = await zip([
      { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
      { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
      { name: 'xl/worksheets/sheet1.xml', data: sheetXml },
      { name: 'xl/worksheets/_rels/sheet1.xml.rels', data: sheetRels },
    ]);
    expect(rowsOf(await parse(file))).toEqual([
      [2, { sku: 'A', url: 'https://shop.example.com/range?a=1&b=2' }],
      [3, { sku: 'B', url: 'https://shop.example.com/range?a=1&b=2' }],
      [4, { sku: 'C', url: 'Sheet2!A1' }],
    ]);
  });

  it('reads inline strings and a sheet written without shared strings', async () => {
    const sheet = await parse(await minimalXlsx(['sku', 'name'], 2, (i) => [`S-${i}`, `이름 ${i} & <b>`]));
    expect(rowsOf(sheet)).toEqual([
      [2, { sku: 'S-0', name: '이름 0 & <b>' }],
      [3, { sku: 'S-1', name: '이름 1 & <b>' }],
    ]);
    const noShared = await parse(
      await xlsx(
        [
          ['sku', 'name'],
          ['A', '가나다'],
        ],
        { sharedStrings: false },
      ),
    );
    expect(rowsOf(noShared)).toEqual([[2, { sku: 'A', name: '가나다' }]]);
  });

  it('keeps Hangul intact where the inflated XML splits a character between two chunks', async () => {
    // Many distinct Korean strings: shared strings and sheet XML span many 16 kB inflate chunks, so
    // 3-byte characters do fall on chunk boundaries.
    const n = 3000;
    const name = (i: number) => `스마트 워치 ${i} 무선 이어폰 린넨 셔츠 커피 그라인더 ${'가'.repeat(i % 7)}`;
    const rows: ExcelJS.CellValue[][] = [['sku', 'name']];
    for (let i = 0; i < n; i++) rows.push([`K-${i}`, name(i)]);
    const shared = await parse(await xlsx(rows));
    expect(shared.rows).toHaveLength(n);
    shared.rows.forEach((r, i) => {
      if (r.values.name !== name(i)) throw new Error(`row ${r.row}: ${String(r.values.name)}`);
    });
    const inline = await parse(await minimalXlsx(['sku', 'name'], n, (i) => [`K-${i}`, name(i)]));
    inline.rows.forEach((r, i) => {
      if (r.values.name !== name(i)) throw new Error(`row ${r.row}: ${String(r.values.name)}`);
    });
  });

  it('reads the first sheet in tab order only', async () => {
    const sheet = await parse(await xlsx([['sku'], ['FIRST']], { extraSheets: [{ name: 'Other', rows: [['sku'], ['SECOND']] }] }));
    expect(rowsOf(sheet)).toEqual([[2, { sku: 'FIRST' }]]);

    // Tab order puts sheet2.xml first: that one is read, whatever the part names.
    const workbook = MINIMAL_PARTS.WORKBOOK.replace(
      '<sheet name="Goods" sheetId="1" r:id="rId1"/>',
      '<sheet name="Front" sheetId="2" r:id="rId2"/><sheet name="Goods" sheetId="1" r:id="rId1"/>',
    );
    const rels = MINIMAL_PARTS.WORKBOOK_RELS.replace(
      '</Relationships>',
      '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="/xl/worksheets/front.xml"/></Relationships>',
    );
    const file = await zip([
      { name: 'xl/workbook.xml', data: workbook },
      { name: 'xl/_rels/workbook.xml.rels', data: rels },
      { name: 'xl/worksheets/sheet1.xml', data: SHEET_XML_HEAD + rowXml(1, ['sku']) + rowXml(2, ['BACK']) + SHEET_XML_TAIL },
      { name: 'xl/worksheets/front.xml', data: SHEET_XML_HEAD + rowXml(1, ['sku']) + rowXml(2, ['FRONT']) + SHEET_XML_TAIL },
    ]);
    expect(rowsOf(await parse(file))).toEqual([[2, { sku: 'FRONT' }]]);
  });

  it('reads a rich-text shared string as its plain text (escapes decoded as in plain strings, a phonetic guide left out)', async () => {
    const run = (text: string, props = '') => `<r>${props && `<rPr>${props}</rPr>`}<t xml:space="preserve">${text}</t></r>`;
    const strings =
      '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>sku</t></si><si><t>name</t></si>' +
      `<si>${run('Bold ', '<b/><sz val="11"/><color rgb="FF0000FF"/><rFont val="Calibri"/>')}${run('line_x000D_')}<r/>${run('two', '<i/>')}</si>` +
      `<si>${run('x', '<u/>').repeat(2000)}<rPh sb="0" eb="1"><t>y</t></rPh></si></sst>`;
    const shared = (r: number, i: number, col: string) => `<c r="${col}${r}" t="s"><v>${i}</v></c>`;
    const file = await zip([
      { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
      { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
      { name: 'xl/sharedStrings.xml', data: strings },
      {
        name: 'xl/worksheets/sheet1.xml',
        data:
          SHEET_XML_HEAD +
          `<row r="1">${shared(1, 0, 'A')}${shared(1, 1, 'B')}</row>` +
          rowXml(2, ['R1']).replace('</row>', `${shared(2, 2, 'B')}</row>`) +
          rowXml(3, ['R2']).replace('</row>', `${shared(3, 3, 'B')}</row>`) +
          SHEET_XML_TAIL,
      },
    ]);
    const rows = rowsOf(await parse(file));
    expect(rows[0]).toEqual([2, { sku: 'R1', name: 'Bold line\rtwo' }]);
    // A phonetic guide (rPh) is no part of the text.
    expect(rows[1][1].name === 'x'.repeat(2000)).toBe(true);
  });

  it('never reads data hidden outside the central directory', async () => {
    const file = await zip([
      { name: 'xl/sharedStrings.xml', data: '<<< not xml at all', hidden: true },
      { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
      { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
      { name: 'xl/worksheets/sheet1.xml', data: SHEET_XML_HEAD + rowXml(1, ['sku']) + rowXml(2, ['SEEN']) + SHEET_XML_TAIL },
    ]);
    expect(rowsOf(await parse(file))).toEqual([[2, { sku: 'SEEN' }]]);
  });

  it('the template built for downloads parses to its header and no rows (the example is on another sheet)', async () => {
    const sheet = await parse(await buildGoodsTemplate({ maxRows: 10_000, uploadMaxBytes: 20 * 1024 * 1024 }));
    expect(sheet.columns.map((c) => c.field)).toEqual(HEADER);
    expect(sheet.ignoredColumns).toEqual([]);
    expect(rowsOf(sheet)).toEqual([]);
  });

  describe('refusals', () => {
    it.each([
      [
        'a header without a key column',
        [
          ['name', 'brand'],
          ['A', 'B'],
        ],
        /key columns id \(상품ID\), sku \(상품코드\), url \(상품URL\); it names name, brand/,
      ],
      [
        'a field twice',
        [
          ['sku', 'name', '상품명'],
          ['A', 'B', 'C'],
        ],
        /Columns B \(name\) and C \(상품명\) both hold name/,
      ],
      ['no header in row 1', [[], ['sku'], ['A']], /Row 1 must be the header/],
      ['an empty sheet', [], /empty/],
    ])('%s is a bad layout', async (_, rows, message) => {
      const err = await refusal(parse(await xlsx(rows)));
      expect(err.refusal).toBe(SheetRefusal.BadLayout);
      expect(err.message).toMatch(message);
    });

    it('more data rows than the cap is too large; blank rows and the header do not count toward it', async () => {
      const rows: ExcelJS.CellValue[][] = [['sku']];
      for (let i = 0; i < 5; i++) rows.push([`R-${i}`], []);
      expect((await parse(await xlsx(rows), 'goods.xlsx', { maxRows: 5 })).rows).toHaveLength(5);
      rows.push(['R-5']);
      const err = await refusal(parse(await xlsx(rows), 'goods.xlsx', { maxRows: 5 }));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/more than 5 data rows/);
    });

    it('a row repeating the column names is skipped wherever it comes, in either spelling (two exports pasted together)', async () => {
      const rows: ExcelJS.CellValue[][] = [
        ['sku', 'url', 'name'],
        ['H-1', 'https://shop.example.com/h1', 'one'],
        ['sku', 'url', 'name'],
        ['H-2', 'https://shop.example.com/h2', 'two'],
        ['상품코드', '상품URL', '상품명'],
        ['H-3', 'https://shop.example.com/h3', 'three'],
        // A row with one of its cells naming its column is data (a product may be called "name").
        ['H-4', 'https://shop.example.com/h4', 'name'],
      ];
      const parsed = await parse(await xlsx(rows), 'goods.xlsx');
      expect(parsed.rows.map((r) => [r.row, r.values.sku, r.values.name])).toEqual([
        [2, 'H-1', 'one'],
        [4, 'H-2', 'two'],
        [6, 'H-3', 'three'],
        [7, 'H-4', 'name'],
      ]);
    });

    it('more rows without goods values than the cap, besides the data rows, is too large', async () => {
      // Skipped rows: blank, only an ignored column, or repeating the header.
      const rows: ExcelJS.CellValue[][] = [
        ['sku', 'memo'],
        ['sku', 'memo'],
      ];
      for (let i = 0; i < 5; i++) rows.push([`R-${i}`], [null, `note ${i}`]);
      rows.pop();
      expect((await parse(await xlsx(rows), 'goods.xlsx', { maxRows: 5 })).rows).toHaveLength(5);
      rows.push([null, 'one more note']);
      const err = await refusal(parse(await xlsx(rows), 'goods.xlsx', { maxRows: 5 }));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/more than 5 rows without goods values .* besides its data rows; reading stopped at row 12\b/);
    });

    it('stops reading at the first row without values over the cap: what follows is never parsed', async () => {
      // 10,001 empty <row> elements, then 1 MB of comments (short ones: a comment past 64 KiB is refused), then XML that cannot be parsed.
      const file = await zip([
        { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
        { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
        {
          name: 'xl/worksheets/sheet1.xml',
          data: function* () {
            yield Buffer.from(SHEET_XML_HEAD + rowXml(1, ['sku', 'name']));
            for (let r = 2; r <= 10_002; r++) yield Buffer.from(`<row r="${r}"/>`);
            yield Buffer.from(`<!-- ${'padding '.repeat(1024)} -->`.repeat(128));
            yield Buffer.from(`<row r="10003"><c r="A10003"<<<broken`);
          },
        },
      ]);
      const err = await refusal(parse(file));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/more than 10,000 rows without goods values .* reading stopped at row 10,002\b/);
      // With a cap the blank rows stay under, the broken tail is read, and refused for what it is.
      expect((await refusal(parse(file, 'goods.xlsx', { maxRows: 20_000 }))).refusal).toBe(SheetRefusal.Unsupported);
    });

    it('stops reading a 1,000,000-row sheet at the cap, quickly', async () => {
      const file = await minimalXlsx(['sku'], 1_000_000, (i) => [i], [], 9);
      const started = Date.now();
      const err = await refusal(parse(file));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/more than 10,000 data rows/);
      expect(Date.now() - started).toBeLessThan(3000);
    }, 30_000);

    it('a zip whose entries declare more than the decompressed cap is a zip bomb (1 GiB of zeros in ~1 MB)', async () => {
      const file = await zipBombXlsx();
      expect(file.length).toBeLessThan(2 * 1024 * 1024);
      const started = Date.now();
      const err = await refusal(parse(file));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/more than 200 MB.*zeros\.bin.*zip bomb/);
      expect(Date.now() - started).toBeLessThan(1000);
    }, 30_000);

    it('the cap applies to the sum of the entries', async () => {
      const file = await minimalXlsx(['sku'], 1, () => ['A'], [
        { name: 'xl/media/a.bin', data: zeros(600 * 1024) },
        { name: 'xl/media/b.bin', data: zeros(600 * 1024) },
      ]);
      expect((await parse(file, 'goods.xlsx', { maxUncompressedBytes: 2 * 1024 * 1024 })).rows).toHaveLength(1);
      const err = await refusal(parse(file, 'goods.xlsx', { maxUncompressedBytes: 1024 * 1024 }));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
    });

    it('a part that inflates to more than it declares is refused before the XML parser sees it', async () => {
      const file = await zip([
        { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
        { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
        { name: 'xl/sharedStrings.xml', declaredSize: 64, data: () => [Buffer.from('<sst>'), ...zeros(50 * 1024 * 1024)()] },
        { name: 'xl/worksheets/sheet1.xml', data: SHEET_XML_HEAD + rowXml(1, ['sku']) + SHEET_XML_TAIL },
      ]);
      const err = await refusal(parse(file));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/more than it declares/);
    });

    it('a part that inflates to less than it declares is corrupt', async () => {
      const file = await zip([
        { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
        { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
        { name: 'xl/worksheets/sheet1.xml', declaredSize: 100_000, data: SHEET_XML_HEAD + rowXml(1, ['sku']) + SHEET_XML_TAIL },
      ]);
      expect((await refusal(parse(file))).refusal).toBe(SheetRefusal.Unsupported);
    });

    it(`more than ${MAX_SHARED_STRINGS.toLocaleString('en-US')} shared strings is too large`, async () => {
      const count = MAX_SHARED_STRINGS + 1;
      const file = await zip([
        { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
        { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
        {
          name: 'xl/sharedStrings.xml',
          level: 9,
          data: function* () {
            yield Buffer.from(`<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${count}">`);
            const batch = Buffer.from('<si><t>ab</t></si>'.repeat(10_000));
            for (let i = 0; i < count; i += 10_000) yield batch;
            yield Buffer.from('</sst>');
          },
        },
        { name: 'xl/worksheets/sheet1.xml', data: SHEET_XML_HEAD + rowXml(1, ['sku']) + SHEET_XML_TAIL },
      ]);
      const err = await refusal(parse(file));
      expect(err.refusal).toBe(SheetRefusal.TooLarge);
      expect(err.message).toMatch(/distinct strings/);
    }, 30_000);

    it.each([
      ['cut in half', async () => (await xlsx([['sku'], ['A'], ['B']])).subarray(0, 400)],
      ['cut short of its end record', async () => (await xlsx([['sku'], ['A']])).subarray(0, -30)],
      ['random bytes after a zip signature', async () => Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), noise(4096)])],
      ['a zip without a workbook', () => zip([{ name: 'hello.txt', data: 'hi' }])],
      [
        'a workbook whose first sheet is missing',
        () =>
          zip([
            { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
            { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
          ]),
      ],
      [
        'a sheet that is not XML',
        () =>
          zip([
            { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
            { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
            { name: 'xl/worksheets/sheet1.xml', data: zeros(4096) },
          ]),
      ],
    ])('%s is unsupported', async (_, build) => {
      const err = await refusal(parse(await build()));
      expect(err.refusal).toBe(SheetRefusal.Unsupported);
      expect(err.message.length).toBeGreaterThan(10);
    });

    it('a read that takes longer than the timeout is refused as unreadable', async () => {
      const file = await minimalXlsx(['sku', 'name'], 10_000, (i) => [`T-${i}`, `Timeout ${i}`]);
      const err = await refusal(parse(file, 'goods.xlsx', { timeoutMs: 1 }));
      expect(err.refusal).toBe(SheetRefusal.Unsupported);
      expect(err.message).toMatch(/could not be read within/);
    });
  });
});

describe('parseGoodsSheet: CSV', () => {
  it('reads quotes, delimiters and line breaks inside cells; row = record number (header = 1)', async () => {
    const file = csv(
      [
        ['sku', 'name', 'description', 'originalPrice'],
        ['A', 'He said "hi", twice', 'line 1\nline 2', '19.99'],
        [],
        ['B', '쉼표, 세미콜론; 탭\t', '', '₩1,000'],
      ],
      { bom: true },
    );
    const sheet = await parse(file, 'goods.csv');
    expect(sheet.format).toBe('csv');
    expect(rowsOf(sheet)).toEqual([
      [2, { sku: 'A', name: 'He said "hi", twice', description: 'line 1\nline 2', originalPrice: '19.99' }],
      [4, { sku: 'B', name: '쉼표, 세미콜론; 탭\t', originalPrice: '1000' }],
    ]);
  });

  it.each([
    ['semicolons', ';'],
    ['tabs', '\t'],
  ])('detects %s as the delimiter', async (_, delimiter) => {
    const sheet = await parse(
      csv(
        [
          ['상품코드', '상품명', '정가'],
          ['A', 'x, y', '1,500'],
        ],
        { delimiter },
      ),
      'goods.csv',
    );
    expect(rowsOf(sheet)).toEqual([[2, { sku: 'A', name: 'x, y', originalPrice: '1500' }]]);
  });

  it('reads UTF-16 with BOM and CP949 text', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('sku,name\r\nU,유니코드\r\n', 'utf16le')]);
    expect(rowsOf(await parse(utf16, 'goods.csv'))).toEqual([[2, { sku: 'U', name: '유니코드' }]]);
    // 상품 in CP949
    const cp949 = Buffer.concat([Buffer.from('sku,name\nC,'), Buffer.from([0xbb, 0xf3, 0xc7, 0xb0]), Buffer.from('\n')]);
    expect(rowsOf(await parse(cp949, 'goods.csv'))).toEqual([[2, { sku: 'C', name: '상품' }]]);
  });

  it('keeps multi-byte text split across the 64 kB slices it is fed in', async () => {
    const rows: string[][] = [['sku', 'name']];
    for (let i = 0; i < 5000; i++) rows.push([`K-${i}`, `한글 상품명 ${i} ${'가나다라'.repeat(i % 5)}`]);
    const sheet = await parse(csv(rows), 'goods.csv');
    sheet.rows.forEach((r, i) => {
      if (r.values.name !== rows[i + 1][1]) throw new Error(`row ${r.row}: ${String(r.values.name)}`);
    });
  });

  it.each([
    ['binary data', noise(4096), /binary/],
    ['a PNG', pngBytes(), /PNG/],
    ['text in no known encoding', Buffer.from([0x73, 0x6b, 0x75, 0x0a, 0xff, 0xfe, 0xfd, 0x80, 0x0a]), /UTF-8/],
    ['an unclosed quote', Buffer.from('sku,name\nA,"open\n'), /malformed/],
  ])('refuses %s', async (_, buffer, message) => {
    const err = await refusal(parse(buffer, 'goods.csv'));
    expect(err.refusal).toBe(SheetRefusal.Unsupported);
    expect(err.message).toMatch(message);
  });

  it('20 MB of empty lines is too large: it stops at the first blank row over the cap', async () => {
    const file = Buffer.concat([Buffer.from('sku,name,url\n'), Buffer.alloc(20 * 1000 * 1000, '\n')]);
    const err = await refusal(parse(file, 'blank.csv'));
    expect(err.refusal).toBe(SheetRefusal.TooLarge);
    expect(err.message).toMatch(/more than 10,000 rows without goods values .* reading stopped at row 10,002\b/);
  });

  it('never parses what follows the blank row over the cap', async () => {
    // Blank records of the header's width, then a quote left open at the end of the file.
    const file = Buffer.from(`sku,name,url\n${',,\n'.repeat(350_000)}A,"never closed`);
    const err = await refusal(parse(file, 'blank.csv', { maxRows: 100 }));
    expect(err.refusal).toBe(SheetRefusal.TooLarge);
    expect(err.message).toMatch(/more than 100 rows without goods values .* reading stopped at row 102\b/);
    // The same tail after fewer blank rows is read, and refused for what it is.
    const short = Buffer.from(`sku,name,url\n${',,\n'.repeat(100)}A,"never closed`);
    expect((await refusal(parse(short, 'blank.csv', { maxRows: 100 }))).message).toMatch(/malformed/);
  });

  it('stops at the row cap', async () => {
    const lines = ['sku'];
    for (let i = 0; i < 1_000_000; i++) lines.push(`C${i}`);
    const started = Date.now();
    const err = await refusal(parse(Buffer.from(lines.join('\n')), 'goods.csv'));
    expect(err.refusal).toBe(SheetRefusal.TooLarge);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('collectGoodsSheet', () => {
  const header: RawSheetEvent = { kind: 'row', row: { row: 1, cells: [{ value: 'sku' }, { value: 'memo' }] } };
  const data = (row: number): RawSheetEvent => ({ kind: 'row', row: { row, cells: [{ value: `S-${row}` }] } });
  const blank = (row: number): RawSheetEvent => ({ kind: 'row', row: { row, cells: [] } });
  const memoOnly = (row: number): RawSheetEvent => ({ kind: 'row', row: { row, cells: [undefined, { value: 'note' }] } });

  async function* events(list: RawSheetEvent[]): AsyncGenerator<RawSheetEvent> {
    yield* list;
  }

  it('takes as many rows without values as the cap allows besides as many data rows', async () => {
    const rows = [header, data(2), blank(3), data(4), memoOnly(5), data(6), blank(7)];
    expect((await collectGoodsSheet('csv', events(rows), 3)).rows.map((r) => r.row)).toEqual([2, 4, 6]);
    const err = await refusal(collectGoodsSheet('csv', events([...rows, blank(8)]), 3));
    expect(err.refusal).toBe(SheetRefusal.TooLarge);
    expect(err.message).toMatch(/more than 3 rows without goods values/);
  });

  it('pulls no row past the one over the cap, and closes the reader', async () => {
    let pulled = 0;
    let closed = false;
    async function* millionBlankRows(): AsyncGenerator<RawSheetEvent> {
      try {
        yield header;
        for (let row = 2; row <= 1_000_001; row++) {
          pulled += 1;
          yield blank(row);
        }
      } finally {
        closed = true;
      }
    }
    const err = await refusal(collectGoodsSheet('csv', millionBlankRows(), 100));
    expect(err.refusal).toBe(SheetRefusal.TooLarge);
    expect(err.message).toMatch(/reading stopped at row 102\b/);
    expect(pulled).toBe(101);
    expect(closed).toBe(true);
  });
});

describe('helpers', () => {
  it('plainCellValue', () => {
    expect(plainCellValue(null)).toBeUndefined();
    expect(plainCellValue(Number.NaN)).toBeUndefined();
    expect(plainCellValue({ richText: [{ text: 'a' }, { text: null }, { text: 'b' }] })).toBe('ab');
    expect(plainCellValue({ formula: 'A1', result: 3 })).toBe(3);
    expect(plainCellValue({ formula: 'A1', result: Number.NaN })).toBe('=A1');
    expect(plainCellValue({ sharedFormula: 'B2', result: 'x' })).toBe('x');
    expect(plainCellValue({ error: '#REF!' })).toBe('#REF!');
  });

  it('firstSheetPath follows workbook.xml and its rels', () => {
    expect(firstSheetPath(MINIMAL_PARTS.WORKBOOK, MINIMAL_PARTS.WORKBOOK_RELS)).toBe('xl/worksheets/sheet1.xml');
    const prefixed = '<x:workbook xmlns:x="m" xmlns:rel="r"><x:sheets><x:sheet name="a&amp;b" sheetId="3" rel:id="R7"/></x:sheets></x:workbook>';
    const rels = `<Relationships><Relationship Id="R1" Target="worksheets/sheet1.xml"/><Relationship Target='../xl/worksheets/s7.xml' Id='R7'/></Relationships>`;
    expect(firstSheetPath(prefixed, rels)).toBe('xl/worksheets/s7.xml');
    expect(firstSheetPath('<workbook/>', rels)).toBeUndefined();
  });
});
