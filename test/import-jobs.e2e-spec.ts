import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { ImportJob } from '../src/excel/entities/import-job.entity';
import { ImportJobRunner } from '../src/excel/import-job-runner';
import { closeAllViewers, eventually, listenOn, Viewer } from './support/live-client';
import { describeServerProcesses, insertCustomer, ServerProcess } from './support/server-process';
import { csv, xlsx } from './support/sheet-fixtures';
import { describeEngines, TestCustomer } from './support/test-app';

/** Spreadsheet import jobs: POST .../excel?async=true and GET .../excel/jobs (docs/api-reference.md); without async=true, never a job. */

type Row = Record<string, unknown> & { row: number; status: string; message: string | null };
interface Job {
  jobId: number;
  state: string;
  rowsTotal: number | null;
  rowsDone: number;
  totalCount: number;
  createCount: number;
  updateCount: number;
  failCount: number;
  error: string | null;
  results?: Row[];
  _s: number;
}

/** Synchronous limits lowered so that small files cross them; the job limits lowered for the 413 case. */
const SETTINGS = {
  UPLOAD_MAX_BYTES: String(1024 * 1024),
  EXCEL_MAX_ROWS: '100',
  IMPORT_JOB_MAX_BYTES: String(8 * 1024 * 1024),
  IMPORT_JOB_POLL_MS: '100',
  IMPORT_JOB_CHUNK_ROWS: '500',
  IMPORT_JOB_KEEP: '3',
};

/** A goods sheet: rows 2.. with sku/name/url/price; every `failEvery`th row has a bad price (a FAIL row). */
function sheet(prefix: string, rows: number, failEvery = 0): Buffer {
  const lines: Array<Array<string | number>> = [['sku', 'name', 'url', 'originalPrice']];
  for (let i = 1; i <= rows; i++) {
    const bad = failEvery > 0 && i % failEvery === 0;
    lines.push([`${prefix}-${i}`, `상품 ${i}`, `https://shop.example.com/${prefix}/${i}`, bad ? 'not a price' : 1000 + i]);
  }
  return csv(lines);
}

function expectError(res: Response, status: number, code: number, message?: RegExp): void {
  expect({ status: res.status, _s: res.body._s }).toEqual({ status, _s: code });
  if (message) expect(res.body._e).toMatch(message);
}

/** A row result without what differs between two customers' imports of the same sheet (ids, currency). */
function comparable(row: Row): Record<string, unknown> {
  const { id: _id, ...rest } = row;
  return rest;
}

