/**
 * npm run bench:corpus — what a customer's in-memory search corpus (src/goods/goods-search-corpus.ts)
 * costs the main thread, without a database: a catalog of N items served by a fake of the two queries a
 * load makes (texts generated on the fly, so that they do not sit in the heap), then four steps of a
 * twentieth of the catalog each (half the bound of patched items, so each one starts a rebuild in
 * memory): three bulk writes renaming that many items, then one creating that many new ones (whose ids
 * all come after the loaded items', as a bulk create's do). Prints the load's time, then for each step the time to apply
 * it, the rebuild's wall and CPU time, and the longest event-loop stall meanwhile
 * (perf_hooks.monitorEventLoopDelay), with the corpus's version and patched items after it: the corpus
 * must be at the step's version with nothing left patched. SQLite's corpus (texts only); MariaDB's also
 * holds the texts' collation weights, which need the server.
 *
 * Then --searches new keywords (numbers, brands, sku prefixes) matched against the rebuilt corpus: the
 * time of each match, mean, p50 and p99.
 *
 * Options: --goods=100000,1000000 (catalog sizes, one run each)  --searches=3000
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { AppConfig } from '../src/config/app-config';
import type { Transactions } from '../src/database/transactions';
import { GoodsSearchCorpus } from '../src/goods/goods-search-corpus';
import type { Metrics } from '../src/metrics/metrics.service';
import type { RedisConnection } from '../src/redis/redis.module';

const SIZES = (process.argv.find((a) => a.startsWith('--goods='))?.split('=')[1] ?? '100000,1000000').split(',').map(Number);
const SEARCHES = Number(process.argv.find((a) => a.startsWith('--searches='))?.split('=')[1] ?? 3000);

interface Internals {
  states: Map<number, { loading?: Promise<void> }>;
  corpora: Map<number, { version: number; patched?: Map<number, unknown> }>;
}

async function run(size: number): Promise<string[]> {
  const textOf = (id: number) => `smart watch ${id}\nbrand ${id % 97}\nsku-${String(id).padStart(7, '0')}`;
  let version = 1;
  const manager = {
    query: (sql: string, params: unknown[]) => {
      if (sql.startsWith('SELECT catalogVersion')) return Promise.resolve([{ v: version }]);
      const [, after, limit] = params as number[];
      const rows: Array<{ id: number; searchText: string }> = [];
      for (let id = after + 1; id <= Math.min(size, after + limit); id++) rows.push({ id, searchText: textOf(id) });
      return Promise.resolve(rows);
    },
  };
  const gauge = { inc: () => undefined, dec: () => undefined };
  const corpus = new GoodsSearchCorpus(
    { manager, isMysql: false } as unknown as Transactions,
    { limits: { searchMemoryBytes: 2048 * 1024 * 1024 } } as unknown as AppConfig,
    { searches: gauge, searchCorpusGoods: gauge, searchCorpusBytes: gauge } as unknown as Metrics,
    { client: null } as unknown as RedisConnection,
  );
  const internals = corpus as unknown as Internals;
  const lines: string[] = [];
  try {
    let started = performance.now();
    await corpus.match(1, 'warm-up', version);
    await internals.states.get(1)?.loading;
    lines.push(`${size} goods: load ${(performance.now() - started).toFixed(0)} ms`);
    const delay = monitorEventLoopDelay({ resolution: 1 });
    for (let round = 0; round < 4; round++) {
      const count = Math.floor(size / 20);
      const created = round === 3;
      const written = Array.from({ length: count }, (_, i) =>
        created ? { id: size + 1 + i, searchText: `created ${i}` } : { id: 1 + ((i * 7 + round) % size), searchText: `renamed ${round} ${i}` },
      );
      version++;
      delay.reset();
      delay.enable();
      const cpu = process.cpuUsage();
      started = performance.now();
      corpus.patch(1, version, written);
      const applied = performance.now() - started;
      await internals.states.get(1)?.loading;
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      delay.disable();
      const after = internals.corpora.get(1);
      lines.push(
        `${size} goods: step of ${count} ${created ? 'created' : 'renamed'} applied in ${applied.toFixed(0)} ms; rebuilt after ${wall.toFixed(0)} ms (CPU ${((used.user + used.system) / 1000).toFixed(0)} ms), ` +
          `longest stall ${(delay.max / 1e6).toFixed(1)} ms; corpus at version ${after?.version}/${version}, ${after?.patched?.size ?? 0} patched`,
      );
      console.log(lines[lines.length - 1]);
    }
    // New keywords against the rebuilt corpus (nothing patched): numbers of 3 to 6 digits, brands, sku prefixes.
    const times: number[] = [];
    let matched = 0;
    for (let n = 0; n < SEARCHES; n++) {
      const keyword = n % 3 === 0 ? String((n * 7919) % 10 ** (3 + (n % 4))) : n % 3 === 1 ? `brand ${n % 97}` : `sku-${String(n % 1000).padStart(4, '0')}`;
      const at = performance.now();
      matched += (await corpus.match(1, keyword, version))?.length ?? 0;
      times.push(performance.now() - at);
    }
    times.sort((a, b) => a - b);
    lines.push(
      `${size} goods: ${SEARCHES} new keywords matched in memory, mean ${(times.reduce((a, b) => a + b, 0) / SEARCHES).toFixed(2)} ms, ` +
        `p50 ${times[Math.floor(SEARCHES / 2)].toFixed(2)} ms, p99 ${times[Math.floor(SEARCHES * 0.99)].toFixed(2)} ms (${matched} matches)`,
    );
    console.log(lines[lines.length - 1]);
  } finally {
    corpus.onApplicationShutdown();
  }
  return lines;
}

async function main(): Promise<void> {
  const lines: string[] = [];
  for (const size of SIZES) lines.push(...(await run(size)));
  console.log('\nbench:corpus results (one process, no database; SQLite corpus)');
  for (const line of lines) console.log(line);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
