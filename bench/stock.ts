/**
 * npm run bench:stock — stock decrements under contention. One ONAIR campaign with one hot item and
 * --others items: --hot clients decrement the hot item by 1 over and over, and one client per other item
 * decrements its own, each until it is refused (409: sold out). A viewer on every node counts the
 * goods.salesStatus events. Prints decrements/s, latency p50/p99/max of the successful decrements,
 * oversold units (successful decrements beyond the initial stock, or stock below zero: must be 0),
 * refusals that were not 409, and the status events against the status changes expected; then the CPU
 * time per decrement of each server and of this process (the load generator and the viewers) over the
 * measured window, the cores each kept busy, and the load average before and after. Goal: 1,000
 * decrements/s on SQLite, 500/s on two nodes (README has the measured figures).
 *
 * Each client is one shop order backend: its own kept-alive HTTP/1.1 connection (KeepAliveClient),
 * opened before the clock starts, one request at a time. Rate limits are off unless --rate-limits.
 *
 *   sqlite:  one server process on SQLite (the embedded default).
 *   cluster: two server processes sharing one MariaDB database and Redis; clients alternate nodes.
 *
 * Options: --hot=50 (clients on the hot item) --others=100 (other items, one client each)
 *          --hot-stock=2000 --other-stock=20 --threshold=10 (almostSoldOutAt of every item)
 *          --mode=sqlite|cluster|both (default both) --redis=redis://127.0.0.1:6379
 *          --rate-limits (rate limits on, as a trusted order backend would be configured: RATE_LIMIT_IP and
 *          RATE_LIMIT_CUSTOMER at 10,000,000 per window, so every request still passes both limiters,
 *          counted in Redis on two nodes; without it they are off, as in every bench)
 * Profiles: BENCH_CPU_PROF=<dir>, as for every bench (bench/support.ts).
 */

import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { io, Socket } from 'socket.io-client';
import { BenchServer, cpuMs, KeepAliveClient, ok, startServer } from './support';

const arg = (name: string, fallback: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const HOT = Number(arg('hot', '50'));
const OTHERS = Number(arg('others', '100'));
const HOT_STOCK = Number(arg('hot-stock', '2000'));
const OTHER_STOCK = Number(arg('other-stock', '20'));
const THRESHOLD = Number(arg('threshold', '10'));
const MODE = arg('mode', 'both');
const REDIS_URL = arg('redis', process.env.REDIS_URL || 'redis://127.0.0.1:6379');
const LIMITS: Record<string, string> = process.argv.includes('--rate-limits')
  ? { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_IP: '10000000', RATE_LIMIT_CUSTOMER: '10000000' }
  : {};

interface Figures {
  label: string;
  decrements: number;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
  oversold: number;
  refusedOther: number;
  events: number;
  eventsExpected: number;
  /** CPU time (user + system) of each server process over the measured window, in ms. */
  serverCpuMs: number[];
  /** CPU time of this process (the load generator and the viewers) over the same window, in ms. */
  benchCpuMs: number;
  /** The 1-minute load average before and after the window. */
  load: [number, number];
}

/** The status changes one item goes through from `stock` down to 0 with the threshold (ON_SALE → ALMOST_SOLD_OUT → SOLD_OUT). */
const changesFrom = (stock: number): number => (stock > THRESHOLD ? 2 : stock > 0 ? 1 : 0);

async function measure(label: string, nodes: BenchServer[]): Promise<Figures> {
  const [first] = nodes;
  const ak = first.accessKey;
  const campaign = await ok<{ campaignKey: string }>(first, 'POST', `/v1/console/${ak}/campaigns`, { title: `Stock bench ${label}` });
  const key = campaign.campaignKey;
  const items = Array.from({ length: OTHERS + 1 }, (_, i) => ({ name: `Stock item ${i}`, sku: `STK-${i}`, url: `https://shop.example.com/stock/${i}` }));
  await ok(first, 'POST', `/v1/goods/${ak}/sync`, items);
  const list = await ok<{ results: Array<{ goodsId: string }> }>(first, 'POST', `/v1/console/${ak}/campaigns/${key}/goods`, { skus: items.map((i) => i.sku) });
  const ids = list.results.map((r) => Number(r.goodsId));
  const initial = new Map<number, number>(ids.map((id, i) => [id, i === 0 ? HOT_STOCK : OTHER_STOCK]));
  for (const [goodsId, stock] of initial) await ok(first, 'PUT', `/v1/goods/${ak}/campaign/${key}/stock/id`, { goodsId, stock, almostSoldOutAt: THRESHOLD });
  await ok(first, 'PUT', `/v1/console/${ak}/campaigns/${key}/status`, { campaignStatus: 'ONAIR' });

  // One viewer per node, counting goods.salesStatus events.
  let events = 0;
  const viewers: Socket[] = [];
  for (const node of nodes) {
    const socket = io(`${node.baseUrl}/live`, { transports: ['websocket'], auth: { accessKey: ak, campaignKey: key } });
    await new Promise<void>((resolve, reject) => {
      socket.once('campaign.snapshot', () => resolve());
      socket.once('connect_error', reject);
    });
    socket.on('goods.salesStatus', () => (events += 1));
    viewers.push(socket);
  }

  const taken = new Map<number, number>();
  const latencies: number[] = [];
  let refusedOther = 0;
  // Each client on a connection of its own, opened (one /health call) before the clock starts.
  const clients: Array<{ goodsId: number; http: KeepAliveClient }> = [];
  for (let i = 0; i < HOT; i += 1) clients.push({ goodsId: ids[0], http: new KeepAliveClient(nodes[i % nodes.length]) });
  for (let i = 1; i < ids.length; i += 1) clients.push({ goodsId: ids[i], http: new KeepAliveClient(nodes[i % nodes.length]) });
  await Promise.all(clients.map((c) => c.http.call('GET', '/health', undefined, false)));
  const run = async ({ goodsId, http }: { goodsId: number; http: KeepAliveClient }) => {
    for (;;) {
      const started = performance.now();
      const res = await http.call('POST', `/v1/goods/${ak}/campaign/${key}/stock/id/decrement`, { goodsId });
      if (res.status === 200) {
        latencies.push(performance.now() - started);
        taken.set(goodsId, (taken.get(goodsId) ?? 0) + 1);
        continue;
      }
      if (res.status !== 409) refusedOther += 1;
      return;
    }
  };
  const loadBefore = loadavg()[0];
  const serverCpuBefore = nodes.map((n) => cpuMs(n.pid));
  const benchCpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(clients.map(run));
  const seconds = (performance.now() - started) / 1000;
  const serverCpuMs = nodes.map((n, i) => cpuMs(n.pid) - serverCpuBefore[i]);
  const benchCpu = process.cpuUsage(benchCpuBefore);
  const load: [number, number] = [loadBefore, loadavg()[0]];
  for (const c of clients) c.http.close();

  const after = await ok<{ results: Array<{ goodsId: string; stock: number }> }>(first, 'GET', `/v1/console/${ak}/campaigns/${key}/goods`);
  let oversold = 0;
  for (const row of after.results) {
    const id = Number(row.goodsId);
    oversold += Math.max(0, (taken.get(id) ?? 0) - (initial.get(id) ?? 0)) + Math.max(0, -row.stock);
  }
  const eventsExpected = nodes.length * [...initial.values()].reduce((sum, stock) => sum + changesFrom(stock), 0);
  // Let the last events arrive.
  const deadline = Date.now() + 5000;
  while (events < eventsExpected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 300));
  for (const v of viewers) v.close();

  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return {
    label,
    decrements: sorted.length,
    seconds,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    oversold,
    refusedOther,
    events,
    eventsExpected,
    serverCpuMs,
    benchCpuMs: Math.round((benchCpu.user + benchCpu.system) / 1000),
    load,
  };
}

