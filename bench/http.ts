/**
 * npm run bench:http — with 100,000 goods stored, measures with autocannon (10 connections) the list
 * page without a keyword, with a keyword, and register; prints req/s and p99 latency for each.
 * The keyword run rotates 8 keywords, so after the first requests it measures the steady state with
 * the match counts cached; a last run sends a new keyword on every request (every count computed).
 * Last, new keywords while one more client registers items all along (every write moves the catalog
 * version: the in-memory search corpus must follow the writes, or keywords fall back to the scan); with
 * MariaDB, the same on two nodes and Redis, searching one and writing on the other.
 * Options: --engines=sqlite,mysql (default both)  --goods=100000  --duration=10  --no-cluster  --redis=URL
 *          --sync-size=5000 (items per sync call in the measures with bulk writes)  --only=TEXT (only the measures whose title holds it)
 */
import autocannon from 'autocannon';
import { parsePrometheusText, valueOf } from '../test/support/prometheus-text';
import { BenchServer, Engine, goodsElement, peakRssMb, startServer } from './support';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const GOODS = Number(arg('goods', '100000'));
const DURATION = Number(arg('duration', '10'));
const ENGINES = arg('engines', 'sqlite,mysql').split(',') as Engine[];
const BATCH = 10_000;
const REDIS_URL = arg('redis', process.env.REDIS_URL || 'redis://127.0.0.1:6379');
/** With MariaDB among the engines: two nodes and Redis as well (see cluster), unless --no-cluster. */
const CLUSTER = ENGINES.includes('mysql') && !process.argv.includes('--no-cluster');
const KEYWORDS = ['워치', 'watch', 'linen', '이어폰', 'grinder', 'nordic', 'sku-00012', 'kimchi'];

async function seed(baseUrl: string, accessKey: string, auth: string): Promise<void> {
  for (let start = 0; start < GOODS; start += BATCH) {
    const body = Array.from({ length: Math.min(BATCH, GOODS - start) }, (_, i) => goodsElement(start + i));
    const res = await fetch(`${baseUrl}/v1/goods/${accessKey}/sync`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`seeding failed: HTTP ${res.status}`);
  }
}

async function run(title: string, options: autocannon.Options): Promise<string> {
  const result = await autocannon({ connections: 10, duration: DURATION, ...options });
  const non2xx = result.non2xx + result.errors;
  return `${title.padEnd(34)} ${result.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(result.latency.p50).padStart(4)} ms   p99 ${String(result.latency.p99).padStart(4)} ms${non2xx ? `   (${non2xx} errors/non-2xx!)` : ''}`;
}

/** Requests to `server`, each built anew: `next()` gives its path (and body). */
function varying(server: BenchServer, method: 'GET' | 'POST', next: () => { path: string; body?: string }): autocannon.Options {
  return {
    url: `${server.baseUrl}/v1/goods/${server.accessKey}`,
    headers: { authorization: server.auth, 'content-type': 'application/json' },
    requests: [{ method, setupRequest: (req) => ({ ...req, ...next() }) }],
  };
}

let searched = 0;
/** The list path with a keyword no request has sent before (a seeded sku, in a scattered order). */
function newKeywordPath(listPath: string): { path: string } {
  return { path: `${listPath}?searchKeyword=${encodeURIComponent(`sku-${String((searched++ * 37) % 99991).padStart(5, '0')}`)}` };
}

let registered = 0;
const tag = Date.now().toString(36);
/** A register call: a new item each time. */
function newItem(listPath: string): { path: string; body: string } {
  const n = ++registered;
  return {
    path: listPath,
    body: JSON.stringify({
      name: `Bench item ${n}`,
      brand: 'Bench',
      sku: `B-${tag}-${n}`,
      url: `https://shop.example.com/bench/${tag}/${n}`,
      originalPrice: 19.99,
      discountedPrice: 17.99,
      discountPercentage: 10,
    }),
  };
}

const SYNC_SIZE = Number(arg('sync-size', '5000'));
/** --only=TEXT: only the measures whose title holds TEXT (the seeding and warm-up still run). */
const ONLY = arg('only', '');
const wanted = (title: string) => title.includes(ONLY);

/** The server's count of keywords matched in memory and by a scan so far (livegoods_search_keywords_total). */
async function searchPaths(server: BenchServer): Promise<{ memory: number; scan: number }> {
  const families = parsePrometheusText(await (await fetch(`${server.baseUrl}/metrics`)).text());
  const count = (path: string) => valueOf(families, 'livegoods_search_keywords_total', { path }) ?? 0;
  return { memory: count('memory'), scan: count('scan') };
}