describeEngines(
  'spreadsheet import jobs',
  __filename,
  (ctx) => {
    afterEach(() => closeAllViewers());

    function upload(c: TestCustomer, file: Buffer, filename: string, query = '') {
      return ctx()
        .http.post(`/v1/goods/${c.accessKey}/excel${query}`)
        .set('Authorization', c.auth())
        .attach('file', file, { filename, contentType: 'text/csv' });
    }

    async function job(c: TestCustomer, jobId: number, query = ''): Promise<Job> {
      const res = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs/${jobId}${query}`).set('Authorization', c.auth());
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body as Job;
    }

    async function finished(c: TestCustomer, jobId: number, timeoutMs = 60_000): Promise<Job> {
      return eventually(
        () => job(c, jobId),
        (j) => j.state === 'succeeded' || j.state === 'failed',
        timeoutMs,
        100,
      );
    }

    /** Every row result of a job, page by page. */
    async function allResults(c: TestCustomer, jobId: number): Promise<Row[]> {
      const rows: Row[] = [];
      for (let page = 1; ; page++) {
        const part = await job(c, jobId, `?page=${page}&count=1000`);
        rows.push(...(part.results ?? []));
        if ((part.results ?? []).length < 1000) return rows;
      }
    }

    async function goodsCount(customerId: number): Promise<number> {
      const [{ n }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [customerId]);
      return Number(n);
    }

    it('async=true: 202 with the job and a Location; it ends succeeded with the counts and results of a synchronous import', async () => {
      const a = await ctx().createCustomer();
      const b = await ctx().createCustomer();
      const file = sheet('SAME', 60, 7);
      const sync = await upload(a, file, 'goods.csv').expect(200);

      const res = await upload(b, file, 'goods.csv', '?async=true');
      expect(res.status).toBe(202);
      const queued = res.body as Job;
      expect(queued).toMatchObject({ state: 'queued', rowsDone: 0, _s: 0 });
      expect(res.headers.location).toBe(`/v1/goods/${b.accessKey}/excel/jobs/${queued.jobId}`);

      const done = await finished(b, queued.jobId);
      expect(done).toMatchObject({
        state: 'succeeded',
        rowsTotal: 60,
        rowsDone: 60,
        totalCount: sync.body.totalCount,
        createCount: sync.body.createCount,
        updateCount: sync.body.updateCount,
        failCount: sync.body.failCount,
        error: null,
      });
      expect(done.failCount).toBe(8);
      expect((await ctx().dataSource.query('SELECT sheetCount FROM import_jobs WHERE id = ?', [queued.jobId]))[0].sheetCount).toBeNull();
      expect((await allResults(b, queued.jobId)).map(comparable)).toEqual((sync.body.results as Row[]).map(comparable));
      expect(await goodsCount(b.id)).toBe(52);
    }, 60_000);

    it('an .xlsx job: rows without goods values are skipped and rowsTotal ends exact; a hyperlink gives a URL cell its value', async () => {
      const a = await ctx().createCustomer();
      const file = await xlsx([
        ['sku', 'name', 'url', 'Note'],
        ['XJ-1', 'One', 'https://shop.example.com/xj/1'],
        [undefined, undefined, undefined, 'only an ignored column'],
        [],
        ['XJ-2', 'Two', 'https://shop.example.com/xj/2'],
      ]);
      const plain = await finished(a, (await upload(a, file, 'plain.xlsx', '?async=true').expect(202)).body.jobId);
      expect(plain).toMatchObject({ state: 'succeeded', rowsTotal: 2, rowsDone: 2, createCount: 2, failCount: 0 });
      expect((await allResults(a, plain.jobId)).map((r) => r.row)).toEqual([2, 5]);
      // The quick count taken at upload went to the job (which did not count the file again); a CSV has none.
      const [stored] = await ctx().dataSource.query('SELECT sheetCount FROM import_jobs WHERE id = ?', [plain.jobId]);
      expect(JSON.parse(stored.sheetCount as string)).toEqual({ valueRows: 3, rows: 3, hasLinks: false });

      const b = await ctx().createCustomer();
      const linked = await xlsx([
        ['sku', 'name', 'url'],
        ['XL-1', 'Linked', { text: 'Open', hyperlink: 'https://shop.example.com/xl/1' }],
      ]);
      const done = await finished(b, (await upload(b, linked, 'linked.xlsx', '?async=true').expect(202)).body.jobId);
      expect(done).toMatchObject({ state: 'succeeded', rowsTotal: 1, rowsDone: 1, createCount: 1 });
      expect((await allResults(b, done.jobId))[0]).toMatchObject({ row: 2, status: 'CREATE', url: 'https://shop.example.com/xl/1' });
    }, 60_000);

    it('without async=true a file over the synchronous row or size limit is 413 -413 naming the limit and async=true; nothing queued or written', async () => {
      const c = await ctx().createCustomer();
      const rows = await upload(c, sheet('OVER', 101), 'rows.csv');
      expectError(
        rows,
        413,
        -413,
        /^The sheet has more than 100 data rows, the limit of an immediate import; the same file can be imported as a background job with async=true \(up to 8 MB and 200,000 data rows; the answer is then 202 with the job\)$/,
      );
      const xlsxRows = await upload(
        c,
        await xlsx([['sku', 'name', 'url'], ...Array.from({ length: 101 }, (_, i) => [`OX-${i}`, 'x', `https://shop.example.com/ox/${i}`])]),
        'rows.xlsx',
      );
      expectError(xlsxRows, 413, -413, /more than 100 data rows.*async=true/);
      // Over UPLOAD_MAX_BYTES (1 MB here): refused once that much is stored, not read up to the job limit.
      const big = Buffer.concat([Buffer.from('sku,name\n'), Buffer.alloc(2 * 1024 * 1024, 'x')]);
      expectError(await upload(c, big, 'big.csv'), 413, -413, /^The file is over the 1 MB limit of an immediate import; .*async=true \(up to 8 MB/);
      // A dry run says the same limits, without proposing a job (dryRun with async=true is 400).
      expectError(
        await upload(c, sheet('OVER', 101), 'rows.csv', '?dryRun=true'),
        413,
        -413,
        /^A dry run takes a file within the immediate import limits \(1 MB and 100 data rows\); this one has more than 100 data rows$/,
      );
      expectError(
        await upload(c, big, 'big.csv', '?dryRun=true'),
        413,
        -413,
        /^A dry run takes a file within the immediate import limits .*; this one is over 1 MB$/,
      );
      // async=false, or a value that is no boolean, is no job either.
      expectError(await upload(c, sheet('OVER', 101), 'rows.csv', '?async=false'), 413, -413, /async=true/);
      expectError(await upload(c, sheet('OVER', 2), 'rows.csv', '?async=maybe'), 400, -510, /async must be true or false/);
      const list = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs`).set('Authorization', c.auth()).expect(200);
      expect(list.body.totalCount).toBe(0);
      expect(await goodsCount(c.id)).toBe(0);
      const imports = ctx().config.importJobs.dir;
      expect(existsSync(imports) ? readdirSync(imports).filter((f) => f.endsWith('.upload')) : []).toEqual([]);
    }, 60_000);

    it('the same file with async=true is a job (202): over the synchronous row limit; its failures CSV lists the FAIL rows', async () => {
      const c = await ctx().createCustomer();
      expectError(await upload(c, sheet('ROWS', 250, 50), 'rows.csv'), 413, -413, /async=true/);
      const res = await upload(c, sheet('ROWS', 250, 50), 'rows.csv', '?async=true');
      expect(res.status).toBe(202);
      expect(res.headers.location).toBe(`/v1/goods/${c.accessKey}/excel/jobs/${res.body.jobId}`);
      const done = await finished(c, res.body.jobId);
      expect(done).toMatchObject({ state: 'succeeded', rowsDone: 250, createCount: 245, failCount: 5 });

      const failures = await ctx()
        .http.get(`/v1/goods/${c.accessKey}/excel/jobs/${done.jobId}/failures.csv`)
        .set('Authorization', c.auth())
        .buffer(true)
        .parse((r, cb) => {
          let text = '';
          r.setEncoding('utf8');
          r.on('data', (chunk: string) => (text += chunk));
          r.on('end', () => cb(null, text));
        });
      expect(failures.status).toBe(200);
      expect(failures.headers['content-type']).toMatch(/^text\/csv/);
      expect(failures.headers['content-disposition']).toContain(`import-job-${done.jobId}-failures.csv`);
      const lines = (failures.body as string)
        .replace(/^\uFEFF/, '')
        .trim()
        .split('\r\n');
      expect(lines[0]).toBe('row,message,id,sku,url,name,brand,description,mediaUrl,originalPrice,discountedPrice,discountPercentage');
      expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(['51', '101', '151', '201', '251']);
      expect(lines[1]).toContain('ROWS-50');
      expect(lines[1]).toContain('not a price');
    }, 60_000);

    it('results are stored per chunk: any page size reads across chunks; the failures CSV skips chunks without FAIL rows', async () => {
      // 1,200 rows in chunks of 500: three stored groups; the FAIL rows (every 700th) are all in the second.
      const c = await ctx().createCustomer();
      const done = await finished(c, (await upload(c, sheet('PAGED', 1200, 700), 'paged.csv', '?async=true').expect(202)).body.jobId);
      expect(done).toMatchObject({ state: 'succeeded', rowsDone: 1200, failCount: 1 });
      const groups = await ctx().dataSource.query('SELECT seq, part, rowCount, failCount FROM import_job_results WHERE jobId = ? ORDER BY seq, part', [
        done.jobId,
      ]);
      expect(groups.map((g: Record<string, unknown>) => [Number(g.seq), Number(g.part), Number(g.rowCount), Number(g.failCount)])).toEqual([
        [0, 0, 500, 0],
        [500, 0, 500, 1],
        [1000, 0, 200, 0],
      ]);
      const all = await allResults(c, done.jobId);
      expect(all.map((r) => r.row)).toEqual(Array.from({ length: 1200 }, (_, i) => i + 2));
      // Pages of 7 cut groups anywhere; the last page is short; a page past the end is empty.
      const paged: Row[] = [];
      for (let page = 1; page <= 172; page++) paged.push(...((await job(c, done.jobId, `?page=${page}&count=7`)).results ?? []));
      expect(paged).toEqual(all);
      expect((await job(c, done.jobId, '?page=72&count=7')).results?.map((r) => r.row)).toEqual([499, 500, 501, 502, 503, 504, 505]);
      expect((await job(c, done.jobId, '?page=172&count=7')).results).toHaveLength(3);
      expect((await job(c, done.jobId, '?page=173&count=7')).results).toEqual([]);
      const failures = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs/${done.jobId}/failures.csv`).set('Authorization', c.auth()).expect(200);
      const lines = String(failures.text)
        .replace(/^\uFEFF/, '')
        .trim()
        .split('\r\n');
      expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(['701']);
    }, 90_000);

    it("lists only the customer's jobs; another customer's job id is 404", async () => {
      const a = await ctx().createCustomer();
      const b = await ctx().createCustomer();
      const res = await upload(a, sheet('MINE', 5), 'mine.csv', '?async=true').expect(202);
      await finished(a, res.body.jobId);

      const listA = await ctx().http.get(`/v1/goods/${a.accessKey}/excel/jobs`).set('Authorization', a.auth()).expect(200);
      expect(listA.body).toMatchObject({ totalCount: 1, _s: 0 });
      expect(listA.body.results[0]).toMatchObject({ jobId: res.body.jobId, fileName: 'mine.csv', state: 'succeeded' });
      expect(listA.body.results[0].results).toBeUndefined();
      // The envelope's _s is the list's, not repeated in each job.
      expect(Object.keys(listA.body.results[0])).not.toContain('_s');
      const listB = await ctx().http.get(`/v1/goods/${b.accessKey}/excel/jobs`).set('Authorization', b.auth()).expect(200);
      expect(listB.body).toEqual({ results: [], totalCount: 0, _s: 0 });

      expectError(await ctx().http.get(`/v1/goods/${b.accessKey}/excel/jobs/${res.body.jobId}`).set('Authorization', b.auth()), 404, -404);
      expectError(await ctx().http.get(`/v1/goods/${b.accessKey}/excel/jobs/${res.body.jobId}/failures.csv`).set('Authorization', b.auth()), 404, -404);
      expectError(await ctx().http.get(`/v1/goods/${a.accessKey}/excel/jobs/abc`).set('Authorization', a.auth()), 400, -510, /jobId/);
    }, 60_000);

    it('keeps the IMPORT_JOB_KEEP most recent jobs of a customer: older ones go with their results', async () => {
      const c = await ctx().createCustomer();
      const ids: number[] = [];
      for (let n = 1; n <= 5; n++) {
        const res = await upload(c, sheet(`KEEP${n}`, 3), `keep-${n}.csv`, '?async=true').expect(202);
        ids.push(res.body.jobId as number);
        await finished(c, res.body.jobId as number);
      }
      const list = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs`).set('Authorization', c.auth()).expect(200);
      expect(list.body.results.map((j: Job) => j.jobId)).toEqual([ids[4], ids[3], ids[2]]);
      expectError(await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs/${ids[0]}`).set('Authorization', c.auth()), 404, -404);
      const [{ n }] = await ctx().dataSource.query(`SELECT COUNT(*) AS n FROM import_job_results WHERE jobId IN (?, ?)`, [ids[0], ids[1]]);
      expect(Number(n)).toBe(0);
      expect(await goodsCount(c.id)).toBe(15);
    }, 60_000);

    it('async=true: a file over the job limit → 413 in the error shape, one over the synchronous size only is a job; a file that is no spreadsheet → 415, not queued', async () => {
      const c = await ctx().createCustomer();
      const big = Buffer.concat([Buffer.from('sku,name\n'), Buffer.alloc(8 * 1024 * 1024, 'x')]);
      expectError(await upload(c, big, 'big.csv', '?async=true'), 413, -413, /^The file is over the 8 MB limit of an import job$/);
      // Over the synchronous size limit (but within the job's) with async=true: a job, not a 413.
      const mid = Buffer.concat([Buffer.from('sku,name,url\n'), Buffer.from(`MID-1,${'m'.repeat(1_200_000)},https://shop.example.com/mid\n`)]);
      expect(mid.length).toBeGreaterThan(1024 * 1024);
      const accepted = await upload(c, mid, 'mid.csv', '?async=true');
      expect(accepted.status).toBe(202);
      await finished(c, accepted.body.jobId);
      expectError(await upload(c, Buffer.from('%PDF-1.7 ...'), 'doc.pdf', '?async=true'), 415, -415);
      const list = await ctx().http.get(`/v1/goods/${c.accessKey}/excel/jobs`).set('Authorization', c.auth()).expect(200);
      expect(list.body.results.map((j: Job) => j.jobId)).toEqual([accepted.body.jobId]);
    }, 60_000);

    it("claims fairly across customers: another customer's job queued behind one customer's many is taken before that customer's next ones", async () => {
      const a = await ctx().createCustomer();
      const b = await ctx().createCustomer();
      // The runner's claims, in order; the first job is held until all the others are queued (one job at a
      // time: IMPORT_JOB_CONCURRENCY is 1), so what is claimed next is the runner's choice alone.
      const runner: { start: (job: ImportJob) => Promise<void>; run: (job: ImportJob) => Promise<void> } = ctx().app.get<ImportJobRunner, unknown>(
        ImportJobRunner,
      ) as never;
      const { start, run } = runner;
      const claims: number[] = [];
      let release = (): void => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      runner.start = (job) => {
        claims.push(job.id);
        return start.call(runner, job);
      };
      runner.run = async (job) => {
        await held;
        return run.call(runner, job);
      };
      try {
        const queue = async (c: TestCustomer, name: string) => (await upload(c, sheet(name, 3), `${name}.csv`, '?async=true').expect(202)).body.jobId as number;
        const a1 = await queue(a, 'FAIR-A1');
        await eventually(
          async () => claims,
          (ids) => ids.includes(a1),
          10_000,
          20,
        );
        const a2 = await queue(a, 'FAIR-A2');
        const a3 = await queue(a, 'FAIR-A3');
        const b1 = await queue(b, 'FAIR-B1');
        const b2 = await queue(b, 'FAIR-B2');
        release();
        for (const [c, jobId] of [[a, a3] as const, [b, b2] as const]) expect(await finished(c, jobId)).toMatchObject({ state: 'succeeded', rowsDone: 3 });
        // B never served goes before A's second job; then the two take turns.
        expect(claims).toEqual([a1, b1, a2, b2, a3]);
      } finally {
        release();
        runner.start = start;
        runner.run = run;
      }
    }, 120_000);

    it('a job whose runs end without a trace is failed after IMPORT_JOB_MAX_ATTEMPTS of them instead of claimed again; fewer, it runs', async () => {
      const a = await ctx().createCustomer();
      const file = sheet('LOOP', 3);
      const res = await upload(a, file, 'loop.csv', '?async=true');
      expect(res.status).toBe(202);
      const jobId = res.body.jobId as number;
      expect(await finished(a, jobId)).toMatchObject({ state: 'succeeded', rowsDone: 3, createCount: 3 });
      const [{ filePath }] = await ctx().dataSource.query('SELECT filePath FROM import_jobs WHERE id = ?', [jobId]);
      const dir = ctx().config.importJobs.dir;

      /** The job as a node left it that died while running it: running, its lease run out, `stalled` runs since its last chunk. */
      async function diedWhileRunning(stalled: number): Promise<void> {
        writeFileSync(join(dir, filePath as string), file);
        await ctx().dataSource.query(
          "UPDATE import_jobs SET state = 'running', owner = 'a-node-that-died', leaseUntil = 1, stalledClaims = ?, error = NULL, finishedAt = NULL, " +
            'rowsDone = 2, lastRow = 3, createCount = 2 WHERE id = ?',
          [stalled, jobId],
        );
      }

      // Three runs that never finished (the default IMPORT_JOB_MAX_ATTEMPTS): the next claim fails it, saying what was applied.
      await diedWhileRunning(3);
      const failed = await finished(a, jobId);
      expect(failed).toMatchObject({ state: 'failed', rowsDone: 2 });
      expect(failed.error).toBe(
        'The job was started 3 times after sheet row 3 and each time the node running it stopped before it got further (the file may need ' +
          'more memory than a node has); it is not started again; the rows up to sheet row 3 (2 rows) were applied, the rest not',
      );
      expect(existsSync(join(dir, filePath as string))).toBe(false);

      // Two: it runs again (and the chunk it commits counts as getting further).
      await diedWhileRunning(2);
      expect(await finished(a, jobId)).toMatchObject({ state: 'succeeded', rowsDone: 3 });
      const [row] = await ctx().dataSource.query('SELECT stalledClaims, attempts FROM import_jobs WHERE id = ?', [jobId]);
      expect({ stalledClaims: Number(row.stalledClaims), attempts: Number(row.attempts) }).toEqual({ stalledClaims: 1, attempts: 3 });
    });

    it('a 50,000-row job: progress over HTTP and to operator sockets; other customers are served meanwhile; every row applied once', async () => {
      const c = await ctx().createCustomer();
      const other = await ctx().createCustomer();
      await upload(other, sheet('OTHER', 20), 'other.csv').expect(200);
      const base = await listenOn(ctx().app);
      const campaign = await ctx().http.post(`/v1/console/${c.accessKey}/campaigns`).set('Authorization', c.auth()).send({ title: 'Import watch' }).expect(200);
      const operator = await Viewer.connect(base, { accessKey: c.accessKey, campaignKey: campaign.body.campaignKey, role: 'operator', token: c.token() });

      const res = await upload(c, sheet('BIG', 50_000), 'big.csv', '?async=true').expect(202);
      const seen: number[] = [];
      let served = 0;
      for (;;) {
        const j = await job(c, res.body.jobId, '?count=1');
        seen.push(j.rowsDone);
        const list = await ctx().http.get(`/v1/goods/${other.accessKey}`).set('Authorization', other.auth());
        expect(list.status).toBe(200);
        expect(list.body.totalCount).toBe(20);
        served += 1;
        if (j.state === 'succeeded' || j.state === 'failed') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(seen[seen.length - 1]).toBe(50_000);
      for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
      expect(new Set(seen).size).toBeGreaterThan(2);
      expect(served).toBeGreaterThan(2);

      const done = await job(c, res.body.jobId);
      expect(done).toMatchObject({ state: 'succeeded', rowsTotal: 50_000, rowsDone: 50_000, createCount: 50_000, failCount: 0 });
      expect(await goodsCount(c.id)).toBe(50_000);

      await operator.waitFor((e) => e.type === 'import.progress' && e.payload.state === 'succeeded', 10_000);
      const progress = operator.events.filter((e) => e.type === 'import.progress').map((e) => e.payload);
      expect(progress.length).toBeGreaterThan(2);
      expect(progress.every((p) => p.jobId === res.body.jobId)).toBe(true);
      const counts = progress.map((p) => p.rowsDone as number);
      for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]);
      expect(progress[progress.length - 1]).toMatchObject({ state: 'succeeded', rowsDone: 50_000, rowsTotal: 50_000, createCount: 50_000, error: null });
    }, 240_000);
  },
  SETTINGS,
);

