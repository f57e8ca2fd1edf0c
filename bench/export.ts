/**
 * npm run bench:export — GET /v1/goods/{accessKey}/excel/export of a 100,000-goods catalog as .xlsx and
 * as CSV, over HTTP against the real server, on SQLite and on MariaDB: rows per second of each download
 * (request to last byte, read as fast as the client can), the server's CPU time for it, and the server's
 * peak RSS. The catalog is seeded through POST /sync, then the server process is replaced by a fresh one
 * on the same database (seeding leaves its own memory behind), whose peak RSS (VmHWM) covers only the
 * exports. A last run reads the xlsx slowly (a client on a slow link): the server must hold no more
 * memory for it.
 * Options: --engines=sqlite,mysql  --count=100000  --slow-kbps=2000 (0 skips the slow run)
 */
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuMs, enginesFromArgs, goodsElement, SERVER_NODE_ARGS, startServer } from './support';
import { processAlive } from '../test/support/process-alive';

const COUNT = Number(process.argv.find((a) => a.startsWith('--count='))?.split('=')[1] ?? 100_000);
const SLOW_KBPS = Number(process.argv.find((a) => a.startsWith('--slow-kbps='))?.split('=')[1] ?? 2000);
/** Elements per sync call while seeding (the sync's limit). */
const SEED_BATCH = 10_000;

function rssMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** A fresh server process on the environment (database, DATA_DIR) of the seeded one, on another port. */
async function freshServer(env: Record<string, string>, port: number): Promise<{ baseUrl: string; pid: number; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [...SERVER_NODE_ARGS, join(__dirname, '..', 'dist/main.js')], {
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 100) {
    if (child.exitCode !== null || waited > 60_000) throw new Error('the fresh server did not start');
    const ok = await fetch(`${baseUrl}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl,
    pid: child.pid as number,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function seed(baseUrl: string, accessKey: string, auth: string): Promise<void> {
  for (let first = 0; first < COUNT; first += SEED_BATCH) {
    const body = JSON.stringify(Array.from({ length: Math.min(SEED_BATCH, COUNT - first) }, (_, i) => goodsElement(first + i)));
    const res = await fetch(`${baseUrl}/v1/goods/${accessKey}/sync`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body,
    });
    const json = (await res.json()) as { failCount: number };
    if (res.status !== 200 || json.failCount) throw new Error(`seeding failed at ${first}: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  }
}

interface Download {
  ms: number;
  /** Server CPU time (user + system) spent meanwhile. */
  cpuMs: number;
  bytes: number;
  lines: number;
  peakMb: number;
}

/** Downloads one export; with `kbps`, reads at about that rate. Counts CSV lines (header included). */
async function download(baseUrl: string, accessKey: string, auth: string, pid: number, format: 'xlsx' | 'csv', kbps = 0): Promise<Download> {
  const cpuBefore = cpuMs(pid);
  const started = process.hrtime.bigint();
  const res = await fetch(`${baseUrl}/v1/goods/${accessKey}/excel/export?format=${format}`, { headers: { authorization: auth } });
  if (res.status !== 200 || !res.body) throw new Error(`export failed: HTTP ${res.status} ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    if (format === 'csv') for (const b of chunk) if (b === 10) lines += 1;
    if (kbps) await new Promise((r) => setTimeout(r, (chunk.length / (kbps * 1024)) * 1000));
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { ms, bytes, lines, cpuMs: cpuMs(pid) - cpuBefore, peakMb: Math.round(rssMb(pid, 'VmHWM')) };
}

async function main(): Promise<void> {
  const rows: string[] = [];
  let port = 3880;
  for (const engine of enginesFromArgs()) {
    const seeded = await startServer(engine, port++, 'export');
    let server: Awaited<ReturnType<typeof freshServer>> | undefined;
    try {
      const seeding = Date.now();
      await seed(seeded.baseUrl, seeded.accessKey, seeded.auth);
      const seedRss = rssMb(seeded.pid, 'VmHWM');
      process.kill(seeded.pid, 'SIGTERM');
      for (let waited = 0; waited < 30_000 && processAlive(seeded.pid); waited += 50) await new Promise((r) => setTimeout(r, 50));
      server = await freshServer(seeded.env, port++);
      console.log(
        `${engine}: seeded ${COUNT.toLocaleString('en-US')} goods in ${((Date.now() - seeding) / 1000).toFixed(1)} s (peak RSS of the seeding server ` +
          `${seedRss.toFixed(0)} MB); a fresh server on that database: RSS ${rssMb(server.pid, 'VmRSS').toFixed(0)} MB`,
      );
      const { accessKey, auth } = seeded;
      const peakKind = 'peak RSS since start';
      for (const format of ['xlsx', 'csv'] as const) {
        const d = await download(server.baseUrl, accessKey, auth, server.pid, format);
        if (format === 'csv' && d.lines !== COUNT + 1) throw new Error(`the CSV export has ${d.lines} lines, expected ${COUNT + 1}`);
        const rate = Math.round((COUNT / d.ms) * 1000);
        rows.push(
          `${engine.padEnd(7)} ${format.padEnd(5)} ${COUNT} rows  ${d.ms.toFixed(0).padStart(6)} ms  ${String(rate).padStart(7)} rows/s  ` +
            `server CPU ${d.cpuMs} ms (${Math.round((COUNT / Math.max(d.cpuMs, 1)) * 1000)} rows per CPU-second)  ` +
            `${(d.bytes / 1024 / 1024).toFixed(1).padStart(5)} MB  server ${peakKind} ${d.peakMb} MB`,
        );
        console.log(rows[rows.length - 1]);
      }
      if (SLOW_KBPS) {
        const d = await download(server.baseUrl, accessKey, auth, server.pid, 'xlsx', SLOW_KBPS);
        rows.push(
          `${engine.padEnd(7)} xlsx read at ~${SLOW_KBPS} kB/s: ${d.ms.toFixed(0)} ms, ${(d.bytes / 1024 / 1024).toFixed(1)} MB, server ${peakKind} ${d.peakMb} MB`,
        );
        console.log(rows[rows.length - 1]);
      }
    } finally {
      await server?.stop();
      await seeded.stop();
    }
  }
  console.log('\nbench:export results (targets: >= 20,000 rows/s, server peak RSS < 300 MB)');
  for (const row of rows) console.log(row);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
