/**
 * npm run bench:scale — the cost curve: how each cost grows with the work, on the real server.
 *
 *   sync:    1,000 / 10,000 / 50,000 new goods (in calls of at most 10,000 elements), then the same
 *            goods changed: time, goods/s, server RSS after each step.
 *   catalog: the catalog grown to 10,000 / 100,000 / 1,000,000 goods (seeded through /sync, in calls of
 *            10,000: the time and the server's longest event-loop stall meanwhile are printed); at each
 *            size the list page without a keyword and a keyword never searched before (every request a
 *            new one: 3+ characters, two Hangul syllables, one Hangul syllable in turn), 10 connections
 *            (autocannon): req/s, p50, p99, max and the server's longest event-loop stall meanwhile;
 *            server RSS and database size. Before the search figures, one search loads the customer's
 *            in-memory search corpus (SEARCH_MEMORY_MB): the time that takes, its size and the server's
 *            longest event-loop stall meanwhile are printed; the searches after it are matched in memory.
 *            Then keywords searched before (REPEATED_KEYWORDS, from one every item holds to rare ones),
 *            pages 1, 2, 10 and 300 of each in turn: answered from the list cache.
 *   fan-out: bench:fanout at 1,000 / 5,000 / 10,000 viewers on one process (SQLite) and 20,000 viewers on
 *            two processes + Redis (MariaDB): p50, p99, delivered/expected, server peak RSS.
 *
 * Options: --engines=sqlite,mysql  --sizes=10000,100000,1000000  --syncs=1000,10000,50000
 *          --viewers=1000,5000,10000  --cluster-viewers=20000 (0: none)  --duration=10 (s per measurement)
 *          --parts=sync,catalog,fanout
 * Seeding 1,000,000 goods takes a few minutes per engine; the whole run about 20 minutes.
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { BenchServer, createCustomer, Engine, goodsElement, peakRssMb, startServer } from './support';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const list = (name: string, fallback: string) => arg(name, fallback).split(',').filter(Boolean).map(Number);
const ENGINES = arg('engines', 'sqlite,mysql').split(',') as Engine[];
const SIZES = list('sizes', '10000,100000,1000000');
const SYNCS = list('syncs', '1000,10000,50000');
const VIEWERS = list('viewers', '1000,5000,10000');
const CLUSTER_VIEWERS = Number(arg('cluster-viewers', '20000'));
const DURATION = Number(arg('duration', '10'));
const PARTS = new Set(arg('parts', 'sync,catalog,fanout').split(','));
const CALL = 10_000;

const rows: string[] = [];
const out = (line: string) => {
  rows.push(line);
  console.log(line);
};

/** Current resident memory of a process (VmRSS), in MB. */
function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
}

