import { parse } from 'csv-parse/sync';
import * as ExcelJS from 'exceljs';
import type { Response } from 'supertest';
import { useImageServer } from './support/image-server';
import type { Payload, Viewer } from './support/live-client';
import { expectOk, liveHarness } from './support/live-harness';
import { Transactions } from '../src/database/transactions';
import { TestApp, TestCustomer, describeEngines } from './support/test-app';

/**
 * GET /v1/goods/{accessKey}/excel/export (xlsx and CSV) and its round trip through the import, dry runs
 * of the sync and the spreadsheet import, and cursor paging of the list (docs/api-reference.md).
 */

type Body = Record<string, unknown>;
type Row = Body & { row: number; status: string; message: string | null; id: number | null };
interface Envelope {
  results: Row[];
  totalCount: number;
  createCount: number;
  updateCount: number;
  failCount: number;
  _s: number;
}

const HEADER = ['id', 'sku', 'url', 'name', 'brand', 'description', 'mediaUrl', 'originalPrice', 'discountedPrice', 'discountPercentage'];
/** Every start a spreadsheet program would run as a formula, and quotes before one. */
const FORMULA_NAMES = ['=SUM(1,2)', '+1+2', '-3+4', '@cmd', "'=already quoted", "''+twice"];

const images = useImageServer();