/** New keywords until `server` answers one from its in-memory corpus (its first load takes seconds at 100,000 goods on MariaDB). */
async function untilInMemory(server: BenchServer, listPath: string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const before = await searchPaths(server);
    await (await fetch(`${server.baseUrl}${newKeywordPath(listPath).path}`, { headers: { authorization: server.auth } })).arrayBuffer();
    if ((await searchPaths(server)).memory > before.memory) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the search corpus never loaded');
}

/** `n% from memory` for the keywords `server` matched since `before` (a searchPaths reading). */
async function fromMemory(server: BenchServer, before: { memory: number; scan: number }): Promise<string> {
  const after = await searchPaths(server);
  const memory = after.memory - before.memory;
  const all = memory + after.scan - before.scan;
  return `${all ? ((100 * memory) / all).toFixed(1) : '-'}% of keywords from memory`;
}

/**
 * One client syncing SYNC_SIZE seeded items with new names, one call after the other, for `seconds`:
 * each call is one bulk write of that many changed search texts (cycling through the seeded goods, their
 * names changing back and forth). The bodies are built before the clock starts, so that building them does
 * not hold up the bench's other clients. Resolves to the calls made and their mean time.
 */
function syncing(server: BenchServer, seconds: number): () => Promise<{ calls: number; meanMs: number }> {
  const windows = Math.max(1, Math.floor(GOODS / SYNC_SIZE));
  const bodies = [1, 2].flatMap((variant) =>
    Array.from({ length: windows }, (_, w) => JSON.stringify(Array.from({ length: SYNC_SIZE }, (_, i) => goodsElement(w * SYNC_SIZE + i, variant)))),
  );
  return async () => {
    const until = Date.now() + seconds * 1000;
    let calls = 0;
    let spent = 0;
    while (Date.now() < until) {
      const started = Date.now();
      const res = await fetch(`${server.baseUrl}/v1/goods/${server.accessKey}/sync`, {
        method: 'POST',
        headers: { authorization: server.auth, 'content-type': 'application/json' },
        body: bodies[calls % bodies.length],
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`sync while searching: HTTP ${res.status}`);
      spent += Date.now() - started;
      calls++;
    }
    return { calls, meanMs: calls ? spent / calls : 0 };
  };
}

type Measure = (title: string, options: autocannon.Options) => Promise<void>;

/**
 * New keywords on `search` (nine clients) while one client registers items on `write` all along (each
 * write moves the catalog version): the searches are measured; resolves to what the writer got through.
 */
async function newKeywordsWhileRegistering(search: BenchServer, write: BenchServer, listPath: string, title: string, measure: Measure): Promise<string> {
  const writing = autocannon({ ...varying(write, 'POST', () => newItem(listPath)), connections: 1, duration: DURATION });
  await measure(title, { ...varying(search, 'GET', () => newKeywordPath(listPath)), connections: 9 });
  const writes = await writing;
  return `${writes.requests.total} items registered, ${writes.requests.average.toFixed(0)}/s, p99 ${writes.latency.p99} ms`;
}

/**
 * New keywords on `search` (nine clients, its corpus loaded first) while one client syncs renamed items on
 * `write`, call after call: the searches are measured; resolves to the syncs made and the share of
 * keywords `search` matched in memory.
 */
async function newKeywordsWhileSyncing(search: BenchServer, write: BenchServer, listPath: string, title: string, measure: Measure): Promise<string> {
  await untilInMemory(search, listPath);
  const sync = syncing(write, DURATION);
  const before = await searchPaths(search);
  const syncs = sync();
  await measure(title, { ...varying(search, 'GET', () => newKeywordPath(listPath)), connections: 9 });
  const done = await syncs;
  return `${done.calls} syncs of ${SYNC_SIZE} renamed items, ${done.meanMs.toFixed(0)} ms each; ${await fromMemory(search, before)}`;
}

/**
 * Two nodes on one MariaDB database and Redis: new keywords on node A (nine clients) alone, then while one
 * client registers items on node B all along, then while it syncs renamed items on B. A's search corpus follows B's writes through the steps B shares
 * over Redis (docs/decisions/0018); without them every new keyword on A would scan.
 */
async function cluster(port: number): Promise<string[]> {
  const lines: string[] = [];
  const a = await startServer('mysql', port, 'http_cluster', { env: { REDIS_URL, REDIS_PREFIX: `bench-http-${Date.now().toString(36)}` } });
  let b: BenchServer | undefined;
  try {
    b = await startServer('mysql', port + 1, 'http_cluster', { join: a });
    await seed(a.baseUrl, a.accessKey, a.auth);
    const listPath = `/v1/goods/${a.accessKey}`;
    // Warm-up; it also loads A's corpus of the customer.
    await autocannon({ ...varying(a, 'GET', () => newKeywordPath(listPath)), connections: 10, duration: 5 });
    const print = (line: string) => {
      lines.push(`cluster: ${line}`);
      console.log(lines[lines.length - 1]);
    };
    const measure: Measure = async (title, options) => print(await run(title, options));
    if (wanted('new keyword on A'))
      await measure(
        'new keyword on A',
        varying(a, 'GET', () => newKeywordPath(listPath)),
      );
    const registerTitle = 'new keyword on A, 1 client registering on B';
    if (wanted(registerTitle)) print(`  (meanwhile on B: ${await newKeywordsWhileRegistering(a, b, listPath, registerTitle, measure)})`);
    const syncTitle = `new keyword on A, syncs of ${SYNC_SIZE} on B`;
    if (wanted(syncTitle)) print(`  (meanwhile on B: ${await newKeywordsWhileSyncing(a, b, listPath, syncTitle, measure)})`);
  } finally {
    await b?.stop();
    await a.stop();
  }
  return lines;
}

async function main(): Promise<void> {
  const lines: string[] = [];
  let port = 3820;
  for (const engine of ENGINES) {
    const server = await startServer(engine, port++, 'http');
    try {
      const started = Date.now();
      await seed(server.baseUrl, server.accessKey, server.auth);
      console.log(`${engine}: seeded ${GOODS} goods in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const headers = { authorization: server.auth, 'content-type': 'application/json' };
      const listPath = `/v1/goods/${server.accessKey}`;
      const listUrl = `${server.baseUrl}${listPath}`;
      // Warm-up so that the first figures do not include JIT and cache warm-up; then new keywords, so
      // that the customer's search corpus (loaded once a search finds it missing) is in memory before
      // any figure, whichever measures --only keeps.
      await autocannon({ url: `${listUrl}?page=1&count=30`, headers, connections: 10, duration: 5 });
      await autocannon({ ...varying(server, 'GET', () => newKeywordPath(listPath)), connections: 10, duration: 3 });

      const print = (line: string) => {
        lines.push(`${engine}: ${line}`);
        console.log(lines[lines.length - 1]);
      };
      const measure: Measure = async (title, options) => {
        if (wanted(title)) print(await run(title, options));
      };

      await measure('list, no keyword (count=30)', { url: `${listUrl}?page=1&count=30`, headers });
      let k = 0;
      await measure(
        'list, keyword (8 keywords rotating)',
        varying(server, 'GET', () => ({ path: `${listPath}?searchKeyword=${encodeURIComponent(KEYWORDS[k++ % KEYWORDS.length])}&page=1&count=30` })),
      );
      await measure(
        'list, a new keyword every request',
        varying(server, 'GET', () => newKeywordPath(listPath)),
      );
      await measure(
        'register (POST one item)',
        varying(server, 'POST', () => newItem(listPath)),
      );
      // New keywords while the catalog changes: one client registers items, then syncs renamed items.
      const registerTitle = 'new keyword, 1 client registering';
      if (wanted(registerTitle)) print(`  (meanwhile ${await newKeywordsWhileRegistering(server, server, listPath, registerTitle, measure)})`);
      const syncTitle = `new keyword, syncs of ${SYNC_SIZE}`;
      if (wanted(syncTitle)) print(`  (meanwhile ${await newKeywordsWhileSyncing(server, server, listPath, syncTitle, measure)})`);
      lines.push(`${engine}: server peak RSS ${peakRssMb(server.pid)} MB`);
    } finally {
      await server.stop();
    }
  }
  if (CLUSTER) lines.push(...(await cluster(port)));
  console.log(
    `\nbench:http results (${GOODS} goods stored, 10 connections, ${DURATION} s each; targets: unfiltered list p99 < 10 ms, keyword list p99 < 50 ms)`,
  );
  for (const line of lines) console.log(line);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