async function sync(server: BenchServer, accessKey: string, auth: string, elements: Array<Record<string, unknown>>): Promise<void> {
  for (let start = 0; start < elements.length; start += CALL) {
    const res = await fetch(`${server.baseUrl}/v1/goods/${accessKey}/sync`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(elements.slice(start, start + CALL)),
    });
    const body = (await res.json()) as { failCount?: number };
    if (res.status !== 200 || body.failCount) throw new Error(`sync failed: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  }
}

async function syncCurve(engine: Engine, server: BenchServer): Promise<void> {
  // Warm-up (JIT, statement caches) so that the first step is not the cold start.
  const warm = await createCustomer(server.env, 'Warm-up');
  await sync(
    server,
    warm.accessKey,
    warm.auth,
    Array.from({ length: 2000 }, (_, i) => goodsElement(5_000_000 + i)),
  );
  let first = 0;
  for (const count of SYNCS) {
    // A customer of its own per step: every step starts from an empty catalog.
    const customer = await createCustomer(server.env, `Sync ${count}`);
    for (const [label, variant] of [
      ['create', 0],
      ['update', 1],
    ] as const) {
      const elements = Array.from({ length: count }, (_, i) => goodsElement(first + i, variant));
      const started = performance.now();
      await sync(server, customer.accessKey, customer.auth, elements);
      const ms = performance.now() - started;
      out(
        `${engine.padEnd(6)} sync    ${label} ${String(count).padStart(9)} goods  ${ms.toFixed(0).padStart(7)} ms  ${String(Math.round((count / ms) * 1000)).padStart(6)} goods/s   RSS ${rssMb(server.pid)} MB`,
      );
    }
    first += count;
  }
}

const HANGUL_FIRST = 0xac00;
const HANGUL_COUNT = 11_172;
const syllable = (n: number) => String.fromCharCode(HANGUL_FIRST + (n % HANGUL_COUNT));

/** A keyword no earlier request used: 3+ characters, two Hangul syllables, one Hangul syllable, in turn. */
function freshKeywords(): () => string {
  let n = 0;
  const used = new Set<string>();
  return () => {
    for (;;) {
      n += 1;
      const kind = n % 3;
      const k = Math.floor(n / 3);
      const keyword = kind === 0 ? `watch ${(k * 7919) % 1_000_000}` : kind === 1 ? syllable(k * 7919) + syllable(k * 104729 + 17) : syllable(k * 7919 + 5);
      if (!used.has(keyword)) {
        used.add(keyword);
        return keyword;
      }
    }
  };
}

/**
 * Keywords of every density in the seeded catalog (goodsElement): in every item, in two of three, in one
 * of six, in goods seeded early only (`watch 1`: the names from 1 to 199,999; `sku-00`: below 100,000), a
 * rare one; and the pages asked of them in turn.
 */
const REPEATED_KEYWORDS = ['e', 'a', '1', '스', '워치', 'watch', 'watch 1', 'sku-00', 'smart watch 12'];
const REPEATED_PAGES = [1, 2, 10, 300];

async function measure(options: autocannon.Options): Promise<string> {
  const r = await autocannon({ connections: 10, duration: DURATION, ...options });
  const bad = r.non2xx + r.errors;
  return `${r.requests.average.toFixed(0).padStart(6)} req/s  p50 ${String(r.latency.p50).padStart(4)} ms  p99 ${String(r.latency.p99).padStart(5)} ms  max ${String(r.latency.max).padStart(5)} ms${bad ? `  (${bad} errors/non-2xx!)` : ''}`;
}

/** measure() on `server`, with the server's longest event-loop stall meanwhile. */
async function measureWithStall(server: BenchServer, options: autocannon.Options): Promise<string> {
  await server.loopStallMs();
  const figures = await measure(options);
  return `${figures}; longest event-loop stall ${Math.round(await server.loopStallMs())} ms`;
}

function databaseMb(server: BenchServer): string {
  if (server.engine !== 'sqlite') return '';
  const file = join(server.env.DATA_DIR, 'livegoods.sqlite');
  let bytes = statSync(file).size;
  try {
    bytes += statSync(`${file}-wal`).size;
  } catch {
    /* no WAL file */
  }
  return `, database file ${Math.round(bytes / 1024 / 1024)} MB`;
}

/** Searches once, then waits until /metrics shows a search corpus of `size` goods: its bytes (undefined after 5 minutes). */
async function corpusLoaded(server: BenchServer, searchPath: string, size: number): Promise<number | undefined> {
  await (await fetch(`${server.baseUrl}${searchPath}`, { headers: { authorization: server.auth } })).arrayBuffer();
  // From here on the stalls are the load's (the search above scanned, as every search did before it).
  await server.loopStallMs();
  const until = performance.now() + 300_000;
  while (performance.now() < until) {
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const goods = /^livegoods_search_corpus_goods (\d+)/m.exec(metrics);
    if (goods && Number(goods[1]) >= size) return Number(/^livegoods_search_corpus_bytes (\d+)/m.exec(metrics)?.[1] ?? 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

async function catalogCurve(engine: Engine, server: BenchServer): Promise<void> {
  const headers = { authorization: server.auth };
  const listPath = `/v1/goods/${server.accessKey}`;
  let stored = 0;
  for (const size of SIZES) {
    const started = performance.now();
    // A new window of the loop probe: the stalls of the seeding calls.
    await server.loopStallMs();
    for (; stored < size; stored += CALL) {
      await sync(
        server,
        server.accessKey,
        server.auth,
        Array.from({ length: Math.min(CALL, size - stored) }, (_, i) => goodsElement(stored + i)),
      );
    }
    const seedS = (performance.now() - started) / 1000;
    out(
      `${engine.padEnd(6)} seeding ${String(size).padStart(9)} goods  in ${seedS.toFixed(1)} s (calls of ${CALL}), longest event-loop stall ${Math.round(await server.loopStallMs())} ms`,
    );
    await autocannon({ url: `${server.baseUrl}${listPath}?page=1&count=30`, headers, connections: 10, duration: 2 });
    const list = await measureWithStall(server, { url: `${server.baseUrl}${listPath}?page=1&count=30`, headers });
    out(`${engine.padEnd(6)} list    ${String(size).padStart(9)} goods  ${list}`);
    // The first search loads the customer's in-memory search corpus in the background (searches are
    // scanned meanwhile): wait for it, and print how long it took.
    const loadStarted = performance.now();
    const corpus = await corpusLoaded(server, `${listPath}?searchKeyword=${encodeURIComponent(`warm-up ${size}`)}&page=1&count=30`, size);
    out(
      `${engine.padEnd(6)} corpus  ${String(size).padStart(9)} goods  ${corpus !== undefined ? `loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s, ${Math.round(corpus / 2 ** 20)} MB (${Math.round(corpus / size)} bytes a goods item), longest event-loop stall meanwhile ${Math.round(await server.loopStallMs())} ms` : 'not loaded (over SEARCH_MEMORY_MB, or scanned on this server): searches scan'}`,
    );
    const next = freshKeywords();
    const search = await measureWithStall(server, {
      url: `${server.baseUrl}${listPath}`,
      headers,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `${listPath}?searchKeyword=${encodeURIComponent(next())}&page=1&count=30` }) }],
    });
    out(`${engine.padEnd(6)} search  ${String(size).padStart(9)} goods  ${search}`);
    // Keywords searched before, from the ones every item holds to rare ones, and pages deep into them.
    let turn = 0;
    const repeatedPath = () => {
      turn += 1;
      const keyword = REPEATED_KEYWORDS[turn % REPEATED_KEYWORDS.length];
      const page = REPEATED_PAGES[Math.floor(turn / REPEATED_KEYWORDS.length) % REPEATED_PAGES.length];
      return `${listPath}?searchKeyword=${encodeURIComponent(keyword)}&page=${page}&count=30`;
    };
    for (const keyword of REPEATED_KEYWORDS)
      await (await fetch(`${server.baseUrl}${listPath}?searchKeyword=${encodeURIComponent(keyword)}`, { headers })).arrayBuffer();
    const repeated = await measureWithStall(server, {
      url: `${server.baseUrl}${listPath}`,
      headers,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: repeatedPath() }) }],
    });
    out(`${engine.padEnd(6)} repeat  ${String(size).padStart(9)} goods  ${repeated}`);
    out(
      `${engine.padEnd(6)}         ${String(size).padStart(9)} goods  server RSS ${rssMb(server.pid)} MB (peak ${peakRssMb(server.pid)} MB)${databaseMb(server)}`,
    );
  }
}

/** Runs bench:fanout in a child process and keeps its figures. */
function fanout(mode: 'single' | 'cluster', viewers: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, join(__dirname, 'fanout.ts'), `--viewers=${viewers}`, `--mode=${mode}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const figures = /delivered\/expected (\d+)\/(\d+)\s+p50 ([\d.]+) ms\s+p99 ([\d.]+) ms\s+max ([\d.]+) ms/.exec(text);
      const rss = /server peak RSS[^:]*: ([^;\n]*)/.exec(text);
      if (code !== 0 || !figures) {
        out(`fanout  ${mode.padEnd(7)} ${String(viewers).padStart(6)} viewers  failed (exit ${code}): ${text.trim().split('\n').slice(-3).join(' | ')}`);
        resolve();
        return;
      }
      const [, delivered, expected, p50, p99, max] = figures;
      out(
        `fanout  ${mode.padEnd(7)} ${String(viewers).padStart(6)} viewers  p50 ${Number(p50).toFixed(0).padStart(4)} ms  p99 ${Number(p99).toFixed(0).padStart(4)} ms  max ${Number(max).toFixed(0).padStart(4)} ms  delivered ${delivered}/${expected}  server peak RSS ${rss ? rss[1].trim() : '?'}`,
      );
      resolve();
    });
  });
}

async function main(): Promise<void> {
  console.log(`bench:scale on ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`);
  let port = 3860;
  for (const engine of ENGINES) {
    if (!PARTS.has('sync') && !PARTS.has('catalog')) break;
    const server = await startServer(engine, port++, 'scale', { loopProbe: true });
    try {
      if (PARTS.has('sync')) await syncCurve(engine, server);
      if (PARTS.has('catalog')) await catalogCurve(engine, server);
    } finally {
      await server.stop();
    }
  }
  if (PARTS.has('fanout')) {
    for (const viewers of VIEWERS) await fanout('single', viewers);
    if (CLUSTER_VIEWERS) await fanout('cluster', CLUSTER_VIEWERS);
  }
  console.log(`\nbench:scale results (${DURATION} s per measurement, 10 connections)`);
  for (const row of rows) console.log(row);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