describeEngines(
  'goods export, dry runs and cursor paging',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const http = () => ctx().http;
    const path = (c: TestCustomer, rest = '') => `/v1/goods/${c.accessKey}${rest}`;

    function expectError(res: Response, status: number, code: number, message?: RegExp): void {
      expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
      if (message) expect(res.body._e).toMatch(message);
    }

    async function sync(c: TestCustomer, body: unknown[], query = ''): Promise<Envelope> {
      const res = await http()
        .post(path(c, `/sync${query}`))
        .set('Authorization', c.auth())
        .send(body);
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body as Envelope;
    }

    async function upload(c: TestCustomer, file: Buffer, filename: string, query = ''): Promise<Envelope> {
      const res = await http()
        .post(path(c, `/excel${query}`))
        .set('Authorization', c.auth())
        .attach('file', file, { filename, contentType: 'application/octet-stream' });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body as Envelope;
    }

    async function exportFile(c: TestCustomer, query: Record<string, string> = {}): Promise<Response> {
      return http()
        .get(path(c, '/excel/export'))
        .query(query)
        .set('Authorization', c.auth())
        .set('Accept-Encoding', 'gzip, br')
        .buffer(true)
        .parse((stream, done) => {
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('end', () => done(null, Buffer.concat(chunks)));
        });
    }

    /** The stored catalog, field by field (what an export → import must leave as it was). */
    async function catalog(t: TestApp, c: TestCustomer): Promise<Body[]> {
      const rows: Body[] = await t.dataSource.query(
        'SELECT g.id, g.name, g.brand, g.description, g.url, g.sku, g.mediaUrl, g.originalPrice, g.discountedPrice, g.discountPercentage, ' +
          'g.searchText, g.updatedAt, m.id AS mediaId, m.originalUrl FROM goods g LEFT JOIN media m ON m.goodsId = g.id WHERE g.customerId = ? ORDER BY g.id',
        [c.id],
      );
      return rows.map((r) => ({
        ...r,
        id: Number(r.id),
        mediaId: r.mediaId === null ? null : Number(r.mediaId),
        originalPrice: r.originalPrice === null ? null : Number(r.originalPrice),
        discountedPrice: r.discountedPrice === null ? null : Number(r.discountedPrice),
        discountPercentage: r.discountPercentage === null ? null : Number(r.discountPercentage),
        updatedAt: String(r.updatedAt instanceof Date ? r.updatedAt.toISOString() : r.updatedAt),
      }));
    }

    async function catalogVersion(t: TestApp, c: TestCustomer): Promise<number> {
      const [row] = await t.dataSource.query('SELECT catalogVersion AS v FROM customers WHERE id = ?', [c.id]);
      return Number(row.v);
    }

    async function goodsCount(t: TestApp, c: TestCustomer): Promise<number> {
      const [{ n }] = await t.dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [c.id]);
      return Number(n);
    }

    /** A catalog with every kind of value a cell can hold. */
    async function variedCatalog(c: TestCustomer): Promise<void> {
      const items: Body[] = [
        {
          sku: 'RT-1',
          url: 'https://shop.example.com/rt/1',
          name: '스마트 워치 7',
          brand: 'Sampletech',
          description: 'Line one\nline two, with "quotes", commas; and ₩ signs',
          mediaUrl: images().url1('/photo.jpg'),
          originalPrice: 399000,
          discountedPrice: 359100.5,
          discountPercentage: 12.5,
        },
        { sku: 'RT-2', url: 'https://shop.example.com/rt/2', name: 'No extras' },
        {
          sku: '00123',
          url: 'https://shop.example.com/rt/3?q=1&x=%20',
          name: 'TRUE',
          brand: '2024-01-01',
          description: '  leading and trailing spaces  ',
          originalPrice: 999999999999.9999,
          discountedPrice: 0.0001,
          discountPercentage: 0,
        },
        { sku: '1e5', url: 'https://shop.example.com/rt/4', name: '12345', description: '\tstarts with a tab', originalPrice: 0 },
        { sku: 'RT-5', url: 'https://shop.example.com/rt/5', name: 'CR', description: '\rstarts with a carriage return\r\nand CRLF' },
        { sku: 'RT-6', url: 'https://shop.example.com/rt/6', name: 'Logo', mediaUrl: images().url1('/logo.png'), discountPercentage: 100 },
        { sku: 'RT-7', url: 'https://shop.example.com/rt/7', name: 'Controls', description: 'bell\x07, unit\x1f, del\x7f, literal _x000D_ and _x005F_ text' },
        ...FORMULA_NAMES.map((name, i) => ({
          sku: `=F${i}`,
          url: `https://shop.example.com/rt/f${i}`,
          name,
          brand: name,
          description: `${name} in a description`,
        })),
      ];
      const env = await sync(c, items);
      expect(env.results.map((r) => [r.status, r.message])).toEqual(items.map(() => ['CREATE', null]));
    }

    describe('export → import round trip', () => {
      for (const format of ['xlsx', 'csv'] as const) {
        it(`${format}: every row an UPDATE that changes nothing (catalog, media and catalog version as before)`, async () => {
          const t = ctx();
          const c = await t.createCustomer();
          await variedCatalog(c);
          const before = await catalog(t, c);
          const version = await catalogVersion(t, c);
          const hits = images().hits('/photo.jpg') + images().hits('/logo.png');

          const res = await exportFile(c, { format });
          expect(res.status).toBe(200);
          expect(res.headers['content-type']).toBe(
            format === 'csv' ? 'text/csv; charset=utf-8' : 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
          );
          expect(res.headers['content-disposition']).toMatch(new RegExp(`^attachment; filename="goods-\\d{8}-\\d{6}\\.${format}"$`));
          expect(res.headers['content-encoding']).toBeUndefined();
          const file = res.body as Buffer;

          const env = await upload(c, file, `export.${format}`);
          expect(env.failCount).toBe(0);
          expect(env.results.map((r) => [r.row, r.status, r.message, r.id])).toEqual(before.map((g, i) => [i + 2, 'UPDATE', null, g.id]));
          expect(await catalog(t, c)).toEqual(before);
          expect(await catalogVersion(t, c)).toBe(version);
          expect(images().hits('/photo.jpg') + images().hits('/logo.png')).toBe(hits);

          // An edited cell is the one change.
          const edited =
            format === 'csv'
              ? Buffer.from(file.toString('utf8').replace('No extras', 'Edited name'))
              : await editXlsx(file, (sheet) => {
                  sheet.eachRow((row) => {
                    if (row.getCell(4).value === 'No extras') row.getCell(4).value = 'Edited name';
                  });
                });
          const again = await upload(c, edited, `edited.${format}`);
          expect(again.results.every((r) => r.status === 'UPDATE')).toBe(true);
          const after = await catalog(t, c);
          const changed = after.filter((g, i) => JSON.stringify(g) !== JSON.stringify(before[i]));
          expect(changed.map((g) => [g.sku, g.name])).toEqual([['RT-2', 'Edited name']]);
        });
      }

      it('the file has exactly the template columns; formula-like text is neutralised in CSV and a text cell in xlsx', async () => {
        const t = ctx();
        const c = await t.createCustomer();
        await variedCatalog(c);
        const csv = (await exportFile(c, { format: 'csv' })).body.toString('utf8') as string;
        expect(csv.startsWith(`\uFEFF${HEADER.join(',')}\r\n`)).toBe(true);
        const records: string[][] = parse(csv.slice(1));
        expect(records[0]).toEqual(HEADER);
        FORMULA_NAMES.forEach((name, i) => {
          // The sku, name, brand and description each start with a quote.
          const record = records.find((r) => r[1] === `'=F${i}`) as string[];
          expect(record.slice(3, 6)).toEqual([`'${name}`, `'${name}`, `'${name} in a description`]);
        });
        // No cell starts with a formula character (a quoted cell included).
        for (const record of records) for (const cell of record) expect(cell).not.toMatch(/^[=+\-@\t\r]/);

        const xlsx = (await exportFile(c)).body as Buffer;
        const workbook = new ExcelJS.Workbook();
        await workbook.xlsx.load(xlsx as unknown as ExcelJS.Buffer);
        const sheet = workbook.worksheets[0];
        expect(sheet.name).toBe('Goods');
        expect((sheet.getRow(1).values as unknown[]).slice(1)).toEqual(HEADER);
        const formulaRows: string[] = [];
        sheet.eachRow((row) => {
          row.eachCell((cell) => {
            expect(cell.type).not.toBe(ExcelJS.ValueType.Formula);
            if (typeof cell.value === 'string' && /^[=+\-@]/.test(cell.value)) formulaRows.push(cell.value);
          });
        });
        expect(formulaRows).toEqual(expect.arrayContaining(['=SUM(1,2)', '+1+2', '-3+4', '@cmd', '=F0']));
        // No formula element anywhere in the sheet's XML either.
        expect(xlsx.includes(Buffer.from('<f>'))).toBe(false);
      });

      it('searchKeyword exports only the matches (as the list matches them); an empty catalog exports the header only', async () => {
        const t = ctx();
        const c = await t.createCustomer();
        await sync(c, [
          { sku: 'KW-1', url: 'https://shop.example.com/kw/1', name: '스마트 워치' },
          { sku: 'KW-2', url: 'https://shop.example.com/kw/2', name: 'Phone', brand: 'WATCHMAKER' },
          { sku: 'KW-3', url: 'https://shop.example.com/kw/3', name: 'Cable' },
          { sku: 'watch-4', url: 'https://shop.example.com/kw/4', name: 'Strap' },
        ]);
        const listed = await http().get(path(c)).query({ searchKeyword: ' Watch ' }).set('Authorization', c.auth());
        const csv = (await exportFile(c, { format: 'csv', searchKeyword: ' Watch ' })).body.toString('utf8') as string;
        const skus = csv
          .split('\r\n')
          .slice(1, -1)
          .map((l) => l.split(',')[1]);
        expect(skus).toEqual(['KW-2', 'watch-4']);
        expect([...skus].reverse()).toEqual((listed.body.results as Body[]).map((g) => g.sku));

        const empty = await t.createCustomer();
        expect((await exportFile(empty, { format: 'csv' })).body.toString('utf8')).toBe(`\uFEFF${HEADER.join(',')}\r\n`);
        const workbook = new ExcelJS.Workbook();
        await workbook.xlsx.load((await exportFile(empty, { format: 'xlsx' })).body as ExcelJS.Buffer);
        expect(workbook.worksheets[0].rowCount).toBe(1);
        expect((workbook.worksheets[0].getRow(1).values as unknown[]).slice(1)).toEqual(HEADER);
        // Nothing matching is the same as an empty catalog.
        expect((await exportFile(c, { format: 'csv', searchKeyword: 'nothing-like-this' })).body.toString('utf8')).toBe(`\uFEFF${HEADER.join(',')}\r\n`);
      });

      it('a large catalog streams in id order across pages; bad parameters and no token are refused', async () => {
        const t = ctx();
        const c = await t.createCustomer();
        const n = 2_345;
        const items = Array.from({ length: n }, (_, i) => ({ sku: `BIG-${i}`, url: `https://shop.example.com/big/${i}`, name: `Big ${i}`, originalPrice: i }));
        await sync(c, items);
        const csv = (await exportFile(c, { format: 'csv' })).body.toString('utf8') as string;
        const lines = csv.split('\r\n').slice(1, -1);
        expect(lines).toHaveLength(n);
        const ids = lines.map((l) => Number(l.split(',')[0]));
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).toBe(n);

        // An empty format is the default, xlsx.
        const blank = await exportFile(c, { format: '' });
        expect(blank.headers['content-disposition']).toMatch(/\.xlsx"$/);
        expect((blank.body as Buffer).subarray(0, 2).toString()).toBe('PK');

        expectError(
          await http().get(path(c, '/excel/export')).query({ format: 'pdf' }).set('Authorization', c.auth()),
          400,
          -510,
          /format must be xlsx or csv/,
        );
        expectError(
          await http()
            .get(path(c, '/excel/export'))
            .query({ searchKeyword: ['a', 'b'] })
            .set('Authorization', c.auth()),
          400,
          -510,
        );
        expectError(await http().get(path(c, '/excel/export')), 401, -102);
        const other = await t.createCustomer();
        expectError(await http().get(path(c, '/excel/export')).set('Authorization', other.auth()), 401, -102);
      });
    });

    describe('failures while streaming', () => {
      it('a database failure between pages breaks the transfer off (never a complete-looking file, never a hang); before the first byte it is a 503', async () => {
        const t = ctx();
        const c = await t.createCustomer();
        await sync(
          c,
          Array.from({ length: 1_500 }, (_, i) => ({ sku: `DB-${i}`, url: `https://shop.example.com/db/${i}`, name: `Item ${i}` })),
        );
        const manager = t.app.get(Transactions).manager;
        const real = manager.query.bind(manager);
        const lost = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' });
        const spy = jest.spyOn(manager, 'query');
        try {
          for (const format of ['csv', 'xlsx']) {
            // The first page (1,000 goods) is read and sent; the second fails.
            let pages = 0;
            spy.mockImplementation((sql: string, params?: unknown[]) => {
              if (/FROM goods WHERE customerId = \? AND id > \?/.test(sql) && ++pages === 2) return Promise.reject(lost());
              return real(sql, params);
            });
            await expect(exportFile(c, { format })).rejects.toThrow(/aborted|socket hang up|ECONNRESET|terminated/i);
            expect(pages).toBe(2);
          }
          // Failing at once: the answer has not started, so it is the API's 503.
          spy.mockImplementation((sql: string, params?: unknown[]) => (/FROM goods WHERE/.test(sql) ? Promise.reject(lost()) : real(sql, params)));
          const res = await http().get(path(c, '/excel/export')).set('Authorization', c.auth());
          expectError(res, 503, -503);
        } finally {
          spy.mockRestore();
        }
        // The service goes on serving.
        const csv = (await exportFile(c, { format: 'csv' })).body.toString('utf8') as string;
        expect(csv.split('\r\n')).toHaveLength(1_500 + 2);
      });
    });

    describe('dry run', () => {
      it('sync: the same rows and counts as the real call that follows, and nothing written (rows, version, images, viewers)', async () => {
        const t = ctx();
        const c = live.A;
        const { key, goods } = await live.liveCampaign(c, 2);
        const v: Viewer = await live.viewer(c, key);
        const { seq } = await v.next('campaign.snapshot');
        const lastSeq = Number((await live.campaignRow(key)).lastSeq);

        const body = [
          { sku: 'DRY-1', url: 'https://shop.example.com/dry/1', name: 'New one', mediaUrl: images().url1('/v/dry1/photo.jpg') },
          { id: goods[0].id, name: 'Renamed in the campaign' },
          { sku: goods[1].sku, discountedPrice: '123.45' },
          { id: 99999999, name: 'Ghost' },
          { sku: 'DRY-1', brand: 'Made earlier in the batch' },
          { sku: 'DRY-2', name: 'No url' },
          { url: goods[1].url, sku: goods[0].sku },
        ];
        const before = await catalog(t, c);
        const version = await catalogVersion(t, c);
        const count = await goodsCount(t, c);
        const hits = images().hits('/v/dry1/photo.jpg');

        for (const spelling of ['true', '1', 'yes', 'ON']) {
          const dry = await sync(c, body, `?dryRun=${spelling}`);
          expect(await catalog(t, c)).toEqual(before);
          expect(await catalogVersion(t, c)).toBe(version);
          expect(await goodsCount(t, c)).toBe(count);
          expect(images().hits('/v/dry1/photo.jpg')).toBe(hits);
          expect(Number((await live.campaignRow(key)).lastSeq)).toBe(lastSeq);
          expect(dry.results[0]).toMatchObject({
            status: 'CREATE',
            id: null,
            medias: [],
            message: `dry run: image not fetched: ${images().url1('/v/dry1/photo.jpg')}`,
          });
        }
        const dry = await sync(c, body, '?dryRun=true');
        const real = await sync(c, body, '?dryRun=false');
        expect(images().hits('/v/dry1/photo.jpg')).toBe(hits + 1);
        expect(pick(dry)).toEqual(pick(real));
        expect(real.results.map((r) => r.status)).toEqual(['CREATE', 'UPDATE', 'UPDATE', 'FAIL', 'UPDATE', 'FAIL', 'FAIL']);
        // Rows as the real call answers them: the same fields, but for the ids and images of what it created.
        dry.results.forEach((row, i) => {
          const r = real.results[i];
          if (row.id === null) expect({ ...row, id: r.id, medias: r.medias, message: r.message }).toEqual(r);
          else expect(row).toEqual(r);
        });
        expect(dry.results.map((r) => r.id === null)).toEqual([true, false, false, false, true, true, true]);
        // The real call's event is the first the viewer gets after its snapshot: the dry runs told nobody.
        const event = await v.next('goods.update');
        expect(event.seq).toBe(seq + 1);
        expect(event.goods.map((g: Payload) => g.goodsId).sort()).toEqual([String(goods[0].id), String(goods[1].id)].sort());
        expect(empty(await sync(c, [], '?dryRun='))).toBe(true);
        expectError(
          await http().post(path(c, '/sync')).query({ dryRun: 'maybe' }).set('Authorization', c.auth()).send([]),
          400,
          -510,
          /dryRun must be true or false/,
        );
      });

      it('spreadsheet: the same rows and counts as the real upload that follows, nothing written', async () => {
        const t = ctx();
        const c = await t.createCustomer();
        await sync(c, [{ sku: 'SH-1', url: 'https://shop.example.com/sh/1', name: 'Stored' }]);
        const file = Buffer.from(
          [
            'sku,url,name,originalPrice',
            'SH-1,,Renamed,1000',
            'SH-2,https://shop.example.com/sh/2,Created,2000',
            'SH-3,,,',
            'SH-4,not a url,Bad,1',
            'SH-2,,Renamed in the same file,',
          ].join('\n'),
        );
        const before = await catalog(t, c);
        const version = await catalogVersion(t, c);
        const dry = await upload(c, file, 'goods.csv', '?dryRun=yes');
        expect(await catalog(t, c)).toEqual(before);
        expect(await catalogVersion(t, c)).toBe(version);
        const real = await upload(c, file, 'goods.csv');
        expect(pick(dry)).toEqual(pick(real));
        expect(real.results.map((r) => r.status)).toEqual(['UPDATE', 'CREATE', 'FAIL', 'FAIL', 'UPDATE']);
        // A dry run is answered at once: never as an import job.
        const asJob = await http()
          .post(path(c, '/excel'))
          .query({ dryRun: 'true', async: 'true' })
          .set('Authorization', c.auth())
          .attach('file', file, { filename: 'goods.csv', contentType: 'text/csv' });
        expectError(asJob, 400, -510, /dryRun cannot be combined with async/);
        expect(dry.results[1].id).toBeNull();
        expect(dry.results[4].id).toBeNull();
        expect(await catalogVersion(t, c)).toBeGreaterThan(version);
      });
    });

    describe('cursor paging (after)', () => {
      it('walks every goods exactly once in id order, with and without a keyword; totalCount counts all matches', async () => {
        const t = ctx();
        const c = await t.createCustomer();
        const n = 257;
        await sync(
          c,
          Array.from({ length: n }, (_, i) => ({ sku: `CW-${i}`, url: `https://shop.example.com/cw/${i}`, name: i % 3 === 0 ? `Watch ${i}` : `Item ${i}` })),
        );
        // A deletion in the middle leaves a gap the walk steps over.
        const gone = (await http().get(path(c, '/sku')).query({ value: 'CW-100' }).set('Authorization', c.auth())).body.id as number;
        expectOk(
          await http()
            .delete(path(c, `/${gone}`))
            .set('Authorization', c.auth()),
        );

        async function walk(query: Record<string, string>): Promise<{ ids: number[]; totals: number[] }> {
          const ids: number[] = [];
          const totals: number[] = [];
          let after = 0;
          for (;;) {
            const res = await http()
              .get(path(c))
              .query({ ...query, after: String(after), count: '50' })
              .set('Authorization', c.auth());
            expect(res.status).toBe(200);
            expect(Object.keys(res.body).sort()).toEqual(['_s', 'results', 'totalCount']);
            const page = (res.body.results as Body[]).map((g) => g.id as number);
            totals.push(res.body.totalCount as number);
            ids.push(...page);
            if (page.length < 50) return { ids, totals };
            after = page[page.length - 1];
          }
        }
        const all = await walk({});
        expect(all.ids).toHaveLength(n - 1);
        expect(new Set(all.ids).size).toBe(n - 1);
        expect(all.ids).toEqual([...all.ids].sort((a, b) => a - b));
        expect(all.ids).not.toContain(gone);
        expect(new Set(all.totals)).toEqual(new Set([n - 1]));

        const watches = await walk({ searchKeyword: 'watch' });
        const expected = Math.ceil(n / 3);
        expect(watches.ids).toHaveLength(expected);
        expect(new Set(watches.totals)).toEqual(new Set([expected]));
        const listed = await http().get(path(c)).query({ searchKeyword: 'watch', count: '100' }).set('Authorization', c.auth());
        expect([...watches.ids].reverse()).toEqual((listed.body.results as Body[]).map((g) => g.id));

        // page 1 (or empty) goes with after; an empty after is the usual newest-first paging.
        const first = await http().get(path(c)).query({ after: '0', page: '1', count: '2' }).set('Authorization', c.auth());
        expect((first.body.results as Body[]).map((g) => g.id)).toEqual(all.ids.slice(0, 2));
        const newest = await http().get(path(c)).query({ after: '', count: '2' }).set('Authorization', c.auth());
        expect((newest.body.results as Body[]).map((g) => g.id)).toEqual([...all.ids].reverse().slice(0, 2));
        const past = await http()
          .get(path(c))
          .query({ after: String(all.ids[all.ids.length - 1]) })
          .set('Authorization', c.auth());
        expect(past.body).toEqual({ results: [], totalCount: n - 1, _s: 0 });
      });

      it('an invalid after, or after with a page beyond 1, is 400 -510', async () => {
        const c = await ctx().createCustomer();
        for (const after of ['abc', '-1', '1.5', '1e3', '99999999999999999999']) {
          expectError(await http().get(path(c)).query({ after }).set('Authorization', c.auth()), 400, -510, /after/);
        }
        expectError(
          await http()
            .get(path(c))
            .query({ after: ['1', '2'] })
            .set('Authorization', c.auth()),
          400,
          -510,
          /after/,
        );
        expectError(await http().get(path(c)).query({ after: '5', page: '2' }).set('Authorization', c.auth()), 400, -510, /page cannot be combined with after/);
      });
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);

/** What a dry run must answer exactly as the real call: counts, and per row its number, status and the failure messages. */
function pick(env: Envelope): unknown {
  return {
    counts: [env.totalCount, env.createCount, env.updateCount, env.failCount, env._s],
    rows: env.results.map((r) => [r.row, r.status, r.status === 'FAIL' ? r.message : null, r.sku, r.name, r.url, r.originalPrice, r.discountedPrice]),
  };
}

function empty(env: Envelope): boolean {
  return env.totalCount === 0 && env.results.length === 0;
}

async function editXlsx(file: Buffer, edit: (sheet: ExcelJS.Worksheet) => void): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(file as unknown as ExcelJS.Buffer);
  edit(workbook.worksheets[0]);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}
