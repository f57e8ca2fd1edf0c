/**
 * npm run bench:chaos — 60 s of mixed load on two nodes (own processes, the built server) sharing MariaDB
 * and Redis, with 500 viewers on one live campaign, while the bench breaks things:
 *   t=10 s  SIGKILL node B (it is started again at t=13 s)
 *   t=22 s  Redis cut for 5 s            (TCP fault proxy between the nodes and Redis)
 *   t=34 s  database cut for 5 s         (TCP fault proxy between the nodes and MariaDB)
 *   t=46 s  SIGTERM node A, then started again (a rolling restart)
 * Clients reach the nodes through a small TCP load balancer (each connection to a node that is up; a
 * connection refused goes to the other node). Writers sync new goods (idempotent: a request whose answer
 * was lost with its node is sent again); readers list goods and public campaigns; an operator changes
 * sales statuses and posts chat lines; 500 Socket.IO viewers apply events in seq order, resync on gaps and
 * reconnect when their node goes.
 * Prints: requests by outcome (2xx / 429 / 503 / connection lost with a killed node / anything else),
 * rows acknowledged vs stored (lost, duplicated, stored without an acknowledgement), events committed vs
 * applied by every viewer, node exits (planned and not), and each node's RSS before and after.
 * Goal: nothing outside 2xx/429/503 (and lost connections of the killed node, sent again), no row lost
 * or duplicated, every viewer at the last seq with no gap, no unplanned exit.
 * Options: --seconds=60 --viewers=500
 */
import { createConnection, createServer, Server, Socket as NetSocket } from 'node:net';
import { readFileSync } from 'node:fs';
import { io, Socket } from 'socket.io-client';
import { processAlive } from '../test/support/process-alive';
import { TcpProxy } from '../test/support/tcp-proxy';
import { BenchServer, startServer } from './support';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SECONDS = arg('seconds', 60);
const VIEWERS = arg('viewers', 500);
const PORTS = { a: 3711, b: 3712, balancer: 3710 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Round-robin TCP balancer over the nodes that accept connections (a refused connect tries the next). */
class Balancer {
  private next = 0;
  private readonly server: Server;

  constructor(private readonly ports: number[]) {
    this.server = createServer((client) => this.route(client, 0));
  }

  listen(port: number): Promise<void> {
    return new Promise((r) => this.server.listen(port, '127.0.0.1', () => r()));
  }

  close(): void {
    this.server.close();
  }

  private route(client: NetSocket, attempt: number): void {
    client.pause();
    const port = this.ports[this.next++ % this.ports.length];
    const upstream = createConnection({ host: '127.0.0.1', port });
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', () => {
      if (!connected && attempt < this.ports.length * 2) this.route(client, attempt + 1);
      else client.destroy();
    });
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => connected && client.destroy());
  }
}

/** '2xx', '429', '503', 'lost with a killed node', or what else happened, in words. */
type Outcome = string;

class Tally {
  readonly counts = new Map<Outcome, number>();
  add(outcome: Outcome): void {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1);
  }
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** A viewer applying events strictly in seq order, as the reference client does. */
class ChaosViewer {
  lastSeq: number | null = null;
  private readonly pending = new Map<number, number>();
  private resyncTimer: NodeJS.Timeout | null = null;
  readonly socket: Socket;

  constructor(base: string, auth: Record<string, string>) {
    this.socket = io(`${base}/live`, { transports: ['websocket'], auth, reconnectionDelay: 200, reconnectionDelayMax: 1000, timeout: 5000 });
    this.socket.on('campaign.snapshot', (s: { seq: number }) => {
      if (this.lastSeq === null || s.seq >= this.lastSeq) this.lastSeq = s.seq;
      this.drain();
    });
    for (const type of ['goods.salesStatus', 'goods.list', 'chat.notice', 'chat.message', 'campaign.status', 'campaign.update', 'goods.update']) {
      this.socket.on(type, (p: { seq: number }) => this.receive(Number(p.seq)));
    }
    this.socket.on('connect', () => {
      if (this.lastSeq !== null) this.socket.emit('resync', { sinceSeq: this.lastSeq });
    });
    // socket.io does not retry after a server-side disconnect (a slow consumer, a deleted campaign), nor
    // after a refusal; the server marks the refusals worth retrying (busy, restarting, rate-limited).
    this.socket.on('disconnect', (reason) => {
      if (reason === 'io server disconnect') setTimeout(() => this.socket.connect(), 1000);
    });
    this.socket.on('connect_error', (err: Error & { data?: { retryable?: boolean; retryAfterMs?: number } }) => {
      if (!this.socket.active && err.data?.retryable) setTimeout(() => this.socket.connect(), (err.data.retryAfterMs ?? 1000) + Math.random() * 500);
    });
  }

