/**
 * npm run bench:idempotency — what an Idempotency-Key costs a write: register (POST /v1/goods/{accessKey},
 * a new item each time) with autocannon (10 connections), without the header, with a new key on every
 * request (the key is taken, then the answer stored: two more small writes), and with the same keys again
 * (every request a replay: one read, nothing applied). Runs without/with keys alternate over several
 * rounds so that a busy machine weighs on both alike; prints req/s and p50/p99 latency per variant.
 * Options: --engines=sqlite,mysql (default both)  --duration=5  --rounds=3  --connections=10
 * BENCH_DB_PREFIX names the MariaDB database (see README, Benchmarks).
 */
import autocannon from 'autocannon';
import { Engine, goodsElement, startServer } from './support';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const DURATION = Number(arg('duration', '5'));
const ROUNDS = Number(arg('rounds', '3'));
const CONNECTIONS = Number(arg('connections', '10'));
const ENGINES = arg('engines', 'sqlite,mysql').split(',') as Engine[];

interface Totals {
  requests: number;
  seconds: number;
  p50: number[];
  p99: number[];
  failures: number;
}

type Variant = 'no key' | 'new key each' | 'replay (same keys)';

async function main(): Promise<void> {
  const lines: string[] = [];
  let port = 3870;
  for (const engine of ENGINES) {
    const server = await startServer(engine, port++, 'idempotency');
    const url = `${server.baseUrl}/v1/goods/${server.accessKey}`;
    let next = 0;
    /** Keys used by the "new key" runs, replayed by the "replay" runs (same key, same body). */
    const used: Array<{ key: string; body: string }> = [];
    let replayAt = 0;
    const bodyFor = (variant: Variant): { body: string; headers: Record<string, string> } => {
      const headers: Record<string, string> = { authorization: server.auth, 'content-type': 'application/json' };
      if (variant === 'replay (same keys)') {
        // Keys of requests that have surely been answered: the last ones of a run may still be in flight.
        const done = Math.max(1, used.length - 4 * CONNECTIONS);
        const { key, body } = used[replayAt++ % done];
        return { body, headers: { ...headers, 'idempotency-key': key } };
      }
      const n = next++;
      const body = JSON.stringify(goodsElement(n));
      if (variant === 'no key') return { body, headers };
      const key = `bench-${engine}-${n}`;
      used.push({ key, body });
      return { body, headers: { ...headers, 'idempotency-key': key } };
    };
    const run = async (variant: Variant, seconds: number): Promise<autocannon.Result> =>
      autocannon({
        url,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, ...bodyFor(variant) }) }],
      });
    const totals = new Map<Variant, Totals>();
    const variants: Variant[] = ['no key', 'new key each', 'replay (same keys)'];
    try {
      for (const v of variants) await run(v, 2); // warm-up (JIT, caches, the first keys)
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const v of variants) {
          const r = await run(v, DURATION);
          const t = totals.get(v) ?? { requests: 0, seconds: 0, p50: [], p99: [], failures: 0 };
          t.requests += r.requests.total;
          t.seconds += DURATION;
          t.p50.push(r.latency.p50);
          t.p99.push(r.latency.p99);
          t.failures += r.non2xx + r.errors;
          totals.set(v, t);
        }
      }
    } finally {
      await server.stop();
    }
    const base = totals.get('no key') as Totals;
    for (const v of variants) {
      const t = totals.get(v) as Totals;
      const rate = t.requests / t.seconds;
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const delta = v === 'no key' ? '' : `  (${(((rate - base.requests / base.seconds) / (base.requests / base.seconds)) * 100).toFixed(1)} % req/s)`;
      lines.push(
        `${engine.padEnd(6)} register, ${v.padEnd(19)} ${rate.toFixed(0).padStart(6)} req/s   p50 ${String(median(t.p50)).padStart(4)} ms   ` +
          `p99 ${String(median(t.p99)).padStart(4)} ms${t.failures ? `   (${t.failures} errors/non-2xx!)` : ''}${delta}`,
      );
    }
    console.log(lines.slice(-variants.length).join('\n'));
  }
  console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s per variant (median p50/p99 of the rounds):`);
  console.log(lines.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
