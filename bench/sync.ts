/**
 * npm run bench:sync — syncs 10,000 new goods, then the same 10,000 with changes, over HTTP against
 * the real server, on SQLite and on MariaDB; prints goods per second for each run. Then the fairness
 * probe: --probe-calls (default 5) calls of 10,000 more new goods each, then their changes, while another
 * customer reads its list page over and over (bench/support.ts measureFairness): that customer's list
 * p50/p99/max and the server's longest event-loop stall during each call, then over the calls of each
 * kind together (one call gets 40–90 list requests, so its own p99 is its slowest request).
 * A warm-up call of 2,000 new goods and one with their changes comes first, on another customer.
 * Options: --engines=sqlite,mysql  --count=10000  --probe-calls=5
 */
import { createCustomer, enginesFromArgs, fairnessOverCalls, goodsElement, peakRssMb, startServer } from './support';

const COUNT = Number(process.argv.find((a) => a.startsWith('--count='))?.split('=')[1] ?? 10_000);

async function syncOnce(baseUrl: string, accessKey: string, auth: string, body: unknown[]): Promise<{ ms: number; counts: string }> {
  const started = process.hrtime.bigint();
  const res = await fetch(`${baseUrl}/v1/goods/${accessKey}/sync`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { createCount: number; updateCount: number; failCount: number };
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (res.status !== 200 || json.failCount) throw new Error(`sync failed: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return { ms, counts: `create ${json.createCount}, update ${json.updateCount}, fail ${json.failCount}` };
}

async function main(): Promise<void> {
  const rows: string[] = [];
  let port = 3810;
  for (const engine of enginesFromArgs()) {
    const server = await startServer(engine, port++, 'sync', { loopProbe: true });
    try {
      // Warm-up, as a first call after start would not be measured in production either: JIT, statement
      // caches and the validation worker's start (another customer, so the measured calls start empty).
      // Both paths: 2,000 new goods, then the same with changes (the update path decides against stored
      // rows and writes other statements; warmed by creates alone, the first update ran 10-25% slower).
      const warm = await createCustomer(server.env, 'Warm-up');
      for (const variant of [0, 1]) {
        await syncOnce(
          server.baseUrl,
          warm.accessKey,
          warm.auth,
          Array.from({ length: 2000 }, (_, i) => goodsElement(5_000_000 + i, variant)),
        );
      }
      const created = Array.from({ length: COUNT }, (_, i) => goodsElement(i));
      const changed = Array.from({ length: COUNT }, (_, i) => goodsElement(i, 1));
      for (const [label, body] of [
        ['create', created],
        ['update', changed],
      ] as const) {
        const { ms, counts } = await syncOnce(server.baseUrl, server.accessKey, server.auth, body);
        const rate = Math.round((COUNT / ms) * 1000);
        rows.push(
          `${engine.padEnd(7)} ${label.padEnd(7)} ${String(COUNT).padStart(6)} goods  ${ms.toFixed(0).padStart(6)} ms  ${String(rate).padStart(6)} goods/s  (${counts})`,
        );
        console.log(rows[rows.length - 1]);
      }
      rows.push(
        ...(await fairnessOverCalls(
          server,
          COUNT,
          'goods',
          (variant, call) => Array.from({ length: COUNT }, (_, i) => goodsElement(COUNT * (1 + call) + i, variant)),
          (body) => syncOnce(server.baseUrl, server.accessKey, server.auth, body),
        )),
      );
      console.log(`${engine.padEnd(7)} server peak RSS ${peakRssMb(server.pid)} MB`);
    } finally {
      await server.stop();
    }
  }
  console.log("\nbench:sync results (targets: >= 10,000 goods/s in every run; meanwhile the other customer's list p99 < 50 ms and no stall > 50 ms)");
  for (const row of rows) console.log(row);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