  private receive(seq: number): void {
    if (this.lastSeq === null || seq <= this.lastSeq) return;
    this.pending.set(seq, seq);
    this.drain();
    if (this.pending.size && !this.resyncTimer) {
      this.resyncTimer = setTimeout(() => {
        this.resyncTimer = null;
        if (this.pending.size) this.socket.emit('resync', { sinceSeq: this.lastSeq });
      }, 500);
    }
  }

  private drain(): void {
    if (this.lastSeq === null) return;
    for (const seq of [...this.pending.keys()]) if (seq <= this.lastSeq) this.pending.delete(seq);
    while (this.pending.has(this.lastSeq + 1)) {
      this.pending.delete(this.lastSeq + 1);
      this.lastSeq += 1;
    }
  }

  get gaps(): number {
    return this.pending.size;
  }

  close(): void {
    if (this.resyncTimer) clearTimeout(this.resyncTimer);
    this.socket.close();
  }
}

async function main(): Promise<void> {
  const dbProxy = await TcpProxy.start({ host: process.env.BENCH_DB_HOST || '127.0.0.1', port: Number(process.env.BENCH_DB_PORT || 3306) });
  const redis = new URL(process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379');
  const redisProxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
  const env = {
    DB_HOST: '127.0.0.1',
    DB_PORT: String(dbProxy.port),
    REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
    REDIS_PREFIX: `lgchaos-${process.pid}`,
    LOG_LEVEL: 'error',
    DB_QUERY_TIMEOUT_MS: '3000',
    DB_CONNECT_TIMEOUT_MS: '2000',
    SHUTDOWN_TIMEOUT: '10',
  };
  const nodes: { a: BenchServer; b: BenchServer } = { a: await startServer('mysql', PORTS.a, 'chaos', { env }), b: undefined as unknown as BenchServer };
  nodes.b = await startServer('mysql', PORTS.b, 'chaos', { join: nodes.a, env });
  const owner = nodes.a;
  const planned = new Set<number>();
  const pids = new Set<number>([nodes.a.pid, nodes.b.pid]);
  let unplannedExits = 0;
  const rssBefore = { a: rssMb(nodes.a.pid), b: rssMb(nodes.b.pid) };
  const watcher = setInterval(() => {
    for (const pid of [...pids]) {
      if (processAlive(pid)) continue;
      pids.delete(pid);
      if (!planned.has(pid)) unplannedExits += 1;
    }
  }, 250);

  const balancer = new Balancer([PORTS.a, PORTS.b]);
  await balancer.listen(PORTS.balancer);
  const base = `http://127.0.0.1:${PORTS.balancer}`;
  const { accessKey, auth } = owner;
  const headers = { authorization: auth, 'content-type': 'application/json' };
  const tally = new Tally();
  const acknowledged = new Set<string>();

  /** One logical request: sent again (up to 10 times) when its connection was lost with a node. */
  async function send(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown } | null> {
    for (let attempt = 0; attempt < 10; attempt += 1) {
      try {
        const res = await fetch(`${base}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
        const json = await res.json().catch(() => null);
        tally.add(
          res.status < 300 ? '2xx' : res.status === 429 || res.status === 503 ? String(res.status) : `HTTP ${res.status} ${JSON.stringify(json).slice(0, 120)}`,
        );
        return { status: res.status, json };
      } catch (err) {
        const reason = String((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
        tally.add(
          killWindow()
            ? 'lost with a killed node'
            : restartWindow()
              ? 'keep-alive connection closed by a restarting node'
              : `network error outside a node kill: ${reason}`,
        );
        await sleep(200);
      }
    }
    return null;
  }

  // The campaign the viewers watch, with 5 goods, on air.
  const goods = await send(
    'POST',
    `/v1/goods/${accessKey}/sync`,
    Array.from({ length: 5 }, (_, i) => ({ name: `Live ${i}`, sku: `LIVE-${i}`, url: `https://shop.example.com/live/${i}` })),
  );
  const goodsIds = ((goods?.json as { results: Array<{ id: number }> }).results ?? []).map((r) => r.id);
  const created = (await send('POST', `/v1/console/${accessKey}/campaigns`, { title: 'Chaos live', collectionVisible: true }))?.json as { campaignKey: string };
  const key = created.campaignKey;
  await send('POST', `/v1/console/${accessKey}/campaigns/${key}/goods`, { goodsIds });
  await send('PUT', `/v1/console/${accessKey}/campaigns/${key}/status`, { campaignStatus: 'ONAIR' });

  const viewers: ChaosViewer[] = [];
  for (let i = 0; i < VIEWERS; i += 1) {
    viewers.push(new ChaosViewer(base, { accessKey, campaignKey: key }));
    if (i % 50 === 49) await sleep(100);
  }
  await sleep(2000);

  const started = Date.now();
  const at = (s: number) => started + s * 1000;
  let killedAt = 0;
  let restartedAt = 0;
  const killWindow = () => Date.now() - killedAt < 3000;
  const restartWindow = () => Date.now() - restartedAt < 3000;
  let stop = false;
  const workers: Array<Promise<void>> = [];
  for (let w = 0; w < 6; w += 1) {
    workers.push(
      (async () => {
        for (let n = 0; !stop; n += 1) {
          const items = Array.from({ length: 5 }, (_, k) => ({
            name: `Chaos ${w}-${n}-${k}`,
            sku: `CH-${w}-${n}-${k}`,
            url: `https://shop.example.com/ch/${w}/${n}/${k}`,
          }));
          const res = await send('POST', `/v1/goods/${accessKey}/sync`, items);
          if (res?.status === 200)
            for (const r of (res.json as { results: Array<{ sku: string; status: string }> }).results) if (r.status !== 'FAIL') acknowledged.add(r.sku);
          await sleep(50);
        }
      })(),
    );
  }
  for (let w = 0; w < 4; w += 1) {
    workers.push(
      (async () => {
        while (!stop) {
          await send('GET', w % 2 ? `/v1/goods/${accessKey}?count=10` : `/v1/campaigns/${accessKey}/${key}`);
          await sleep(20);
        }
      })(),
    );
  }
  workers.push(
    (async () => {
      const statuses = ['SOLD_OUT', 'ON_SALE', 'ALMOST_SOLD_OUT'];
      for (let n = 0; !stop; n += 1) {
        if (n % 2) await send('POST', `/v1/console/${accessKey}/campaigns/${key}/chat`, { message: `line ${n}` });
        else
          await send('PUT', `/v1/goods/${accessKey}/campaign/${key}/salesStatus/id`, { goodsId: goodsIds[n % goodsIds.length], salesStatus: statuses[n % 3] });
        await sleep(100);
      }
    })(),
  );

  const log = (what: string) => console.log(`t=${((Date.now() - started) / 1000).toFixed(1)} s  ${what}`);
  const restart = async (name: 'a' | 'b', signal: 'SIGKILL' | 'SIGTERM') => {
    const node = nodes[name];
    planned.add(node.pid);
    if (signal === 'SIGKILL') killedAt = Date.now();
    else restartedAt = Date.now();
    process.kill(node.pid, signal);
    log(`${signal} node ${name.toUpperCase()} (pid ${node.pid})`);
    while (processAlive(node.pid)) await sleep(50);
    log(`node ${name.toUpperCase()} exited`);
    if (signal === 'SIGKILL') await sleep(3000);
    nodes[name] = await startServer('mysql', PORTS[name], 'chaos', { join: owner, env });
    pids.add(nodes[name].pid);
    log(`node ${name.toUpperCase()} up again (pid ${nodes[name].pid})`);
  };

  await sleep(at(10) - Date.now());
  await restart('b', 'SIGKILL');
  await sleep(at(22) - Date.now());
  redisProxy.cut();
  log('Redis cut');
  await sleep(5000);
  redisProxy.restore();
  log('Redis back');
  await sleep(at(34) - Date.now());
  dbProxy.cut();
  log('database cut');
  await sleep(5000);
  dbProxy.restore();
  log('database back');
  await sleep(at(46) - Date.now());
  await restart('a', 'SIGTERM');
  await sleep(Math.max(0, at(SECONDS) - Date.now()));
  stop = true;
  await Promise.all(workers);
  log('load stopped; letting viewers settle');

  // What is stored, read straight from MariaDB (not through the proxy).
  const { createConnection: mysql } = await import('mysql2/promise');
  const db = await mysql({
    host: process.env.BENCH_DB_HOST || '127.0.0.1',
    port: Number(process.env.BENCH_DB_PORT || 3306),
    user: 'root',
    password: '',
    database: owner.env.DB_NAME,
  });
  const [[campaignRow]] = (await db.query('SELECT lastSeq FROM campaigns WHERE campaignKey = ?', [key])) as unknown as [[{ lastSeq: string | number }]];
  const lastSeq = Number(campaignRow.lastSeq);
  const settleUntil = Date.now() + 20_000;
  while (Date.now() < settleUntil && viewers.some((v) => v.lastSeq !== lastSeq)) await sleep(250);
  const [rows] = (await db.query("SELECT sku, COUNT(*) AS n FROM goods WHERE sku LIKE 'CH-%' GROUP BY sku")) as unknown as [Array<{ sku: string; n: number }>];
  await db.end();
  const stored = new Set(rows.map((r) => r.sku));
  const lost = [...acknowledged].filter((s) => !stored.has(s));
  const duplicated = rows.filter((r) => Number(r.n) > 1);
  const unacknowledged = [...stored].filter((s) => !acknowledged.has(s));
  const behind = viewers.filter((v) => v.lastSeq !== lastSeq);
  const withGaps = viewers.filter((v) => v.gaps > 0);

  console.log('\nrequests by outcome (each attempt):');
  for (const [outcome, n] of [...tally.counts].sort((x, y) => y[1] - x[1])) console.log(`  ${outcome}: ${n}`);
  const expectedOutcomes = ['2xx', '429', '503', 'lost with a killed node', 'keep-alive connection closed by a restarting node'];
  const outside = [...tally.counts].filter(([o]) => !expectedOutcomes.includes(o)).reduce((s, [, n]) => s + n, 0);
  console.log(`  → anything else: ${outside}`);
  console.log(
    `rows: ${acknowledged.size} acknowledged, ${stored.size} stored; lost ${lost.length}, duplicated ${duplicated.length}, stored without an acknowledgement ${unacknowledged.length}`,
  );
  console.log(
    `events: ${lastSeq} committed (seq); viewers at the last seq: ${VIEWERS - behind.length}/${VIEWERS}; viewers with an unfilled gap: ${withGaps.length}`,
  );
  if (behind.length)
    console.log(
      `  behind: ${behind
        .slice(0, 5)
        .map((v) => v.lastSeq)
        .join(', ')}`,
    );
  console.log(`node exits: planned ${planned.size} (1 SIGKILL, 1 SIGTERM), unplanned ${unplannedExits}`);
  console.log(`RSS: node A ${rssBefore.a} → ${rssMb(nodes.a.pid)} MB, node B ${rssBefore.b} → ${rssMb(nodes.b.pid)} MB (after: the restarted processes)`);

  clearInterval(watcher);
  for (const v of viewers) v.close();
  balancer.close();
  await nodes.b.stop();
  await nodes.a.stop();
  if (nodes.a !== owner) await owner.stop(); // drops the bench database (the first node owns it)
  await dbProxy.close();
  await redisProxy.close();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
