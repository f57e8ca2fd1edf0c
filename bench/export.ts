/**
 * npm run bench:export — GET /v1/goods/{accessKey}/excel/export of a 100,000-goods catalog as .xlsx and
 * as CSV, over HTTP against the real server, on SQLite and on MariaDB: rows per second of each download
 * (first byte to last, read as fast as the client can) and the server's peak RSS during the export
 * (its peak is reset after seeding, /proc/<pid>/clear_refs, so that seeding the catalog does not count;
 * where that is refused the highest RSS sampled every 20 ms is printed instead). A last run reads the
 * xlsx slowly (a client on a slow link), to show that the server holds no more in memory then.
 * Options: --engines=sqlite,mysql  --count=100000  --slow-kbps=2000 (0 skips the slow run)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { enginesFromArgs, goodsElement, startServer } from './support';

const COUNT = Number(process.argv.find((a) => a.startsWith('--count='))?.split('=')[1] ?? 100_000);
const SLOW_KBPS = Number(process.argv.find((a) => a.startsWith('--slow-kbps='))?.split('=')[1] ?? 2000);
/** Elements per sync call while seeding (the sync's limit). */
const SEED_BATCH = 10_000;

function rssMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

/** Resets the process's peak RSS (VmHWM) to its current RSS; false when the kernel refuses. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
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
    if (res.status !== 200 || json.failCount) throw new Error(`seeding failed: HTTP ${res.status}`);
  }
}

interface Download {
  ms: number;
  bytes: number;
  lines: number;
  peakMb: number;
}

/** Downloads one export; with `kbps`, reads at about that rate. Counts CSV lines (header included). */
async function download(baseUrl: string, accessKey: string, auth: string, pid: number, format: 'xlsx' | 'csv', kbps = 0): Promise<Download> {
  let sampled = rssMb(pid, 'VmRSS');
  const sampler = setInterval(() => (sampled = Math.max(sampled, rssMb(pid, 'VmRSS'))), 20);
  const canReset = resetPeak(pid);
  try {
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
    return { ms, bytes, lines, peakMb: Math.round(canReset ? rssMb(pid, 'VmHWM') : sampled) };
  } finally {
    clearInterval(sampler);
  }
}

async function main(): Promise<void> {
  const rows: string[] = [];
  let port = 3850;
  for (const engine of enginesFromArgs()) {
    const server = await startServer(engine, port++, 'export');
    try {
      const seeding = Date.now();
      await seed(server.baseUrl, server.accessKey, server.auth);
      console.log(
        `${engine}: seeded ${COUNT.toLocaleString('en-US')} goods in ${((Date.now() - seeding) / 1000).toFixed(1)} s; server RSS now ${rssMb(server.pid, 'VmRSS').toFixed(0)} MB`,
      );
      const peakKind = resetPeak(server.pid) ? 'peak RSS during the export' : 'highest RSS sampled during the export';
      // One small export first: exceljs is loaded on first use.
      await download(server.baseUrl, server.accessKey, server.auth, server.pid, 'xlsx');
      for (const format of ['xlsx', 'csv'] as const) {
        const d = await download(server.baseUrl, server.accessKey, server.auth, server.pid, format);
        if (format === 'csv' && d.lines !== COUNT + 1) throw new Error(`the CSV export has ${d.lines} lines, expected ${COUNT + 1}`);
        const rate = Math.round((COUNT / d.ms) * 1000);
        rows.push(
          `${engine.padEnd(7)} ${format.padEnd(5)} ${COUNT} rows  ${d.ms.toFixed(0).padStart(6)} ms  ${String(rate).padStart(7)} rows/s  ` +
            `${(d.bytes / 1024 / 1024).toFixed(1).padStart(5)} MB  server ${peakKind} ${d.peakMb} MB`,
        );
        console.log(rows[rows.length - 1]);
      }
      if (SLOW_KBPS) {
        const d = await download(server.baseUrl, server.accessKey, server.auth, server.pid, 'xlsx', SLOW_KBPS);
        rows.push(
          `${engine.padEnd(7)} xlsx read at ~${SLOW_KBPS} kB/s: ${d.ms.toFixed(0)} ms, ${(d.bytes / 1024 / 1024).toFixed(1)} MB, server ${peakKind} ${d.peakMb} MB`,
        );
        console.log(rows[rows.length - 1]);
      }
    } finally {
      await server.stop();
    }
  }
  console.log('\nbench:export results (targets: >= 20,000 rows/s, server peak RSS < 300 MB)');
  for (const row of rows) console.log(row);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
