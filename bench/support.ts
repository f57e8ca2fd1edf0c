import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { sign } from 'jsonwebtoken';
import { parsePrometheusText, valueOf } from '../test/support/prometheus-text';

export type Engine = 'sqlite' | 'mysql';

/**
 * Node flags of the bench servers: none, exactly as `npm start` and the Docker image run it, unless
 * BENCH_CPU_PROF=<dir> asks for V8 CPU profiles (one .cpuprofile per thread, written when it stops), or
 * BENCH_NODE_ARGS gives more (space-separated, e.g. `--trace-gc`) to try a setting.
 */
export const SERVER_NODE_ARGS: string[] = [
  ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
  ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
];

const root = join(__dirname, '..');

export interface BenchServer {
  engine: Engine;
  baseUrl: string;
  accessKey: string;
  auth: string;
  pid: number;
  /** The environment the server process runs with (database, DATA_DIR, extra settings). */
  env: Record<string, string>;
  /**
   * The longest event-loop stall of the server since the previous call (or its start), in ms; needs
   * `loopProbe` at start.
   */
  loopStallMs(): Promise<number>;
  stop(): Promise<void>;
}

export interface BenchCustomer {
  accessKey: string;
  auth: string;
}

export interface StartOptions {
  /** Extra environment for the server process, e.g. `{ REDIS_URL: 'redis://127.0.0.1:6379' }`. */
  env?: Record<string, string>;
  /**
   * Another node of `join`: same database, DATA_DIR and customer (nothing is created or dropped; the
   * first server owns them). Only meaningful on MySQL/MariaDB: one SQLite file must not be shared.
   */
  join?: BenchServer;
  /** Extra node flags for the server process only (e.g. `--prof`). */
  nodeArgs?: string[];
  /** Preload bench/loop-probe.js into the server, so that `loopStallMs()` can tell its longest event-loop stall. */
  loopProbe?: boolean;
}

function mysqlEnv(database: string): Record<string, string> {
  return {
    DB_TYPE: 'mysql',
    DB_HOST: process.env.BENCH_DB_HOST || '127.0.0.1',
    DB_PORT: process.env.BENCH_DB_PORT || '3306',
    DB_USER: process.env.BENCH_DB_USER || 'root',
    DB_PASSWORD: process.env.BENCH_DB_PASSWORD || '',
    DB_NAME: database,
  };
}

