import { DataSource } from 'typeorm';
import { ImportJob } from '../src/excel/entities/import-job.entity';
import { ImportJobRunner } from '../src/excel/import-job-runner';
import { createNodeCustomer, describeTwoNodes, expectOk, Node, NodeCustomer } from './support/cluster-app';
import { eventually } from './support/live-client';
import { csv } from './support/sheet-fixtures';

/** Import jobs on two nodes with REDIS_URL (BullMQ hands each job to one worker) and a shared DATA_DIR. */

function sheet(prefix: string, rows: number): Buffer {
  const lines: Array<Array<string | number>> = [['sku', 'name', 'url']];
  for (let i = 1; i <= rows; i++) lines.push([`${prefix}-${i}`, `Item ${i}`, `https://shop.example.com/${prefix}/${i}`]);
  return csv(lines);
}

describeTwoNodes('import jobs on two nodes (BullMQ)', __filename, 'Cluster importer', (cluster) => {
  /** How many jobs each node's runner started (a job claimed again would count twice). */
  function countStarts(node: Node): { calls: number[] } {
    const runner: { start: (job: { id: number }) => Promise<void> } = node.app.get<ImportJobRunner, unknown>(ImportJobRunner) as never;
    const seen: { calls: number[] } = { calls: [] };
    const original = runner.start.bind(runner);
    runner.start = (job) => {
      seen.calls.push(job.id);
      return original(job);
    };
    return seen;
  }

  it('each job runs on exactly one node, once, and applies every row once', async () => {
    const { A, B } = cluster;
    const onA = countStarts(A);
    const onB = countStarts(B);
    const customers: NodeCustomer[] = [cluster.C];
    for (let i = 0; i < 3; i++) customers.push(await createNodeCustomer(A, `Importer ${i}`));

    const jobs: Array<{ c: NodeCustomer; jobId: number }> = [];
    for (const [n, c] of customers.entries()) {
      // Uploads through either node: the file lands on the shared DATA_DIR.
      const node = n % 2 ? B : A;
      const res = await node.http
        .post(`/v1/goods/${c.accessKey}/excel?async=true`)
        .set('Authorization', c.auth())
        .attach('file', sheet(`N${n}`, 3_000), 'cluster.csv');
      expect(res.status).toBe(202);
      jobs.push({ c, jobId: res.body.jobId as number });
    }

    for (const { c, jobId } of jobs) {
      const done = await eventually(
        async () => {
          const res = await B.http.get(`/v1/goods/${c.accessKey}/excel/jobs/${jobId}?count=1`).set('Authorization', c.auth());
          expectOk(res);
          return res.body as { state: string; rowsDone: number; createCount: number };
        },
        (j) => j.state === 'succeeded' || j.state === 'failed',
        120_000,
        200,
      );
      expect(done).toMatchObject({ state: 'succeeded', rowsDone: 3_000, createCount: 3_000 });
    }

    const started = [...onA.calls, ...onB.calls].sort((x, y) => x - y);
    expect(started).toEqual(jobs.map((j) => j.jobId).sort((x, y) => x - y));
    const rows: Array<{ id: number | string; attempts: number | string; owner: string | null }> = await A.app.get(DataSource).query(
      `SELECT id, attempts, owner FROM import_jobs WHERE id IN (${jobs.map(() => '?').join(', ')})`,
      jobs.map((j) => j.jobId),
    );
    expect(rows.map((r) => Number(r.attempts))).toEqual(jobs.map(() => 1));
    for (const [n, c] of customers.entries()) {
      const [{ count }] = await A.app.get(DataSource).query('SELECT COUNT(*) AS count, COUNT(DISTINCT sku) AS skus FROM goods WHERE customerId = ?', [c.id]);
      expect([n, Number(count)]).toEqual([n, 3_000]);
    }
  }, 240_000);

  it("BullMQ hands jobs out oldest first, yet another customer's job queued behind one customer's many is taken before that customer's next ones", async () => {
    const { A, B } = cluster;
    const first = await createNodeCustomer(A, 'Fair first');
    const other = await createNodeCustomer(A, 'Fair other');
    const late = await createNodeCustomer(A, 'Fair late');
    // Both nodes' claims, in order; the first two jobs are held until the others are queued, so both
    // nodes' one slot (IMPORT_JOB_CONCURRENCY 1) is busy and what is claimed next is the runners' choice.
    type Runner = { start: (job: ImportJob) => Promise<void>; run: (job: ImportJob) => Promise<void> };
    const runners = [A, B].map((node) => node.app.get<ImportJobRunner, unknown>(ImportJobRunner) as never as Runner);
    const originals = runners.map(({ start, run }) => ({ start, run }));
    const claims: number[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    for (const [n, runner] of runners.entries()) {
      runner.start = (job) => {
        claims.push(job.id);
        return originals[n].start.call(runner, job);
      };
      runner.run = async (job) => {
        await held;
        return originals[n].run.call(runner, job);
      };
    }
    try {
      const queue = async (c: NodeCustomer, name: string) => {
        const res = await A.http.post(`/v1/goods/${c.accessKey}/excel?async=true`).set('Authorization', c.auth()).attach('file', sheet(name, 3), `${name}.csv`);
        expect(res.status).toBe(202);
        return res.body.jobId as number;
      };
      const a1 = await queue(first, 'FA1');
      const o1 = await queue(other, 'FO1');
      await eventually(
        async () => claims,
        (ids) => ids.length === 2,
        20_000,
        20,
      );
      const a2 = await queue(first, 'FA2');
      const a3 = await queue(first, 'FA3');
      const l1 = await queue(late, 'FL1');
      release();
      for (const [c, jobId] of [[first, a3] as const, [late, l1] as const]) {
        const done = await eventually(
          async () => (await B.http.get(`/v1/goods/${c.accessKey}/excel/jobs/${jobId}`).set('Authorization', c.auth())).body as { state: string },
          (j) => j.state === 'succeeded' || j.state === 'failed',
          60_000,
          100,
        );
        expect(done).toMatchObject({ state: 'succeeded' });
      }
      // The late customer (never served) goes before the first one's next jobs (BullMQ may hand those two out in either order).
      expect(claims.slice(0, 3)).toEqual([a1, o1, l1]);
      expect(claims.slice(3).sort((x, y) => x - y)).toEqual([a2, a3]);
    } finally {
      release();
      for (const [n, runner] of runners.entries()) Object.assign(runner, originals[n]);
    }
  }, 120_000);
});