/**
 * The service as a real process, killed with SIGKILL in the middle of a job: the restarted process
 * resumes after the last committed chunk, and every row is applied exactly once.
 */
describeServerProcesses(
  'import job survives SIGKILL',
  `${__filename.replace(/\.e2e-spec\.ts$/, '')}-kill.e2e-spec.ts`,
  { ...SETTINGS, IMPORT_JOB_LEASE_MS: '2000', LOG_LEVEL: 'log' },
  (ctx) => {
    let server: ServerProcess | undefined;

    /** Uploads a CSV of `rows` goods named after `prefix` (a job: 202); its id and a reader of its state on any server process. */
    async function submitJob(on: ServerProcess, c: { accessKey: string; auth: string }, prefix: string, rows: number) {
      const form = new FormData();
      form.append('file', new Blob([sheet(prefix, rows)], { type: 'text/csv' }), `${prefix.toLowerCase()}.csv`);
      const accepted = await fetch(`${on.base}/v1/goods/${c.accessKey}/excel?async=true`, { method: 'POST', headers: { Authorization: c.auth }, body: form });
      expect(accepted.status).toBe(202);
      const { jobId } = (await accepted.json()) as Job;
      const read = async (s: ServerProcess) =>
        (await (await fetch(`${s.base}/v1/goods/${c.accessKey}/excel/jobs/${jobId}?count=1`, { headers: { Authorization: c.auth } })).json()) as Job;
      return { jobId, read };
    }

    it('resumes after the last committed chunk and applies every row exactly once', async () => {
      const { engine, env } = ctx();
      server = await ctx().start();
      const c = await insertCustomer(env);
      const { read } = await submitJob(server, c, 'KILL', 50_000);

      const midway = await eventually(
        () => read(server as ServerProcess),
        (j) => j.rowsDone >= 5_000,
        120_000,
        50,
      );
      expect(midway.state).toBe('running');
      server.signal('SIGKILL');
      await server.stopped();

      server = await ctx().start();
      const done = await eventually(
        () => read(server as ServerProcess),
        (j) => j.state === 'succeeded' || j.state === 'failed',
        180_000,
        200,
      );
      expect(done).toMatchObject({ state: 'succeeded', rowsTotal: 50_000, rowsDone: 50_000, createCount: 50_000, updateCount: 0, failCount: 0 });

      // Each sheet row became exactly one goods item, with that row's own values.
      const countsSql =
        'SELECT COUNT(*) AS n, COUNT(DISTINCT sku) AS skus, SUM(CASE WHEN name = CONCAT(?, SUBSTR(sku, 6)) THEN 1 ELSE 0 END) AS named FROM goods';
      let stats: { n: number; skus: number; named: number };
      if (engine === 'mysql') {
        const { createConnection } = await import('mysql2/promise');
        const { mysqlServer } = await import('./support/test-app');
        const conn = await createConnection({ ...mysqlServer, database: env.DB_NAME });
        const [rows] = await conn.query(countsSql, ['상품 ']);
        await conn.end();
        stats = (rows as Array<{ n: number; skus: number; named: number }>)[0];
      } else {
        const Database = (await import('better-sqlite3')).default;
        const db = new Database(`${env.DATA_DIR}/livegoods.sqlite`, { readonly: true });
        stats = db.prepare(countsSql.replace('CONCAT(?, SUBSTR(sku, 6))', '(? || SUBSTR(sku, 6))')).get('상품 ') as { n: number; skus: number; named: number };
        db.close();
      }
      expect({ n: Number(stats.n), skus: Number(stats.skus), named: Number(stats.named) }).toEqual({ n: 50_000, skus: 50_000, named: 50_000 });
    }, 420_000);

    it('SIGTERM: the running chunk commits, the job goes back to the queue, and the next start finishes it', async () => {
      await server?.kill();
      const { env } = ctx();
      server = await ctx().start();
      const c = await insertCustomer(env, 'Graceful');
      const { jobId, read } = await submitJob(server, c, 'TERM', 30_000);
      await eventually(
        () => read(server as ServerProcess),
        (j) => j.rowsDone >= 2_000,
        120_000,
        50,
      );
      server.signal('SIGTERM');
      expect(await server.stopped()).toEqual({ code: 0, signal: null });
      expect(server.output).toMatch(new RegExp(`import job ${jobId} left resumable after sheet row \\d+`));

      server = await ctx().start();
      const done = await eventually(
        () => read(server as ServerProcess),
        (j) => j.state === 'succeeded' || j.state === 'failed',
        180_000,
        200,
      );
      expect(done).toMatchObject({ state: 'succeeded', rowsDone: 30_000, createCount: 30_000, updateCount: 0, failCount: 0 });
    }, 420_000);
  },
);
