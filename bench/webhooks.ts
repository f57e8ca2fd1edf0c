/**
 * npm run bench:webhooks — webhook deliveries end to end. A loopback receiver subscribes to
 * goods.salesStatus; --clients clients each flip the sales status of their own items (so that every call
 * changes a status and records exactly one event) until --events events were recorded. Prints:
 *
 *   deliveries/s          events delivered per second, from the first event recorded to the last delivery
 *   delay p50/p99/max     from the event's createdAt (set in the transaction, just before it commits) to its
 *                         arrival at the receiver
 *   lost / duplicated     events never delivered (must be 0) / deliveries of an event beyond its first
 *   request p50/p99       of the sales-status calls before any endpoint is registered (baseline), while the
 *                         receiver is up, then while it is down (the port refuses connections: every
 *                         delivery fails and is retried) and while it hangs (accepts and never answers:
 *                         every send runs into WEBHOOK_TIMEOUT_MS)
 *
 *   sqlite:  one server process on SQLite (the embedded default).
 *   mysql:   two server processes sharing one MariaDB database; clients alternate nodes, both dispatch.
 *
 * Options: --events=10000 --clients=16 --items=4 (per client) --side=2000 (calls per baseline/down/hang phase)
 *          --mode=sqlite|mysql|both (default both)
 */

import http, { ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { BenchServer, call, ok, startServer } from './support';

const arg = (name: string, fallback: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const EVENTS = Number(arg('events', '10000'));
const CLIENTS = Number(arg('clients', '16'));
const ITEMS = Number(arg('items', '4'));
const SIDE = Number(arg('side', '2000'));
const MODE = arg('mode', 'both');

type Mode = 'up' | 'down' | 'hang';

/** The loopback receiver: counts arrivals per event id and their delay; 'down' closes its port. */
class Receiver {
  readonly arrivals = new Map<string, number>();
  readonly delays: number[] = [];
  total = 0;
  lastArrival = 0;
  mode: Mode = 'up';
  port = 0;
  private readonly held = new Set<ServerResponse>();
  private server = this.create();

  private create(): http.Server {
    return http.createServer({ keepAlive: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.mode === 'hang') {
          this.held.add(res);
          res.on('close', () => this.held.delete(res));
          return;
        }
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; createdAt: number };
        const now = Date.now();
        this.total += 1;
        const seen = this.arrivals.get(event.id) ?? 0;
        this.arrivals.set(event.id, seen + 1);
        if (!seen) this.delays.push(now - event.createdAt);
        this.lastArrival = now;
        res.writeHead(200).end();
      });
    });
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Closes the port (connections are refused) until `up()`. */
  async down(): Promise<void> {
    this.mode = 'down';
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  async up(): Promise<void> {
    if (this.mode === 'down') {
      this.server = this.create();
      await this.listen(this.port);
    }
    for (const res of this.held) res.destroy();
    this.mode = 'up';
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const pct = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] : NaN);
const ms = (n: number) => `${n.toFixed(1)} ms`;

interface Setup {
  key: string;
  ids: number[];
  /** The current status of each item (the clients flip them). */
  status: Map<number, string>;
}

async function prepare(nodes: BenchServer[]): Promise<Setup> {
  const [first] = nodes;
  const ak = first.accessKey;
  const campaign = await ok<{ campaignKey: string }>(first, 'POST', `/v1/console/${ak}/campaigns`, { title: 'Webhook bench' });
  const items = Array.from({ length: CLIENTS * ITEMS }, (_, i) => ({ name: `Hook item ${i}`, sku: `WHB-${i}`, url: `https://shop.example.com/whb/${i}` }));
  await ok(first, 'POST', `/v1/goods/${ak}/sync`, items);
  const list = await ok<{ results: Array<{ goodsId: string }> }>(first, 'POST', `/v1/console/${ak}/campaigns/${campaign.campaignKey}/goods`, {
    skus: items.map((i) => i.sku),
  });
  const ids = list.results.map((r) => Number(r.goodsId));
  return { key: campaign.campaignKey, ids, status: new Map(ids.map((id) => [id, 'ON_SALE'])) };
}

