import http from 'node:http';
import { AddressInfo } from 'node:net';
import * as ExcelJS from 'exceljs';
import sharp from 'sharp';
import type { Response } from 'supertest';
import { csv, minimalXlsx, noise, pngBytes, MINIMAL_PARTS, xlsx, zip, zipBombXlsx, zeros } from './support/sheet-fixtures';
import { describeEngines, TestApp, TestCustomer } from './support/test-app';

/** POST /v1/goods/{accessKey}/excel and GET .../excel/template (docs/api-reference.md, spreadsheet import). */

type Row = Record<string, unknown> & { row: number; status: string; message: string | null; id?: number };
interface Envelope {
  results: Row[];
  totalCount: number;
  createCount: number;
  updateCount: number;
  failCount: number;
  _s: number;
}

const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const HEADER = ['id', 'sku', 'url', 'name', 'brand', 'description', 'mediaUrl', 'originalPrice', 'discountedPrice', 'discountPercentage'];
const KOREAN = ['상품ID', '상품코드', '상품URL', '상품명', '브랜드', '설명', '이미지URL', '정가', '할인가', '할인율'];
/** A hostile upload must be answered within this (fixture building excluded). */
const QUICK_MS = 5_000;

function goodsRow(n: number | string, extra: Partial<Record<string, ExcelJS.CellValue>> = {}): ExcelJS.CellValue[] {
  const values: Record<string, ExcelJS.CellValue> = {
    sku: `SKU-${n}`,
    url: `https://shop.example.com/goods/${n}`,
    name: `Item ${n}`,
    ...extra,
  };
  return HEADER.map((h) => values[h] ?? null);
}

/** Lazily built once per file: both engines use the same large fixtures. */
function once<T>(build: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= build());
}

const tenThousand = once(() =>
  minimalXlsx(['sku', 'name', 'url', 'originalPrice', 'discountPercentage'], 10_000, (i) => [
    `BULK-${i}`,
    `스마트 워치 ${i}`,
    `https://shop.example.com/bulk/${i}`,
    1000 + i + 0.5,
    i % 50,
  ]),
);
const tenThousandAndOne = once(() => minimalXlsx(['sku', 'name', 'url'], 10_001, (i) => [`OVER-${i}`, `Over ${i}`, `https://shop.example.com/over/${i}`]));
/** About 7 MB: under the upload limit, so that the row cap is what refuses it. */
const millionRowsXlsx = once(() => minimalXlsx(['sku'], 1_000_000, (i) => [i], [], 9));
const millionRowsCsv = once(async () => {
  const lines = ['sku,name'];
  for (let i = 0; i < 1_000_000; i++) lines.push(`C-${i},Row ${i}`);
  return Buffer.from(lines.join('\n'));
});
const bomb = once(zipBombXlsx);
/** Files of nothing but blank rows under a header: 19 MB of empty lines, 18 MB of `,,` lines, 1,000,000 empty <row>s. */
const blankLinesCsv = once(async () => Buffer.concat([Buffer.from('sku,name,url\n'), Buffer.alloc(19 * 1000 * 1000, '\n')]));
const blankCommasCsv = once(async () => Buffer.from(`sku,name,url\n${',,\n'.repeat(6_000_000)}`));
const blankRowsXlsx = once(() => minimalXlsx(['sku', 'name', 'url'], 1_000_000, () => []));