function report(f: Figures): string {
  return (
    `${f.label}: ${f.decrements} decrements in ${f.seconds.toFixed(2)} s = ${(f.decrements / f.seconds).toFixed(0)}/s; ` +
    `latency p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms, max ${f.max.toFixed(0)} ms; oversold ${f.oversold} units; ` +
    `refusals other than 409: ${f.refusedOther}; status events ${f.events} of ${f.eventsExpected} expected\n  ` +
    `CPU per decrement: server ${f.serverCpuMs.map((ms) => (ms / f.decrements).toFixed(2)).join(' + ')} ms, ` +
    `this load generator ${(f.benchCpuMs / f.decrements).toFixed(2)} ms (${f.serverCpuMs.map((ms) => `${(ms / 1000 / f.seconds).toFixed(2)}`).join(' + ')} ` +
    `and ${(f.benchCpuMs / 1000 / f.seconds).toFixed(2)} cores busy); load average ${f.load[0].toFixed(1)} → ${f.load[1].toFixed(1)}`
  );
}

async function main(): Promise<void> {
  console.log(
    `bench:stock — ${HOT} clients on one hot item of ${HOT_STOCK}, ${OTHERS} others of ${OTHER_STOCK} (one client each), almostSoldOutAt ${THRESHOLD}; ` +
      `rate limits ${LIMITS.RATE_LIMIT_ENABLED ? 'on (10,000,000 per window)' : 'off'}`,
  );
  const results: Figures[] = [];
  let port = 3870;
  if (MODE === 'sqlite' || MODE === 'both') {
    const server = await startServer('sqlite', port++, 'stock', { env: { REDIS_URL: '', ...LIMITS } });
    try {
      results.push(await measure('SQLite, one node', [server]));
      console.log(report(results[results.length - 1]));
    } finally {
      await server.stop();
    }
  }
  if (MODE === 'cluster' || MODE === 'both') {
    const a = await startServer('mysql', port++, 'stock', { env: { REDIS_URL, ...LIMITS } });
    let b: BenchServer | undefined;
    try {
      b = await startServer('mysql', port++, 'stock', { join: a });
      results.push(await measure('MariaDB, two nodes + Redis', [a, b]));
      console.log(report(results[results.length - 1]));
    } finally {
      await b?.stop();
      await a.stop();
    }
  }
  const bad = results.filter((r) => r.oversold !== 0 || r.refusedOther !== 0 || r.events !== r.eventsExpected);
  if (bad.length) {
    console.error(`FAILED: ${bad.map((r) => r.label).join(', ')}`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