/** `calls` sales-status changes from CLIENTS clients (each on its own items); answers the latencies and the 200s. */
async function flip(nodes: BenchServer[], setup: Setup, calls: number): Promise<{ latencies: number[]; changed: number }> {
  const latencies: number[] = [];
  let started = 0;
  let changed = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      const mine = setup.ids.slice(c * ITEMS, (c + 1) * ITEMS);
      for (let i = 0; started < calls; i += 1) {
        started += 1;
        const goodsId = mine[i % mine.length];
        const next = setup.status.get(goodsId) === 'ON_SALE' ? 'SOLD_OUT' : 'ON_SALE';
        const node = nodes[(c + i) % nodes.length];
        const t0 = performance.now();
        const res = await call(node, 'PUT', `/v1/goods/${node.accessKey}/campaign/${setup.key}/salesStatus/id`, { goodsId, salesStatus: next });
        latencies.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`sales status: HTTP ${res.status} ${JSON.stringify(res.body)}`);
        setup.status.set(goodsId, next);
        changed += 1;
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), changed };
}

async function measure(label: string, nodes: BenchServer[], receiver: Receiver): Promise<void> {
  const setup = await prepare(nodes);
  // Baseline: the same calls before any webhook endpoint exists.
  const baseline = await flip(nodes, setup, SIDE);
  await ok(nodes[0], 'POST', `/v1/console/${nodes[0].accessKey}/webhooks`, { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['goods.salesStatus'] });
  // Up: EVENTS events, delivered as they come.
  const t0 = Date.now();
  const up = await flip(nodes, setup, EVENTS);
  const recordedIn = (Date.now() - t0) / 1000;
  const deadline = Date.now() + 300_000;
  while (receiver.arrivals.size < up.changed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  // Let the dispatchers poll a few more times, to see any duplicate.
  await new Promise((r) => setTimeout(r, 3000));
  const delays = [...receiver.delays].sort((a, b) => a - b);
  const seconds = (receiver.lastArrival - t0) / 1000;
  const lost = up.changed - receiver.arrivals.size;
  const duplicated = receiver.total - receiver.arrivals.size;

  // Down, then hanging: the request path must not notice.
  await receiver.down();
  const down = await flip(nodes, setup, SIDE);
  await receiver.up();
  receiver.mode = 'hang';
  const hang = await flip(nodes, setup, SIDE);
  await receiver.up();

  console.log(`\n[${label}] ${up.changed} events, ${CLIENTS} clients, ${nodes.length} node(s)`);
  console.log(`  recorded in        ${recordedIn.toFixed(1)} s (${(up.changed / recordedIn).toFixed(0)} changes/s)`);
  console.log(`  deliveries/s       ${(receiver.arrivals.size / seconds).toFixed(0)} (last delivery ${seconds.toFixed(1)} s after the first change)`);
  console.log(`  delay commit→recv  p50 ${ms(pct(delays, 50))}  p99 ${ms(pct(delays, 99))}  max ${ms(delays[delays.length - 1] ?? NaN)}`);
  console.log(`  lost               ${lost}`);
  console.log(`  duplicated         ${duplicated}`);
  console.log(
    `  request (no hook)  p50 ${ms(pct(baseline.latencies, 50))}  p99 ${ms(pct(baseline.latencies, 99))}  (${baseline.latencies.length} calls, no endpoint registered)`,
  );
  console.log(`  request (up)       p50 ${ms(pct(up.latencies, 50))}  p99 ${ms(pct(up.latencies, 99))}  (${up.latencies.length} calls)`);
  console.log(
    `  request (down)     p50 ${ms(pct(down.latencies, 50))}  p99 ${ms(pct(down.latencies, 99))}  (${down.latencies.length} calls, receiver refusing)`,
  );
  console.log(
    `  request (hanging)  p50 ${ms(pct(hang.latencies, 50))}  p99 ${ms(pct(hang.latencies, 99))}  (${hang.latencies.length} calls, receiver never answering)`,
  );
}

async function main(): Promise<void> {
  const env = { WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true', REDIS_URL: '', WEBHOOK_TIMEOUT_MS: '2000' };
  let port = 3900 + Math.floor(Math.random() * 500);
  if (MODE === 'sqlite' || MODE === 'both') {
    const receiver = new Receiver();
    await receiver.listen();
    const server = await startServer('sqlite', port++, 'webhooks', { env });
    try {
      await measure('sqlite', [server], receiver);
    } finally {
      await server.stop();
      await receiver.close();
    }
  }
  if (MODE === 'mysql' || MODE === 'both') {
    const receiver = new Receiver();
    await receiver.listen();
    const a = await startServer('mysql', port++, 'webhooks', { env });
    let b: BenchServer | undefined;
    try {
      b = await startServer('mysql', port++, 'webhooks', { join: a, env });
      await measure('mariadb, two nodes', [a, b], receiver);
    } finally {
      await b?.stop();
      await a.stop();
      await receiver.close();
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