describeEngines(
  'POST /v1/goods/{accessKey}/excel',
  __filename,
  (ctx) => {
    function upload(c: TestCustomer, file: Buffer | undefined, filename = 'goods.xlsx', query = '') {
      const req = ctx().http.post(`/v1/goods/${c.accessKey}/excel${query}`).set('Authorization', c.auth());
      return file === undefined ? req : req.attach('file', file, { filename, contentType: 'application/octet-stream' });
    }

    /** Uploads and checks the envelope invariants of every 200 answer (as the sync spec does). */
    async function uploadOk(c: TestCustomer, file: Buffer, filename = 'goods.xlsx', query = ''): Promise<Envelope> {
      const res = await upload(c, file, filename, query);
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body)}`);
      expect(res.headers['content-type']).toMatch(/^application\/json; charset=utf-8/);
      const env = res.body as Envelope;
      expect(Object.keys(env).sort()).toEqual(['_s', 'createCount', 'failCount', 'results', 'totalCount', 'updateCount']);
      expect(env._s).toBe(0);
      expect(env.totalCount).toBe(env.results.length);
      expect(env.totalCount).toBe(env.createCount + env.updateCount + env.failCount);
      expect(env.createCount).toBe(env.results.filter((r) => r.status === 'CREATE').length);
      expect(env.updateCount).toBe(env.results.filter((r) => r.status === 'UPDATE').length);
      expect(env.failCount).toBe(env.results.filter((r) => r.status === 'FAIL').length);
      return env;
    }

    function expectError(res: Response, status: number, code: number, message?: RegExp): void {
      expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
      expect(res.headers['content-type']).toMatch(/^application\/json; charset=utf-8/);
      expect(typeof res.body._e).toBe('string');
      if (message) expect(res.body._e).toMatch(message);
    }

    const bySku = (c: TestCustomer, sku: string) => ctx().http.get(`/v1/goods/${c.accessKey}/sku`).query({ value: sku }).set('Authorization', c.auth());

    async function stored(c: TestCustomer, sku: string): Promise<Record<string, unknown>> {
      const res = await bySku(c, sku);
      expect(res.status).toBe(200);
      return res.body as Record<string, unknown>;
    }

    async function rowCount(t: TestApp, c: TestCustomer): Promise<number> {
      const [{ n }] = await t.dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [c.id]);
      return Number(n);
    }

    async function sync(c: TestCustomer, body: unknown[]): Promise<Envelope> {
      const res = await ctx().http.post(`/v1/goods/${c.accessKey}/sync`).set('Authorization', c.auth()).send(body).expect(200);
      return res.body as Envelope;
    }

    describe('authentication', () => {
      it('refuses an upload and the template without a token (401 -102), writing nothing', async () => {
        const c = await ctx().createCustomer();
        const file = await xlsx([HEADER, goodsRow(1)]);
        const res = await ctx().http.post(`/v1/goods/${c.accessKey}/excel`).attach('file', file, 'goods.xlsx');
        expectError(res, 401, -102);
        expectError(await ctx().http.get(`/v1/goods/${c.accessKey}/excel/template`), 401, -102);
        expect(await rowCount(ctx(), c)).toBe(0);
      });

      it("refuses another customer's token (401)", async () => {
        const a = await ctx().createCustomer();
        const b = await ctx().createCustomer();
        const res = await ctx()
          .http.post(`/v1/goods/${a.accessKey}/excel`)
          .set('Authorization', b.auth())
          .attach('file', await xlsx([HEADER, goodsRow(1)]), 'goods.xlsx');
        expectError(res, 401, -102);
        expect(await rowCount(ctx(), a)).toBe(0);
      });
    });

    describe('reading sheets', () => {
      it('English headers: creates every row; row = the sheet row number; results equal the stored goods', async () => {
        const c = await ctx().createCustomer('Sheet shop', 'USD');
        const file = await xlsx([
          HEADER,
          [null, 'SW-7', 'https://shop.example.com/goods/SW-7', '스마트 워치 7', 'Sampletech', '45 mm case, GPS', null, 399000, 359100, 10],
          goodsRow(2),
        ]);
        const env = await uploadOk(c, file);
        expect(env).toMatchObject({ totalCount: 2, createCount: 2, updateCount: 0, failCount: 0 });
        expect(env.results[0]).toEqual({
          id: expect.any(Number),
          name: '스마트 워치 7',
          brand: 'Sampletech',
          description: '45 mm case, GPS',
          url: 'https://shop.example.com/goods/SW-7',
          sku: 'SW-7',
          mediaUrl: null,
          medias: [],
          originalPrice: 399000,
          discountedPrice: 359100,
          currency: 'USD',
          discountPercentage: 10,
          row: 2,
          status: 'CREATE',
          message: null,
        });
        expect(env.results[1]).toMatchObject({ row: 3, status: 'CREATE', sku: 'SKU-2', brand: null, originalPrice: 0 });
        const { row: _r, status: _s, message: _m, ...goods } = env.results[0];
        expect(await stored(c, 'SW-7')).toEqual(goods);
        expect(await rowCount(ctx(), c)).toBe(2);
      });

      it('Korean headers (상품코드, 상품명, ...) work like the field names', async () => {
        const c = await ctx().createCustomer();
        const file = await xlsx([
          KOREAN,
          [null, 'KR-1', 'https://shop.example.com/kr/1', '무선 이어폰', '한빛전자', '노이즈 캔슬링', null, 129000, 99000, 23.3],
        ]);
        const env = await uploadOk(c, file, '상품목록.xlsx');
        expect(env.results).toEqual([
          expect.objectContaining({
            row: 2,
            status: 'CREATE',
            sku: 'KR-1',
            name: '무선 이어폰',
            brand: '한빛전자',
            description: '노이즈 캔슬링',
            originalPrice: 129000,
            discountedPrice: 99000,
            discountPercentage: 23.3,
          }),
        ]);
        expect(await stored(c, 'KR-1')).toMatchObject({ name: '무선 이어폰', brand: '한빛전자' });
      });

      it('shuffled columns, unknown columns (ignored, listed once in X-Ignored-Columns) and blank rows (skipped)', async () => {
        const c = await ctx().createCustomer();
        const file = await xlsx([
          ['정가', 'Color', 'name', '상품코드', 'url', '재고', 'brand'],
          [1500, 'red', 'Shuffled A', 'SH-A', 'https://shop.example.com/sh/a', 3, 'B1'],
          [],
          [null, 'only an unknown column'],
          [2500, 'blue', 'Shuffled B', 'SH-B', 'https://shop.example.com/sh/b', 7, null],
        ]);
        const res = await upload(c, file).expect(200);
        const env = res.body as Envelope;
        expect(env.results.map((r) => [r.row, r.status, r.sku, r.name, r.originalPrice, r.brand])).toEqual([
          [2, 'CREATE', 'SH-A', 'Shuffled A', 1500, 'B1'],
          [5, 'CREATE', 'SH-B', 'Shuffled B', 2500, null],
        ]);
        expect(res.headers['x-ignored-columns'].split(',').map(decodeURIComponent)).toEqual(['Color', '재고']);
        expect(await stored(c, 'SH-A')).not.toHaveProperty('Color');
      });

      it('a second header row of Korean labels under the English keys is skipped', async () => {
        const c = await ctx().createCustomer();
        const env = await uploadOk(c, await xlsx([HEADER, KOREAN, goodsRow('two-headers')]));
        expect(env.results.map((r) => [r.row, r.status])).toEqual([[3, 'CREATE']]);
      });

      it('CSV: quotes, delimiters and line breaks inside cells, BOM, CRLF; row = the record number', async () => {
        const c = await ctx().createCustomer();
        const file = csv(
          [
            ['sku', 'name', 'url', 'description', 'originalPrice'],
            ['CSV-1', 'Quoted "name", with comma', 'https://shop.example.com/csv/1', 'line one\nline two\r\nline three', '19.99'],
            [],
            ['CSV-2', '세미콜론; 탭\t포함', 'https://shop.example.com/csv/2', '', '₩39,000'],
          ],
          { bom: true },
        );
        const env = await uploadOk(c, file, 'goods.csv');
        expect(env.results.map((r) => [r.row, r.status])).toEqual([
          [2, 'CREATE'],
          [4, 'CREATE'],
        ]);
        expect(await stored(c, 'CSV-1')).toMatchObject({
          name: 'Quoted "name", with comma',
          description: 'line one\nline two\r\nline three',
          originalPrice: 19.99,
        });
        expect(await stored(c, 'CSV-2')).toMatchObject({ name: '세미콜론; 탭\t포함', description: null, originalPrice: 39000 });
      });

      it('CSV: a price written with a power of ten (1E+12, as spreadsheets save 12-digit numbers) and one with more decimals than are kept', async () => {
        const c = await ctx().createCustomer();
        const file = csv([
          ['sku', 'name', 'url', 'originalPrice', 'discountedPrice'],
          ['EXP-1', 'Exponent', 'https://shop.example.com/exp/1', '1E+12', '123456789012.12345'],
        ]);
        const env = await uploadOk(c, file, 'goods.csv');
        expect(env.results.map((r) => [r.row, r.status, r.message])).toEqual([[2, 'CREATE', null]]);
        expect(await stored(c, 'EXP-1')).toMatchObject({ originalPrice: 1e12, discountedPrice: 123456789012.1235 });
      });

      it('CSV: semicolon-separated, without BOM; and CP949 (Korean Excel "CSV") text', async () => {
        const c = await ctx().createCustomer();
        const semi = Buffer.from('상품코드;상품명;상품URL\nSEMI-1;Semi;https://shop.example.com/semi/1\n', 'utf8');
        expect((await uploadOk(c, semi, 'semi.csv')).results[0]).toMatchObject({ row: 2, status: 'CREATE', name: 'Semi' });
        // "sku,name,url\nCP-1,<상품>,https://..." in CP949: 상 = BB F3, 품 = C7 B0.
        const cp949 = Buffer.concat([
          Buffer.from('sku,name,url\nCP-1,'),
          Buffer.from([0xbb, 0xf3, 0xc7, 0xb0]),
          Buffer.from(',https://shop.example.com/cp/1\n'),
        ]);
        expect((await uploadOk(c, cp949, 'cp949.csv')).results[0]).toMatchObject({ row: 2, status: 'CREATE', name: '상품' });
      });

      it('formulas (cached results), hyperlinks, rich text, currency and percent formats, numeric codes', async () => {
        const c = await ctx().createCustomer();
        const file = await xlsx(
          [
            ['sku', 'name', 'url', 'originalPrice', 'discountedPrice', 'discountPercentage', 'description'],
            [
              'F-1',
              { richText: [{ text: '스마트 ' }, { text: '워치', font: { bold: true } }] },
              { text: 'https://shop.example.com/f/1', hyperlink: 'https://shop.example.com/f/1' },
              39000,
              { formula: 'D2*0.9', result: 35100 },
              0.1,
              { formula: 'CONCAT("a","b")', result: 'ab' },
            ],
            [8801234567890, 'Numeric code', { text: '상품 페이지', hyperlink: 'https://shop.example.com/f/2' }, '₩12,500', '12,000원', '15%', null],
          ],
          { numFmts: { 4: '"₩"#,##0', 5: '#,##0', 6: '0%' } },
        );
        const env = await uploadOk(c, file);
        expect(env.failCount).toBe(0);
        expect(await stored(c, 'F-1')).toMatchObject({
          name: '스마트 워치',
          url: 'https://shop.example.com/f/1',
          originalPrice: 39000,
          discountedPrice: 35100,
          discountPercentage: 10,
          description: 'ab',
        });
        expect(await stored(c, '8801234567890')).toMatchObject({
          url: 'https://shop.example.com/f/2',
          originalPrice: 12500,
          discountedPrice: 12000,
          discountPercentage: 15,
        });
      });

      it('a cell holding a spreadsheet error, or a formula whose result is one, makes its row a FAIL row saying so; a formula never calculated reads as its text', async () => {
        const c = await ctx().createCustomer();
        const file = await xlsx([
          ['sku', 'url', 'name', 'brand'],
          [
            'ERR-1',
            'https://shop.example.com/err/1',
            { formula: 'VLOOKUP("x",Z1:Z2,1,FALSE)', result: { error: '#N/A' } },
            { formula: 'Sheet9!A1', result: { error: '#REF!' } },
          ],
          ['ERR-2', 'https://shop.example.com/err/2', { error: '#N/A' }, 'ok'],
          ['ERR-3', 'https://shop.example.com/err/3', 'Fine', { formula: 'CONCAT("a","b")' }],
        ]);
        const env = await uploadOk(c, file);
        expect(env.results.map((r) => [r.row, r.status, r.message])).toEqual([
          [
            2,
            'FAIL',
            'name: cell C2 holds a spreadsheet error (=VLOOKUP("x",Z1:Z2,1,FALSE)), not a value; brand: cell D2 holds a spreadsheet error (=Sheet9!A1), not a value',
          ],
          [3, 'FAIL', 'name: cell C3 holds a spreadsheet error (#N/A), not a value'],
          [4, 'CREATE', null],
        ]);
        expect(await stored(c, 'ERR-3')).toMatchObject({ name: 'Fine', brand: '=CONCAT("a","b")' });
        expect(Number((await ctx().dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [c.id]))[0].n)).toBe(1);
      });

      it('a mix of creates, updates and failures: each row reported at its sheet row, failures write nothing', async () => {
        const c = await ctx().createCustomer();
        const [a, b] = (
          await sync(c, [
            { sku: 'MIX-A', url: 'https://shop.example.com/mix/a', name: 'A', originalPrice: 10 },
            { sku: 'MIX-B', url: 'https://shop.example.com/mix/b', name: 'B' },
          ])
        ).results;
        const file = await xlsx([
          HEADER,
          goodsRow('new-1'), // 2 CREATE
          [a.id, null, null, 'A by id'], // 3 UPDATE by id
          [null, 'MIX-B', null, null, 'Brand by sku'], // 4 UPDATE by sku
          [null, null, 'https://shop.example.com/mix/a', null, null, null, null, 11], // 5 UPDATE by url
          goodsRow('bad-price', { originalPrice: 'abc' }), // 6 FAIL
          [null, 'MIX-NONAME', 'https://shop.example.com/mix/noname'], // 7 FAIL: no name to create
          [],
          [987654321, null, null, 'Ghost'], // 9 FAIL: unknown id
          goodsRow('bad-url', { url: 'ftp://shop.example.com/x' }), // 10 FAIL
          goodsRow('pct', { discountPercentage: 150 }), // 11 FAIL
          [null, 'MIX-B', 'https://shop.example.com/mix/a'], // 12 FAIL: sku and url of two items
          goodsRow('new-1', { name: 'Renamed in the same file' }), // 13 UPDATE of row 2's item
        ]);
        const env = await uploadOk(c, file);
        expect(env.results.map((r) => [r.row, r.status])).toEqual([
          [2, 'CREATE'],
          [3, 'UPDATE'],
          [4, 'UPDATE'],
          [5, 'UPDATE'],
          [6, 'FAIL'],
          [7, 'FAIL'],
          [9, 'FAIL'],
          [10, 'FAIL'],
          [11, 'FAIL'],
          [12, 'FAIL'],
          [13, 'UPDATE'],
        ]);
        expect(env).toMatchObject({ totalCount: 11, createCount: 1, updateCount: 4, failCount: 6 });
        const byRow = new Map(env.results.map((r) => [r.row, r]));
        expect(byRow.get(3)).toMatchObject({ id: a.id, name: 'A by id', message: null });
        expect(byRow.get(4)).toMatchObject({ id: b.id, brand: 'Brand by sku' });
        expect(byRow.get(5)).toMatchObject({ id: a.id, originalPrice: 11 });
        expect(byRow.get(6)).toMatchObject({ sku: 'SKU-bad-price', originalPrice: 'abc', message: expect.stringMatching(/originalPrice/) });
        expect(byRow.get(7)?.message).toMatch(/name/);
        expect(byRow.get(9)?.message).toMatch(/987654321/);
        expect(byRow.get(10)?.message).toMatch(/url/);
        expect(byRow.get(11)?.message).toMatch(/discountPercentage/);
        expect(byRow.get(12)?.message).toMatch(new RegExp(`${b.id}.*${a.id}`));
        expect(byRow.get(13)).toMatchObject({ id: byRow.get(2)?.id, name: 'Renamed in the same file' });
        // Empty cells left fields alone: A kept its price through the update by id.
        expect(await stored(c, 'MIX-A')).toMatchObject({ name: 'A by id', originalPrice: 11 });
        for (const sku of ['SKU-bad-price', 'MIX-NONAME', 'SKU-bad-url', 'SKU-pct']) expect((await bySku(c, sku)).status).toBe(404);
        expect(await rowCount(ctx(), c)).toBe(3);
      });

      it('a header-only sheet is 200 with zero counts', async () => {
        const c = await ctx().createCustomer();
        const env = await uploadOk(c, await xlsx([HEADER]));
        expect(env).toEqual({ results: [], totalCount: 0, createCount: 0, updateCount: 0, failCount: 0, _s: 0 });
      });

      it('10,000 rows are all created, then the same file updates them all', async () => {
        const c = await ctx().createCustomer();
        const file = await tenThousand();
        const created = await uploadOk(c, file);
        expect(created).toMatchObject({ totalCount: 10_000, createCount: 10_000, failCount: 0 });
        created.results.forEach((r, i) => {
          if (r.row !== i + 2 || r.sku !== `BULK-${i}` || r.status !== 'CREATE') throw new Error(`result ${i}: ${JSON.stringify(r)}`);
        });
        expect(new Set(created.results.map((r) => r.id)).size).toBe(10_000);
        expect(await stored(c, 'BULK-9999')).toMatchObject({ name: '스마트 워치 9999', originalPrice: 10999.5, discountPercentage: 49 });
        expect(await rowCount(ctx(), c)).toBe(10_000);

        const updated = await uploadOk(c, file);
        expect(updated).toMatchObject({ totalCount: 10_000, updateCount: 10_000, failCount: 0 });
        expect(updated.results.map((r) => r.id)).toEqual(created.results.map((r) => r.id));
      }, 180_000);

      it('refreshMedia is a boolean query parameter', async () => {
        const c = await ctx().createCustomer();
        await uploadOk(c, await xlsx([HEADER, goodsRow('rm')]), 'goods.xlsx', '?refreshMedia=true');
        expectError(await upload(c, await xlsx([HEADER, goodsRow('rm2')]), 'goods.xlsx', '?refreshMedia=maybe'), 400, -510);
        expect((await bySku(c, 'SKU-rm2')).status).toBe(404);
      });
    });

    describe('media', () => {
      let server: http.Server;
      let base = '';
      beforeAll(async () => {
        const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c03' } })
          .png()
          .toBuffer();
        server = http.createServer((req, res) => {
          if (req.url === '/img.png') res.writeHead(200, { 'content-type': 'image/png' }).end(png);
          else res.writeHead(404).end();
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      });
      afterAll(() => new Promise((resolve) => server.close(resolve)));

      it('a mediaUrl cell is fetched and stored like in a sync; an image that fails keeps the row', async () => {
        const c = await ctx().createCustomer();
        const env = await uploadOk(
          c,
          await xlsx([HEADER, goodsRow('img', { mediaUrl: `${base}/img.png` }), goodsRow('noimg', { mediaUrl: `${base}/missing.png` })]),
        );
        expect(env.results.map((r) => [r.row, r.status])).toEqual([
          [2, 'CREATE'],
          [3, 'CREATE'],
        ]);
        expect(env.results[0]).toMatchObject({ mediaUrl: `${base}/img.png`, message: null });
        expect(env.results[0].medias).toEqual([expect.objectContaining({ mediaType: 'IMAGE', width: 64, height: 48 })]);
        expect(env.results[1].medias).toEqual([]);
        expect(env.results[1].message).toEqual(expect.any(String));
        expect(await stored(c, 'SKU-img')).toMatchObject({ medias: [expect.objectContaining({ width: 64 })] });
      });
    });

    describe('the template', () => {
      it('downloads as an .xlsx attachment: header of field names, Korean labels, widths, an example sheet, a column guide; unchanged it imports nothing', async () => {
        const c = await ctx().createCustomer();
        const res = await ctx()
          .http.get(`/v1/goods/${c.accessKey}/excel/template`)
          .set('Authorization', c.auth())
          .buffer(true)
          .parse((r, done) => {
            const chunks: Buffer[] = [];
            r.on('data', (chunk: Buffer) => chunks.push(chunk));
            r.on('end', () => done(null, Buffer.concat(chunks)));
          })
          .expect(200);
        expect(res.headers['content-type']).toBe(XLSX_TYPE);
        expect(res.headers['content-disposition']).toBe('attachment; filename="goods-template.xlsx"');
        const file = res.body as Buffer;
        expect(file.subarray(0, 4)).toEqual(Buffer.from('PK\x03\x04', 'latin1'));

        const workbook = new ExcelJS.Workbook();
        await workbook.xlsx.load(file as unknown as ExcelJS.Buffer);
        const [goods, example, guide] = workbook.worksheets;
        expect([goods.name, example.name, guide.name]).toEqual(['Goods', 'Example', 'Columns']);
        expect((goods.getRow(1).values as unknown[]).slice(1)).toEqual(HEADER);
        HEADER.forEach((_, i) => {
          expect(String(goods.getRow(1).getCell(i + 1).note ? JSON.stringify(goods.getRow(1).getCell(i + 1).note) : '')).toContain(KOREAN[i]);
          expect(goods.getColumn(i + 1).width).toBeGreaterThan(5);
        });
        expect(goods.rowCount).toBe(1);
        expect((example.getRow(1).values as unknown[]).slice(1)).toEqual(HEADER);
        expect(example.getRow(2).getCell(2).value).toBe('SW-7');
        const guideText = JSON.stringify(guide.getSheetValues());
        for (const label of [...HEADER, ...KOREAN]) expect(guideText).toContain(label);

        // Uploaded unchanged, it imports nothing (an item with the example's sku stays as it is).
        const existing = await ctx()
          .http.post(`/v1/goods/${c.accessKey}`)
          .set('Authorization', c.auth())
          .send({ name: 'Mine', sku: 'SW-7', url: 'https://shop.example.com/mine/SW-7', originalPrice: 1 });
        expect(existing.status).toBe(200);
        const env = await uploadOk(c, file, 'goods-template.xlsx');
        expect(env).toMatchObject({ results: [], totalCount: 0, createCount: 0, updateCount: 0, failCount: 0 });
        const after = await ctx().http.get(`/v1/goods/${c.accessKey}/sku`).query({ value: 'SW-7' }).set('Authorization', c.auth());
        expect(after.body).toMatchObject({ name: 'Mine', url: 'https://shop.example.com/mine/SW-7', originalPrice: 1 });
        // Filled in, it uploads as is.
        goods.addRow([null, 'FILLED-1', 'https://shop.example.com/filled/1', 'Filled', null, null, null, 1000]);
        goods.addRow([null, 'FILLED-2', 'https://shop.example.com/filled/2', '린넨 셔츠', null, null, null, 59000]);
        const filled = Buffer.from(await workbook.xlsx.writeBuffer());
        const env2 = await uploadOk(c, filled, 'goods-template.xlsx');
        expect(env2.results.map((r) => [r.row, r.status, r.sku])).toEqual([
          [2, 'CREATE', 'FILLED-1'],
          [3, 'CREATE', 'FILLED-2'],
        ]);
      });

      it('is not shadowed by the goods routes', async () => {
        const c = await ctx().createCustomer();
        const res = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/template`).set('Authorization', c.auth()).expect(200);
        expect(res.headers['content-type']).toBe(XLSX_TYPE);
        const docs = await ctx().http.get('/docs-json').expect(200);
        const post = docs.body.paths['/v1/goods/{accessKey}/excel'].post;
        expect(Object.keys(post.requestBody.content)).toEqual(['multipart/form-data']);
        expect(post.requestBody.content['multipart/form-data'].schema).toBeDefined();
        expect(post.description).toContain('/excel/template');
        expect(docs.body.paths['/v1/goods/{accessKey}/excel/template'].get).toBeDefined();
      });
    });

    describe('refusals (nothing written, answered quickly, the server stays healthy)', () => {
      async function refused(c: TestCustomer, file: Buffer | undefined, filename: string, status: number, code: number, message?: RegExp): Promise<void> {
        const started = Date.now();
        const res = await upload(c, file, filename);
        const ms = Date.now() - started;
        expectError(res, status, code, message);
        expect(ms).toBeLessThan(QUICK_MS);
        expect(await rowCount(ctx(), c)).toBe(0);
      }

      it('plain text named .xlsx → 415', async () => {
        const c = await ctx().createCustomer();
        await refused(c, Buffer.from('sku,name,url\nA,B,https://x.example.com\n'), 'goods.xlsx', 415, -415, /not an \.xlsx/);
      });

      it('an empty file → 415', async () => {
        const c = await ctx().createCustomer();
        await refused(c, Buffer.alloc(0), 'goods.xlsx', 415, -415, /empty/);
        await refused(c, Buffer.alloc(0), 'goods.csv', 415, -415, /empty/);
      });

      it('random bytes → 415 (as .xlsx and as .csv)', async () => {
        const c = await ctx().createCustomer();
        await refused(c, noise(64 * 1024), 'goods.xlsx', 415, -415);
        await refused(c, noise(64 * 1024), 'goods.csv', 415, -415);
      });

      it('a PNG → 415 naming it', async () => {
        const c = await ctx().createCustomer();
        await refused(c, pngBytes(), 'photo.xlsx', 415, -415, /PNG/);
        await refused(c, pngBytes(), 'photo.png', 415, -415, /PNG/);
      });

      it('an .xlsx cut in half → 415', async () => {
        const c = await ctx().createCustomer();
        const whole = await xlsx([HEADER, ...Array.from({ length: 200 }, (_, i) => goodsRow(`half-${i}`))]);
        await refused(c, whole.subarray(0, Math.floor(whole.length / 2)), 'goods.xlsx', 415, -415);
        await refused(c, whole.subarray(0, whole.length - 10), 'goods.xlsx', 415, -415);
      });

      it('a zip without a workbook → 415', async () => {
        const c = await ctx().createCustomer();
        const file = await zip([
          { name: 'readme.txt', data: 'hello' },
          { name: 'docs/word.xml', data: '<w/>' },
        ]);
        await refused(c, file, 'goods.xlsx', 415, -415, /workbook/);
        const noSheet = await zip([
          { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
          { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
        ]);
        await refused(c, noSheet, 'goods.xlsx', 415, -415, /sheet/);
      });

      it('an .xlsx with a 1 GiB zero-filled entry → 413', async () => {
        const c = await ctx().createCustomer();
        const file = await bomb();
        expect(file.length).toBeLessThan(5 * 1024 * 1024);
        await refused(c, file, 'bomb.xlsx', 413, -413, /zip bomb/);
      }, 60_000);

      it('a sheet that inflates to more than its declared size → 413', async () => {
        const c = await ctx().createCustomer();
        const header = '<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>';
        const file = await zip([
          { name: 'xl/workbook.xml', data: MINIMAL_PARTS.WORKBOOK },
          { name: 'xl/_rels/workbook.xml.rels', data: MINIMAL_PARTS.WORKBOOK_RELS },
          {
            name: 'xl/worksheets/sheet1.xml',
            declaredSize: 1000,
            data: () => [Buffer.from(header), ...zeros(300 * 1024 * 1024)()],
          },
        ]);
        await refused(c, file, 'liar.xlsx', 413, -413, /more than it declares/);
      }, 60_000);

      /** Uploads a file with async=true: it must become an import job (202); resolves with the job once it has ended. */
      async function queuedJob(c: TestCustomer, file: Buffer, filename: string): Promise<Record<string, unknown>> {
        const res = await upload(c, file, filename, '?async=true');
        expect(res.status).toBe(202);
        const path = `/v1/goods/${c.accessKey}/excel/jobs/${res.body.jobId}`;
        expect(res.headers.location).toBe(path);
        for (const started = Date.now(); Date.now() - started < 120_000; await new Promise((r) => setTimeout(r, 100))) {
          const job = await ctx().http.get(path).set('Authorization', c.auth()).expect(200);
          if (job.body.state === 'succeeded' || job.body.state === 'failed') return job.body as Record<string, unknown>;
        }
        throw new Error(`job ${path} did not end`);
      }

      /** The refusal of a file over the synchronous row limit sent without async=true. */
      const OVER_SYNC_ROWS =
        /^The sheet has more than 10,000 data rows, the limit of an immediate import; the same file can be imported as a background job with async=true \(up to 20 MB and 20,000 data rows; the answer is then 202 with the job\)$/;

      async function jobCount(c: TestCustomer): Promise<number> {
        const list = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs`).set('Authorization', c.auth()).expect(200);
        return list.body.totalCount as number;
      }

      it('1,000,000 rows: 413 without async=true (at the synchronous cap); with it an .xlsx is refused at upload (413, counted quickly), a CSV becomes a job that fails on the job row limit; nothing written', async () => {
        const c = await ctx().createCustomer();
        const xlsxFile = await millionRowsXlsx();
        const csvFile = await millionRowsCsv();
        expectError(await upload(c, xlsxFile, 'million.xlsx'), 413, -413, OVER_SYNC_ROWS);
        expectError(await upload(c, csvFile, 'million.csv'), 413, -413, OVER_SYNC_ROWS);
        const res = await upload(c, xlsxFile, 'million.xlsx', '?async=true');
        expectError(res, 413, -413, /1,000,000 rows with values below the header, more than the 20,000 data rows one import job takes/);
        expect(await jobCount(c)).toBe(0);

        const job = await queuedJob(c, csvFile, 'million.csv');
        expect(job).toMatchObject({ state: 'failed', rowsDone: 0 });
        expect(job.error).toMatch(/more than 20,000 data rows.*no row was applied/);
        expect(await rowCount(ctx(), c)).toBe(0);
      }, 240_000);

      it('10,001 data rows → over the synchronous cap (data rows only): 413 without async=true, saying so; with async=true an import job that applies them all', async () => {
        const c = await ctx().createCustomer();
        const file = await tenThousandAndOne();
        const started = Date.now();
        const res = await upload(c, file, 'over.xlsx');
        expectError(res, 413, -413, OVER_SYNC_ROWS);
        expect(Date.now() - started).toBeLessThan(QUICK_MS);
        expectError(
          await upload(c, file, 'over.xlsx', '?dryRun=true'),
          413,
          -413,
          /^A dry run takes a file within the immediate import limits \(20 MB and 10,000 data rows\)/,
        );
        expect(await jobCount(c)).toBe(0);
        expect(await rowCount(ctx(), c)).toBe(0);

        const job = await queuedJob(c, file, 'over.xlsx');
        expect(job).toMatchObject({ state: 'succeeded', rowsTotal: 10_001, rowsDone: 10_001, createCount: 10_001, failCount: 0 });
        expect(await rowCount(ctx(), c)).toBe(10_001);
      }, 120_000);

      it('a file of blank rows (19 MB of empty lines, 18 MB of ",," lines, an .xlsx of empty rows) → 413 at the first one over the cap', async () => {
        const c = await ctx().createCustomer();
        const files: Array<[Buffer, string]> = [
          [await blankLinesCsv(), 'blank.csv'],
          [await blankCommasCsv(), 'commas.csv'],
          [await blankRowsXlsx(), 'blank.xlsx'],
        ];
        for (const [file, filename] of files) {
          const res = await upload(c, file, filename);
          expectError(res, 413, -413, /more than 10,000 rows without goods values .* reading stopped at row 10,002\. Delete the empty rows/);
        }
        expect(await rowCount(ctx(), c)).toBe(0);
        await ctx().http.get('/health').expect(200);
      }, 120_000);

      it('a file over 20 MB → 413', async () => {
        const c = await ctx().createCustomer();
        await refused(c, Buffer.alloc(20 * 1024 * 1024 + 1, 0x41), 'big.csv', 413, -413, /20 MB/);
      });

      it('no file part, another part name, or not multipart → 400 -510', async () => {
        const c = await ctx().createCustomer();
        await refused(c, undefined, '', 400, -510, /file/);
        const other = await ctx()
          .http.post(`/v1/goods/${c.accessKey}/excel`)
          .set('Authorization', c.auth())
          .attach('upload', await xlsx([HEADER, goodsRow(1)]), 'goods.xlsx');
        expectError(other, 400, -510, /"file"/);
        const json = await ctx()
          .http.post(`/v1/goods/${c.accessKey}/excel`)
          .set('Authorization', c.auth())
          .send([{ sku: 'x' }]);
        expectError(json, 400, -510, /file/);
        const twoFiles = await ctx()
          .http.post(`/v1/goods/${c.accessKey}/excel`)
          .set('Authorization', c.auth())
          .attach('file', await xlsx([HEADER, goodsRow(1)]), 'a.xlsx')
          .attach('file', await xlsx([HEADER, goodsRow(2)]), 'b.xlsx');
        expectError(twoFiles, 400, -510);
        expect(await rowCount(ctx(), c)).toBe(0);
      });

      it('a sheet without a key column, with a column twice, or without a header row → 400 -510', async () => {
        const c = await ctx().createCustomer();
        await refused(
          c,
          await xlsx([
            ['name', 'brand'],
            ['A', 'B'],
          ]),
          'goods.xlsx',
          400,
          -510,
          /sku/,
        );
        await refused(
          c,
          await xlsx([
            ['sku', '상품코드', 'url'],
            ['A', 'B', 'https://x.example.com'],
          ]),
          'goods.xlsx',
          400,
          -510,
          /twice|both/,
        );
        await refused(c, await xlsx([[], goodsRow('no-header')]), 'goods.xlsx', 400, -510, /row 1/i);
        await refused(c, await xlsx([]), 'goods.xlsx', 400, -510, /empty/);
      });

      it('after every refusal the server is healthy and imports again', async () => {
        const c = await ctx().createCustomer();
        await ctx().http.get('/health').expect(200);
        await ctx().http.get('/health/ready').expect(200);
        const env = await uploadOk(c, await xlsx([HEADER, goodsRow('after')]));
        expect(env.results).toEqual([expect.objectContaining({ row: 2, status: 'CREATE' })]);
      });
    });
  },
  // Job limits lowered: 20 MB is then the most any upload takes, and the million-row files fail as jobs.
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', IMPORT_JOB_MAX_BYTES: String(20 * 1024 * 1024), IMPORT_JOB_MAX_ROWS: '20000', IMPORT_JOB_POLL_MS: '100' },
);