async function recreateMysqlDatabase(env: Record<string, string>, drop = false): Promise<void> {
  const { createConnection } = await import('mysql2/promise');
  const conn = await createConnection({
    host: env.DB_HOST,
    port: Number(env.DB_PORT),
    user: env.DB_USER,
    password: env.DB_PASSWORD,
  });
  await conn.query(`DROP DATABASE IF EXISTS \`${env.DB_NAME}\``);
  if (!drop) await conn.query(`CREATE DATABASE \`${env.DB_NAME}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await conn.end();
}

async function waitForHealth(baseUrl: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}`);
    try {
      const res = await fetch(`${baseUrl}/health/ready`);
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('server did not become ready within 60 s');
}

/**
 * Builds if needed, then runs the real server (`node dist/main.js`) in its own process on a fresh
 * database, or (options.join) as one more node on the database of a running one.
 */
export async function startServer(engine: Engine, port: number, name: string, options: StartOptions = {}): Promise<BenchServer> {
  execFileSync(process.execPath, [join(root, 'scripts/ensure-built.js')], { stdio: 'inherit' });
  const owner = !options.join;
  if (options.join && (options.join.engine !== 'mysql' || engine !== 'mysql')) {
    throw new Error('only a MySQL/MariaDB server can be joined by another node (SQLite is one process)');
  }
  const dataDir = options.join ? options.join.env.DATA_DIR : mkdtempSync(join(tmpdir(), `livegoods-bench-${name}-`));
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...(options.join
      ? options.join.env
      : {
          DATA_DIR: dataDir,
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
          DB_TYPE: 'sqlite',
          // Load generators send thousands of requests per second, and open thousands of viewer
          // connections, from one address.
          RATE_LIMIT_ENABLED: 'false',
          MAX_CONNECTIONS_PER_IP: '0',
          LIVE_SESSIONS_PER_IP: '0',
          // BENCH_DB_PREFIX (default lgbench) keeps two checkouts benchmarking against one server apart.
          ...(engine === 'mysql' ? mysqlEnv(`${(process.env.BENCH_DB_PREFIX || 'lgbench').replace(/[^A-Za-z0-9_]/g, '_')}_${name}`) : {}),
        }),
    ...options.env,
    PORT: String(port),
  };
  let customer: BenchCustomer;
  if (options.join) {
    customer = { accessKey: options.join.accessKey, auth: options.join.auth };
  } else {
    if (engine === 'mysql') await recreateMysqlDatabase(env);
    customer = await createCustomer(env, 'Bench');
  }
  const { accessKey, auth } = customer;
  const probeFile = join(dataDir, `loop-probe-${port}.json`);
  const probeArgs = options.loopProbe ? ['--require', join(root, 'bench/loop-probe.js')] : [];
  if (options.loopProbe) env.BENCH_LOOP_PROBE_FILE = probeFile;
  const child = spawn(process.execPath, [...SERVER_NODE_ARGS, ...probeArgs, ...(options.nodeArgs ?? []), join(root, 'dist/main.js')], {
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHealth(baseUrl, child);
  return {
    engine,
    baseUrl,
    accessKey,
    auth,
    pid: child.pid as number,
    env,
    async loopStallMs() {
      if (!options.loopProbe) throw new Error('start the server with loopProbe to read its event-loop stalls');
      rmSync(probeFile, { force: true });
      child.kill('SIGUSR2');
      for (let waited = 0; waited < 30_000; waited += 20) {
        try {
          return (JSON.parse(readFileSync(probeFile, 'utf8')) as { maxStallMs: number }).maxStallMs;
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      throw new Error('the server did not report its event-loop stall within 30 s');
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      if (!owner) return;
      rmSync(dataDir, { recursive: true, force: true });
      if (engine === 'mysql') await recreateMysqlDatabase(env, true);
    },
  };
}

/** Creates a customer with the admin CLI in a server's environment (its database); returns its key and a token. */
export async function createCustomer(env: Record<string, string>, name: string): Promise<BenchCustomer> {
  // Not execFileSync: the bench process may itself carry the database link (bench:chaos's fault proxy).
  const { stdout: created } = await promisify(execFile)(process.execPath, [join(root, 'dist/cli/admin.js'), 'customer', 'create', '--name', name], {
    env,
    encoding: 'utf8',
  });
  const customer = JSON.parse(created.trim().split('\n').pop() as string) as { accessKey: string; secretKey: string };
  const token = sign({ accessKey: customer.accessKey }, Buffer.from(customer.secretKey, 'base64'), {
    algorithm: 'HS256',
    expiresIn: 6 * 3600,
  });
  return { accessKey: customer.accessKey, auth: `Bearer ${token}` };
}

export interface FairnessFigures {
  /** List requests the other customer got answered while the work ran. */
  requests: number;
  p50: number;
  p99: number;
  max: number;
  /** The server's longest event-loop stall meanwhile, in ms. */
  maxStallMs: number;
  /**
   * Of those list requests, the share the server answered within 50 ms by its own request-duration
   * histogram (null if /metrics could not be read). That clock starts when the event loop has read the
   * request: a request waiting behind a stall (maxStallMs), in the kernel's run queue or in the load
   * generator is in the client's figures only.
   */
  serverWithin50ms: number | null;
  /** The calls of the work these figures cover (pooledFairness adds them up). */
  calls: number;
  /** Each list request's latency, in ms, and the server's counts behind serverWithin50ms (null: unread). */
  latencies: number[];
  serverCounts: { answered: number; within50: number } | null;
}

/** The server's count of answered list requests (GET /v1/goods/{accessKey}, 200): all, and within 50 ms. */
async function listDurations(baseUrl: string): Promise<{ all: number; within50: number } | null> {
  try {
    const res = await fetch(`${baseUrl}/metrics`);
    if (res.status !== 200) return null;
    const families = parsePrometheusText(await res.text());
    const labels = { method: 'GET', route: '/v1/goods/:accessKey', status: '200' };
    return {
      all: valueOf(families, 'livegoods_http_request_duration_seconds_count', labels) ?? 0,
      within50: valueOf(families, 'livegoods_http_request_duration_seconds_bucket', { ...labels, le: '0.05' }) ?? 0,
    };
  } catch {
    return null;
  }
}

/**
 * The fairness probe's clients run on a thread of their own (bench/fairness-probe.js says why);
 * BENCH_PROBE_THREAD=0 runs them on the bench's event loop, as the probe first did, to compare.
 */
const PROBE_ON_OWN_THREAD = process.env.BENCH_PROBE_THREAD !== '0';

interface Probe {
  /** Starts the measured requests (the warm-up is done). */
  go(): void;
  /** Stops asking and resolves to each measured request's latency in ms. */
  stop(): Promise<number[]>;
}

const fairnessProbe = require('./fairness-probe.js') as { startClients(url: string, auth: string, connections: number): Promise<Probe> };

async function startProbeThread(url: string, auth: string, connections: number): Promise<Probe> {
  const worker = new Worker(join(__dirname, 'fairness-probe.js'), { workerData: { fairnessProbe: true, url, auth, connections } });
  // events.once rejects if the worker emits 'error' (it died) before its next message.
  const next = async (): Promise<number[] | undefined> => {
    const [m] = (await once(worker, 'message')) as [{ ready?: boolean; latencies?: number[]; error?: string }];
    if (m.error) throw new Error(`the other customer's probe failed: ${m.error}`);
    return m.latencies;
  };
  await next();
  return {
    go: () => worker.postMessage('go'),
    async stop() {
      worker.postMessage('stop');
      try {
        return (await next()) ?? [];
      } finally {
        await worker.terminate();
      }
    },
  };
}

/**
 * What another customer lives through while `work` runs: `connections` clients each ask for that customer's
 * first list page (20 goods) over and over (a 10 ms pause between requests), and the server's longest
 * event-loop stall is read around the work. The other customer is created, with 1,000 goods, on a
 * server's first probe.
 */
export async function measureFairness<T>(server: BenchServer, work: () => Promise<T>, connections = 2): Promise<{ result: T; fairness: FairnessFigures }> {
  const other = await otherCustomer(server);
  const url = `${server.baseUrl}/v1/goods/${other.accessKey}?page=1&count=20`;
  const probe = PROBE_ON_OWN_THREAD ? await startProbeThread(url, other.auth, connections) : await fairnessProbe.startClients(url, other.auth, connections);
  await server.loopStallMs();
  const before = await listDurations(server.baseUrl);
  probe.go();
  let result: T;
  let latencies: number[];
  try {
    result = await work();
  } finally {
    latencies = await probe.stop();
  }
  const maxStallMs = await server.loopStallMs();
  const after = await listDurations(server.baseUrl);
  const serverCounts = before && after ? { answered: after.all - before.all, within50: after.within50 - before.within50 } : null;
  return { result, fairness: fairnessOf([latencies], maxStallMs, serverCounts, 1) };
}

function fairnessOf(latencies: number[][], maxStallMs: number, serverCounts: FairnessFigures['serverCounts'], calls: number): FairnessFigures {
  const sorted = latencies.flat().sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return {
    requests: sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    maxStallMs,
    serverWithin50ms: serverCounts && serverCounts.answered > 0 ? serverCounts.within50 / serverCounts.answered : null,
    calls,
    latencies: sorted,
    serverCounts,
  };
}

/**
 * The figures of several calls of the same work taken together: one call of a 10,000-row write gets 40–90
 * list requests, whose p99 is their slowest; over five calls the p99 is a percentile again.
 */
export function pooledFairness(each: FairnessFigures[]): FairnessFigures {
  const counted = each.every((f) => f.serverCounts);
  const serverCounts = counted
    ? { answered: each.reduce((n, f) => n + (f.serverCounts?.answered ?? 0), 0), within50: each.reduce((n, f) => n + (f.serverCounts?.within50 ?? 0), 0) }
    : null;
  return fairnessOf(
    each.map((f) => f.latencies),
    Math.max(...each.map((f) => f.maxStallMs)),
    serverCounts,
    each.reduce((n, f) => n + f.calls, 0),
  );
}

/** The other customer of a server's fairness probes: created and given 1,000 goods on the first probe. */
const otherCustomers = new WeakMap<BenchServer, Promise<BenchCustomer>>();

function otherCustomer(server: BenchServer): Promise<BenchCustomer> {
  let other = otherCustomers.get(server);
  if (!other) {
    other = (async () => {
      const created = await createCustomer(server.env, `Other ${Date.now()}`);
      const seed = await fetch(`${server.baseUrl}/v1/goods/${created.accessKey}/sync`, {
        method: 'POST',
        headers: { authorization: created.auth, 'content-type': 'application/json' },
        body: JSON.stringify(Array.from({ length: 1000 }, (_, i) => goodsElement(900_000 + i))),
      });
      if (seed.status !== 200) throw new Error(`seeding the other customer failed: HTTP ${seed.status}`);
      return created;
    })();
    otherCustomers.set(server, other);
  }
  return other;
}

/** --probe-calls=N (default 5): how many calls of each kind the fairness probe of bench:sync and bench:excel covers. */
export const PROBE_CALLS = Math.max(1, Number(process.argv.find((a) => a.startsWith('--probe-calls='))?.split('=')[1] ?? 5));

/**
 * The fairness probe of bench:sync and bench:excel: PROBE_CALLS calls creating `count` more goods each
 * (variant 0), then PROBE_CALLS changing them (variant 1), each measured by measureFairness; prints each
 * call's line and returns one line per kind with the figures of its calls together. `prepare` builds a
 * call's input before the clock starts, `run` makes the call.
 */
export async function fairnessOverCalls<W>(
  server: BenchServer,
  count: number,
  unit: string,
  prepare: (variant: 0 | 1, call: number) => Promise<W> | W,
  run: (input: W) => Promise<{ ms: number }>,
): Promise<string[]> {
  const lines: string[] = [];
  const head = (label: string, ms: string) =>
    `${server.engine.padEnd(7)} ${label.padEnd(7)} ${String(count).padStart(6)} ${unit}  ${ms.padStart(6)} ms  meanwhile `;
  for (const [label, variant] of [
    ['create', 0],
    ['update', 1],
  ] as const) {
    const each: FairnessFigures[] = [];
    const times: number[] = [];
    for (let call = 0; call < PROBE_CALLS; call++) {
      const input = await prepare(variant, call);
      const { result, fairness } = await measureFairness(server, () => run(input));
      each.push(fairness);
      times.push(result.ms);
      console.log(head(label, result.ms.toFixed(0)) + fairnessLine(fairness));
    }
    lines.push(head(label, msRange(times)) + fairnessLine(pooledFairness(each)));
    console.log(lines[lines.length - 1]);
  }
  return lines;
}

/** "512" or "498–620": the range of some durations in ms. */
function msRange(ms: number[]): string {
  const lo = Math.min(...ms).toFixed(0);
  const hi = Math.max(...ms).toFixed(0);
  return lo === hi ? lo : `${lo}–${hi}`;
}

export function fairnessLine(f: FairnessFigures): string {
  return (
    `other customer's list: ${f.requests} requests${f.calls > 1 ? ` over ${f.calls} calls` : ''}, p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms, max ${f.max.toFixed(0)} ms` +
    (f.serverWithin50ms === null ? '; ' : ` (the server, from reading each to its answer: ${(f.serverWithin50ms * 100).toFixed(1)}% within 50 ms); `) +
    `longest event-loop stall ${f.maxStallMs} ms`
  );
}

/** CPU time (user + system) of a process so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Peak resident memory of a process so far (Linux VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
}

export function enginesFromArgs(): Engine[] {
  const arg = process.argv.find((a) => a.startsWith('--engines='));
  return arg ? (arg.slice('--engines='.length).split(',') as Engine[]) : ['sqlite', 'mysql'];
}

export function goodsElement(i: number, variant = 0): Record<string, unknown> {
  const brands = ['Sampletech', '한빛전자', 'Nordic Home', 'Kimchi Lab', 'Atelier Mode'];
  const kinds = ['Smart watch', '무선 이어폰', 'Linen shirt', '스마트 워치', 'Coffee grinder', 'Rice cooker'];
  return {
    name: `${kinds[i % kinds.length]} ${i}${variant ? ` v${variant}` : ''}`,
    brand: brands[i % brands.length],
    description: `Item ${i}, variant ${variant}. Free shipping.`,
    sku: `SKU-${String(i).padStart(7, '0')}`,
    url: `https://shop.example.com/goods/${i}`,
    originalPrice: 10000 + (i % 1000) * 10 + variant,
    discountedPrice: 9000 + (i % 1000) * 9 + variant,
    discountPercentage: 10,
  };
}

/** A JSON call to the bench customer's API on `server`: status and parsed body. */
export async function call(server: BenchServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: server.auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** The same, refusing any status but 200; the body. */
export async function ok<T = unknown>(server: BenchServer, method: string, path: string, body?: unknown): Promise<T> {
  const res = await call(server, method, path, body);
  if (res.status !== 200) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as T;
}

/**
 * One client of the bench customer's API on `server` over its own kept-alive HTTP/1.1 connection (node:http,
 * one request at a time), as a shop's backend holds its connection pool open. Cheaper per request for the
 * load generator than fetch(), whose shared pool, with 150 clients at once, opened new connections for
 * requests while others sat idle.
 */
export class KeepAliveClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(readonly server: BenchServer) {}

  /** A JSON call: status and parsed body (the bench customer's token unless `auth` is false). */
  call(method: string, path: string, body?: unknown, auth = true): Promise<{ status: number; body: unknown }> {
    return this.send(method, path, body === undefined ? undefined : JSON.stringify(body), 'application/json', auth);
  }

  /** The same with a form body (application/x-www-form-urlencoded). */
  callForm(method: string, path: string, fields: Record<string, string>, auth = true): Promise<{ status: number; body: unknown }> {
    return this.send(method, path, new URLSearchParams(fields).toString(), 'application/x-www-form-urlencoded', auth);
  }

  /**
   * Sends the request; when the kept-alive connection it went out on had been closed by the server while
   * idle (its keep-alive timeout, e.g. while a bench sets up), the request fails at once and is sent
   * again, once, on a new connection. Any other failure is the caller's.
   */
  private async send(
    method: string,
    path: string,
    payload: string | undefined,
    contentType: string,
    auth: boolean,
  ): Promise<{ status: number; body: unknown }> {
    try {
      return await this.sendOnce(method, path, payload, contentType, auth);
    } catch (err) {
      if (!(err instanceof ClosedWhileIdle)) throw err;
      return this.sendOnce(method, path, payload, contentType, auth);
    }
  }

  private sendOnce(method: string, path: string, payload: string | undefined, contentType: string, auth: boolean): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string | number> = auth ? { authorization: this.server.auth } : {};
    if (payload !== undefined) Object.assign(headers, { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) });
    return new Promise((resolve, reject) => {
      const req = request(`${this.server.baseUrl}${path}`, { method, agent: this.agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : null });
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        });
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        reject(req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE') ? new ClosedWhileIdle(err.message) : err);
      });
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A request sent on a kept-alive connection that the server had closed while it sat idle. */
class ClosedWhileIdle extends Error {}
