/**
 * npm run bench:fanout — live push fan-out. Connects N Socket.IO viewers (websocket transport)
 * to one ONAIR campaign, then sends sales-status changes one after the other through the HTTP API and
 * measures, for every viewer and every change, the time from the HTTP request being sent to the
 * goods.salesStatus event arriving at that viewer. Prints delivered/expected, p50, p99, max, the CPU
 * time of each server and of the load generator, and peak RSS.
 *
 *   single:  one server process on SQLite (the embedded default), no Redis.
 *   cluster: two server processes sharing one MariaDB database and Redis (REDIS_URL), viewers split
 *            half and half, every change sent through node A. (SQLite cannot be shared between
 *            processes, hence MariaDB here.)
 *
 * Options: --viewers=N (default 10000 on one process, 20000 on two) --changes=20 --mode=single|cluster|both (default both) --gap=250 (ms between
 *          changes) --batch=500 (viewers connecting at a time) --redis=redis://127.0.0.1:6379
 *          --profile=DIR (V8 tick profile of each server into DIR/<mode>-<node>.log; read it with
 *          `node --prof-process DIR/single-A.log`)  --node-args=--max-semi-space-size=64,... (extra
 *          node flags for the server processes, comma-separated, to try GC settings)
 *          --warm-up=1 (changes sent first and left out of the figures, which print them on a line of their own:
 *          the first change of a fresh server and fresh viewer processes runs code not yet compiled on either
 *          side, and with 20 changes its 10,000 deliveries would be 5% of all, enough to set the p99 alone)
 *          --client=raw|socket.io (default raw: a minimal WebSocket + Socket.IO v5 client on a plain TCP
 *          socket, so that the load generator, which shares the 2 cores with the server, spends little
 *          CPU per message; socket.io: the full socket.io-client, for comparison)
 *          --per-process=10000 (most viewers one load-generator process holds: each viewer is an open file,
 *          and a process may not hold more than `ulimit -n`)
 *          --burst=1 (changes sent at once, each on its own connection and timed from the burst's start; the
 *          changes and warm-up count whole bursts)
 *          --probe (another customer reads its list page over and over on node A while the changes go out, as
 *          bench:sync's fairness probe does: that customer's p50/p99/max and node A's longest event-loop stall;
 *          off by default, since its requests take CPU from the fan-out being measured)
 *          --read=batch|wake (default batch)  --read-every=1 (ms): how the viewer processes take their reads
 *          once connected. batch: whatever has arrived, every 1 ms, never waiting in epoll_wait, so that the
 *          server's sends do not each have to wake a load generator on the other core (a cost viewers on
 *          other hosts never put on a server); each delivery is timed when read, so at most that late.
 *          wake: woken per message, as before. See bench/batched-reads.ts.
 * The load generator runs on the same machine as the server(s): this process sends the changes and
 * collects the figures, and the viewers live in child processes of it (this file, --role=viewers), as
 * many as --per-process asks for. Times are read from the monotonic clock (process.hrtime), which is the
 * same in every process. A delivery counts for a change when it is a goods.salesStatus event whose seq is
 * that change's; any other seq is reported as unexpected. The CPU time of the measured window (from the
 * first change until every event arrived, or 10 s after the last change) is reported for each server
 * (/proc/<pid>/stat, user and system) and for the load generator (process.cpuUsage() of this process
 * and of each viewer process).
 */

import { ChildProcess, execFileSync, fork } from 'node:child_process';
import { randomBytes, randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { io } from 'socket.io-client';
import { readModeFrom, readModeLine, startReading } from './batched-reads';
import { BenchServer, FairnessFigures, fairnessLine, KeepAliveClient, measureFairness, peakRssMb, startServer } from './support';

interface ViewerHandlers {
  snapshot(seq: number): void;
  status(seq: number): void;
  fail(reason: string): void;
}

interface ViewerConnection {
  close(): void;
}

const READ_BUFFER = Buffer.alloc(256 * 1024);
const STATUS_PREFIX = Buffer.from('42/live,["goods.salesStatus",');
const SNAPSHOT_PREFIX = Buffer.from('42/live,["campaign.snapshot",');
const SEQ_KEY = Buffer.from('"seq":');

/** A client-to-server WebSocket text frame (clients must mask; RFC 6455 §5.3). */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const headerLength = payload.length < 126 ? 2 : 4;
  const frame = Buffer.allocUnsafe(headerLength + 4 + payload.length);
  frame[0] = 0x81; // FIN + text
  if (headerLength === 2) frame[1] = 0x80 | payload.length;
  else {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(payload.length, 2);
  }
  randomFillSync(frame, headerLength, 4);
  for (let i = 0; i < payload.length; i += 1) frame[headerLength + 4 + i] = payload[i] ^ frame[headerLength + (i & 3)];
  return frame;
}

function hasPrefix(buf: Buffer, at: number, end: number, prefix: Buffer): boolean {
  if (end - at < prefix.length) return false;
  for (let i = 0; i < prefix.length; i += 1) if (buf[at + i] !== prefix[i]) return false;
  return true;
}

/** The number after the first `"seq":` in buf[at, end), or NaN. */
function seqIn(buf: Buffer, at: number, end: number): number {
  const key = buf.indexOf(SEQ_KEY, at);
  if (key < 0 || key >= end) return NaN;
  let n = 0;
  let i = key + SEQ_KEY.length;
  if (i >= end || buf[i] < 0x30 || buf[i] > 0x39) return NaN;
  for (; i < end && buf[i] >= 0x30 && buf[i] <= 0x39; i += 1) n = n * 10 + (buf[i] - 0x30);
  return n;
}

/**
 * One viewer speaking just enough WebSocket (RFC 6455) and Socket.IO v5 over a plain TCP socket, so that
 * the load generator, which shares the 2 cores with the server, spends as little CPU per message as it
 * can: HTTP upgrade → Engine.IO open (0) → connect to /live with auth (40/live,{…}) → events
 * (42/live,[name,payload]); pings (2) are answered (3). Only the event name and the payload's first
 * `seq` are read; frames split across reads are reassembled.
 */
function rawViewer(baseUrl: string, auth: Record<string, string>, on: ViewerHandlers): ViewerConnection {
  const { hostname, port } = new URL(baseUrl);
  // Reads land in one shared buffer (net's `onread`: no Buffer and no stream event per read) and are
  // parsed in place; only an incomplete frame at the end of a read is copied, to be completed by the next.
  const socket = connect({ port: Number(port), host: hostname, onread: { buffer: READ_BUFFER, callback: (n: number) => onBytes(READ_BUFFER.subarray(0, n)) } });
  socket.setNoDelay(true);
  socket.write(
    `GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let upgraded = false;
  let pending: Buffer | null = null;
  const onBytes = (chunk: Buffer): boolean => {
    const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
    pending = null;
    let at = 0;
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        pending = Buffer.from(buf);
        return true;
      }
      const status = buf.toString('latin1', 0, buf.indexOf('\r\n'));
      if (!/^HTTP\/1\.1 101 /.test(status)) {
        on.fail(`upgrade refused: ${status}`);
        socket.destroy();
        return false;
      }
      upgraded = true;
      at = end + 4;
    }
    while (buf.length - at >= 2) {
      let length = buf[at + 1] & 0x7f;
      let header = 2;
      if (length === 126) {
        if (buf.length - at < 4) break;
        length = buf.readUInt16BE(at + 2);
        header = 4;
      } else if (length === 127) {
        if (buf.length - at < 10) break;
        length = Number(buf.readBigUInt64BE(at + 2));
        header = 10;
      }
      if (buf.length - at < header + length) break;
      const opcode = buf[at] & 0x0f;
      const start = at + header;
      const end = start + length;
      at = end;
      if (opcode === 0x8) {
        on.fail('closed by the server');
        socket.destroy();
        return false;
      }
      if (opcode !== 0x1) continue; // the server sends text frames only; WebSocket pings are not used
      if (length === 1 && buf[start] === 0x32) socket.write(maskedTextFrame('3'));
      else if (buf[start] === 0x30) socket.write(maskedTextFrame(`40/live,${JSON.stringify(auth)}`));
      else if (hasPrefix(buf, start, end, STATUS_PREFIX)) on.status(seqIn(buf, start, end));
      else if (hasPrefix(buf, start, end, SNAPSHOT_PREFIX)) on.snapshot(seqIn(buf, start, end));
      else if (buf[start] === 0x34 && buf[start + 1] === 0x34) on.fail(`connect_error ${buf.toString('utf8', start, end)}`);
    }
    if (at < buf.length) pending = Buffer.from(buf.subarray(at));
    return true;
  };
  socket.on('error', (err) => on.fail(err.message));
  socket.on('close', () => on.fail('closed'));
  return { close: () => socket.destroy() };
}

function socketIoViewer(baseUrl: string, auth: Record<string, string>, on: ViewerHandlers): ViewerConnection {
  const socket = io(`${baseUrl}/live`, { transports: ['websocket'], auth, reconnection: false, forceNew: true, timeout: 60_000 });
  socket.on('goods.salesStatus', (p: { seq: number }) => on.status(p.seq));
  socket.on('campaign.snapshot', (p: { seq: number }) => on.snapshot(p.seq));
  socket.on('connect_error', (err) => on.fail(`connect_error ${err.message}`));
  socket.on('disconnect', (reason) => on.fail(reason));
  return { close: () => socket.close() };
}

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
/** Viewers per run: 10,000 on one process, 20,000 (10,000 per node) on two, unless --viewers says otherwise. */
const viewersFor = (mode: 'single' | 'cluster'): number => Number(arg('viewers', mode === 'single' ? '10000' : '20000'));
/**
 * Changes sent at once, each on its own connection (--burst=K, default 1): a burst of orders on a hot item,
 * or operators flipping several items together. Every change of a burst starts its clock when the burst
 * is sent; --changes and --warm-up then count whole bursts' worth of changes.
 */
const BURST = Math.max(1, Math.floor(Number(arg('burst', '1'))));
const CHANGES = Math.ceil(Number(arg('changes', '20')) / BURST) * BURST;
/**
 * Changes sent first and left out of the figures (printed on a line of their own): the first change of
 * a fresh server and of fresh viewer processes runs code that nothing compiled yet on either side (the
 * route's queries and validation, the fan-out loop, the viewers' event parsing).
 */
const WARM_UP = Math.max(0, Number(arg('warm-up', '1'))) * BURST;
/** Every change sent: the warm-up ones, then the measured ones. */
const SENT = WARM_UP + CHANGES;
const MODE = arg('mode', 'both');
const GAP_MS = Number(arg('gap', '250'));
const BATCH = Number(arg('batch', '500'));
const REDIS_URL = arg('redis', process.env.REDIS_URL || 'redis://127.0.0.1:6379');
const PROFILE_DIR = arg('profile', '');
const NODE_ARGS = arg('node-args', '').split(',').filter(Boolean);
const profiled = (name: string): string[] => [
  ...NODE_ARGS,
  ...(PROFILE_DIR ? ['--prof', '--no-logfile-per-isolate', `--logfile=${PROFILE_DIR}/${name}.log`] : []),
];
const CLIENT = arg('client', 'raw');
const PER_PROCESS = Number(arg('per-process', '10000'));
const GOODS = 5;
/** How the viewer processes take their reads while the changes are measured (see batched-reads.ts). */
const READS = readModeFrom(process.argv);
const STATUSES = ['SOLD_OUT', 'ALMOST_SOLD_OUT', 'ON_SALE'];
/** --probe: another customer's list page read over and over on node A during the changes (see measureFairness). */
const PROBE = process.argv.includes('--probe');

/** The goals: every event delivered, and these, per mode. */
const TARGETS = { single: { viewers: 10_000, p99Ms: 100, rssMb: 600 }, cluster: { viewers: 20_000, p99Ms: 150, rssMb: 600 } };

/** Milliseconds on the monotonic clock: comparable between this process and the viewer processes. */
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuOf = (usage: NodeJS.CpuUsage): number => Math.round((usage.user + usage.system) / 1000);

/** What the parent tells a viewer process, and what it answers. */
type ToViewers =
  | { kind: 'connect'; baseUrls: string[]; auth: Record<string, string>; first: number; count: number }
  | { kind: 'base'; baseSeq: number }
  | { kind: 'mark' }
  | { kind: 'finish'; deadline: number };
type FromViewers =
  | { kind: 'progress'; connected: number }
  | { kind: 'joined'; seqs: number[] }
  | { kind: 'failed'; message: string }
  | { kind: 'ready' }
  | { kind: 'arrivals'; arrival: Float64Array; unexpected: number; cpuMs: number };

/**
 * A viewer process (--role=viewers): connects its share of the viewers, then records when each of them
 * got each change (monotonic ms, NaN = not arrived) and hands the figures back when asked.
 */
function viewerProcess(): void {
  const send = (message: FromViewers) => process.send?.(message);
  let arrival = new Float64Array(0);
  let baseSeq = -1;
  let unexpected = 0;
  let cpuAtMark = process.cpuUsage();
  const sockets: ViewerConnection[] = [];
  const connectViewer = CLIENT === 'socket.io' ? socketIoViewer : rawViewer;

  async function connectAll(baseUrls: string[], auth: Record<string, string>, first: number, count: number): Promise<void> {
    arrival = new Float64Array(count * SENT).fill(NaN);
    const snapshotSeq: number[] = new Array<number>(count).fill(NaN);
    for (let start = 0; start < count; start += BATCH) {
      const batch: Promise<void>[] = [];
      for (let v = start; v < Math.min(count, start + BATCH); v += 1) {
        const baseUrl = baseUrls[(first + v) % baseUrls.length];
        batch.push(
          new Promise<void>((resolve, reject) => {
            let joined = false;
            sockets.push(
              connectViewer(baseUrl, auth, {
                status: (seq) => {
                  const at = now();
                  const change = seq - baseSeq - 1;
                  if (baseSeq < 0 || change < 0 || change >= SENT) unexpected += 1;
                  else arrival[v * SENT + change] = at;
                },
                snapshot: (seq) => {
                  if (joined) return;
                  joined = true;
                  snapshotSeq[v] = seq;
                  resolve();
                },
                fail: (reason) => {
                  if (!joined) reject(new Error(`viewer ${first + v}: ${reason} before its snapshot`));
                },
              }),
            );
          }),
        );
      }
      await Promise.all(batch);
      send({ kind: 'progress', connected: Math.min(count, start + BATCH) });
    }
    send({ kind: 'joined', seqs: [Math.min(...snapshotSeq), Math.max(...snapshotSeq)] });
  }

  const delivered = () => arrival.reduce((n, x) => (Number.isNaN(x) ? n : n + 1), 0);
  process.on('message', (message: ToViewers) => {
    if (message.kind === 'connect') {
      connectAll(message.baseUrls, message.auth, message.first, message.count).catch((err: Error) => send({ kind: 'failed', message: err.message }));
    } else if (message.kind === 'base') {
      baseSeq = message.baseSeq;
      // Connected: from here until the process ends, reads are taken as --read says.
      startReading(READS.mode, READS.everyMs);
      send({ kind: 'ready' });
    } else if (message.kind === 'mark') {
      cpuAtMark = process.cpuUsage();
      send({ kind: 'ready' });
    } else if (message.kind === 'finish') {
      void (async () => {
        while (delivered() < arrival.length && now() < message.deadline) await sleep(50);
        const cpuMs = cpuOf(process.cpuUsage(cpuAtMark));
        // The viewers stay connected until the parent has read the servers' CPU time and lets go of this
        // process: their disconnects are not part of the measured window.
        send({ kind: 'arrivals', arrival, unexpected, cpuMs });
      })();
    }
  });
  process.on('disconnect', () => {
    for (const s of sockets) s.close();
    process.exit(0);
  });
}

/** A viewer process of the load generator, and a way to wait for its next answer of a kind. */
class Viewers {
  private readonly waiters: Array<{ kind: FromViewers['kind']; resolve: (m: FromViewers) => void }> = [];
  private failure: Error | null = null;
  connected = 0;

  constructor(
    readonly child: ChildProcess,
    readonly count: number,
  ) {
    child.on('message', (message: FromViewers) => {
      if (message.kind === 'progress') this.connected = message.connected;
      if (message.kind === 'failed') this.fail(new Error(message.message));
      const i = this.waiters.findIndex((w) => w.kind === message.kind);
      if (i >= 0) this.waiters.splice(i, 1)[0].resolve(message);
    });
    child.on('exit', (code) => this.fail(new Error(`a viewer process exited (code ${code})`)));
  }

  static start(count: number): Viewers {
    const child = fork(__filename, ['--role=viewers', ...process.argv.slice(2)], {
      execArgv: ['-r', 'ts-node/register/transpile-only'],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Viewers(child, count);
  }

  private rejecters: Array<(err: Error) => void> = [];

  private fail(err: Error): void {
    this.failure ??= err;
    for (const reject of this.rejecters.splice(0)) reject(err);
  }

  ask<K extends FromViewers['kind']>(message: ToViewers, kind: K): Promise<Extract<FromViewers, { kind: K }>> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.rejecters.push(reject);
      this.waiters.push({ kind, resolve: resolve as (m: FromViewers) => void });
      this.child.send(message);
    });
  }

  stop(): void {
    this.child.removeAllListeners('exit');
    if (this.child.connected) this.child.disconnect();
  }
}

interface Result {
  mode: 'single' | 'cluster';
  db: string;
  nodes: BenchServer[];
  viewers: number;
  connectMs: number;
  delivered: number;
  expected: number;
  p50: number;
  p99: number;
  max: number;
  perNode: string[];
  httpP50: number;
  httpMax: number;
  httpFirst: number;
  serverCpu: Array<{ userMs: number; sysMs: number }>;
  deliveredPerNode: number[];
  generatorCpuMs: number[];
  rss: number[];
  /** Peak RSS of each viewer process. */
  generatorRss: number[];
  /** With --probe: what another customer's list page got on node A meanwhile. */
  fairness: FairnessFigures | null;
}

/** utime and stime of a process so far, in ms (Linux /proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): { userMs: number; sysMs: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { userMs: Number(fields[11]) * 10, sysMs: Number(fields[12]) * 10 };
}

function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summarize(values: Float64Array): { p50: number; p99: number; max: number } {
  const sorted = values.slice().sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
}

/**
 * The bench's own HTTP clients: node:http, each on one kept-alive connection (KeepAliveClient), one per
 * change of a burst. Each change's clock starts before the request is built, so the client's own work
 * counts in every delay; fetch (undici) spent about twice as long as node:http before its request
 * reached a server (1.1–1.3 ms against 0.6–0.7 ms after 250 ms idle, on loopback).
 */
const clients = new Map<BenchServer, KeepAliveClient[]>();

/** A call through the server's `k`th client: the JSON body of a 200, or an error; `form` sends the body as a form. */
async function call(server: BenchServer, method: string, path: string, body?: unknown, form = false, k = 0): Promise<Record<string, unknown>> {
  let mine = clients.get(server);
  if (!mine) clients.set(server, (mine = []));
  while (mine.length <= k) mine.push(new KeepAliveClient(server));
  const client = mine[k];
  const res = form ? await client.callForm(method, path, body as Record<string, string>) : await client.call(method, path, body);
  if (res.status !== 200) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body as Record<string, unknown>;
}

/** Closes the clients of these servers (before they stop). */
function closeClients(servers: BenchServer[]): void {
  for (const server of servers) {
    for (const client of clients.get(server) ?? []) client.close();
    clients.delete(server);
  }
}

/** Goods, an ONAIR campaign with them; returns the campaign key and the goods ids. */
async function setUpCampaign(server: BenchServer): Promise<{ key: string; goodsIds: number[] }> {
  const goodsIds: number[] = [];
  for (let i = 0; i < GOODS; i += 1) {
    const g = await call(server, 'POST', `/v1/goods/${server.accessKey}`, {
      name: `Fanout item ${i}`,
      sku: `FAN-${i}`,
      url: `https://shop.example.com/fanout/${i}`,
      originalPrice: 10000,
      discountedPrice: 9000,
    });
    goodsIds.push(g.id as number);
  }
  const campaign = await call(server, 'POST', `/v1/console/${server.accessKey}/campaigns`, { title: 'Fan-out bench', operatorName: 'Bench' });
  const key = campaign.campaignKey as string;
  await call(server, 'POST', `/v1/console/${server.accessKey}/campaigns/${key}/goods`, { goodsIds });
  await call(server, 'PUT', `/v1/console/${server.accessKey}/campaigns/${key}/status`, { campaignStatus: 'ONAIR' });
  return { key, goodsIds };
}

async function measure(mode: 'single' | 'cluster', db: string, nodes: BenchServer[]): Promise<Result> {
  const viewers = viewersFor(mode);
  const origin = nodes[0];
  const { key, goodsIds } = await setUpCampaign(origin);

  // The viewers, split evenly over as few processes as --per-process allows; viewer v watches node v % nodes.
  const processes = Math.ceil(viewers / PER_PROCESS);
  const shares = Array.from({ length: processes }, (_, i) => Math.floor(viewers / processes) + (i < viewers % processes ? 1 : 0));
  const generators = shares.map((count) => Viewers.start(count));
  try {
    const connectStarted = now();
    const progress = setInterval(() => {
      const connected = generators.reduce((n, g) => n + g.connected, 0);
      process.stdout.write(`  ${mode}: ${connected} viewers connected\n`);
    }, 2000);
    let joined: Array<{ seqs: number[] }>;
    try {
      let first = 0;
      joined = await Promise.all(
        generators.map((g) => {
          const message: ToViewers = {
            kind: 'connect',
            baseUrls: nodes.map((n) => n.baseUrl),
            auth: { accessKey: origin.accessKey, campaignKey: key },
            first,
            count: g.count,
          };
          first += g.count;
          return g.ask(message, 'joined');
        }),
      );
    } finally {
      clearInterval(progress);
    }
    const connectMs = now() - connectStarted;
    process.stdout.write(`  ${mode}: ${viewers} viewers connected in ${processes} load-generator process${processes > 1 ? 'es' : ''}\n`);
    const seqs = joined.flatMap((j) => j.seqs);
    const baseSeq = Math.max(...seqs);
    if (Math.min(...seqs) !== baseSeq) throw new Error('viewers got snapshots with different seqs before any change');
    await Promise.all(generators.map((g) => g.ask({ kind: 'base', baseSeq }, 'ready')));
    await sleep(1000); // let the server settle after the connection storm

    const sentAt = new Float64Array(SENT).fill(NaN);
    const httpMs: number[] = [];
    const warmUpHttpMs: number[] = [];
    let cpuBefore = nodes.map((n) => cpuMs(n.pid));
    let generatorBefore = process.cpuUsage();
    const changes = async (): Promise<void> => {
      for (let c = 0; c < SENT; c += BURST) {
        if (c === WARM_UP) {
          // The measured window starts here: the CPU time of each process from now on.
          await Promise.all(generators.map((g) => g.ask({ kind: 'mark' }, 'ready')));
          cpuBefore = nodes.map((n) => cpuMs(n.pid));
          generatorBefore = process.cpuUsage();
        }
        // A burst's changes get their seqs in the order the server commits them, so each of them is timed
        // from the moment the burst was sent.
        const started = now();
        await Promise.all(
          Array.from({ length: BURST }, async (_, k) => {
            const i = c + k;
            sentAt[i] = started;
            const body = { goodsId: String(goodsIds[i % goodsIds.length]), salesStatus: STATUSES[i % STATUSES.length] };
            await call(origin, 'PUT', `/v1/goods/${origin.accessKey}/campaign/${key}/salesStatus/id`, body, true, k);
            (i < WARM_UP ? warmUpHttpMs : httpMs).push(now() - started);
          }),
        );
        await sleep(GAP_MS);
      }
    };
    const fairness = PROBE ? (await measureFairness(nodes[0], changes)).fairness : (await changes(), null);
    // Every viewer process answers once all its viewers have every change, or 10 s after the last change.
    const answers = await Promise.all(generators.map((g) => g.ask({ kind: 'finish', deadline: now() + 10_000 }, 'arrivals')));
    const serverCpu = nodes.map((n, i) => {
      const after = cpuMs(n.pid);
      return { userMs: after.userMs - cpuBefore[i].userMs, sysMs: after.sysMs - cpuBefore[i].sysMs };
    });
    const generatorCpuMs = [cpuOf(process.cpuUsage(generatorBefore)), ...answers.map((a) => a.cpuMs)];

    // Delivery delays: one slot per viewer and change (NaN = not arrived).
    const every = new Float64Array(viewers * SENT).fill(NaN);
    let offset = 0;
    for (const answer of answers) {
      for (let j = 0; j < answer.arrival.length; j += 1) every[offset + j] = answer.arrival[j] - sentAt[j % SENT];
      offset += answer.arrival.length;
    }
    // The measured changes (one slot per viewer and change) and, apart, the warm-up ones.
    const delay = new Float64Array(viewers * CHANGES);
    const warmUp = new Float64Array(viewers * WARM_UP);
    for (let v = 0; v < viewers; v += 1) {
      delay.set(every.subarray(v * SENT + WARM_UP, (v + 1) * SENT), v * CHANGES);
      warmUp.set(every.subarray(v * SENT, v * SENT + WARM_UP), v * WARM_UP);
    }
    const unexpected = answers.reduce((n, a) => n + a.unexpected, 0);
    await sleep(500);

    const nodeOf = (slot: number) => Math.floor(slot / CHANGES) % nodes.length;
    const got = delay.filter((x) => !Number.isNaN(x));
    const all = summarize(got);
    const deliveredPerNode = nodes.map(() => 0);
    const perNode = nodes.map((n, i) => {
      const mine = delay.filter((x, j) => nodeOf(j) === i && !Number.isNaN(x));
      deliveredPerNode[i] = mine.length;
      const s = summarize(mine);
      return `viewers on node ${String.fromCharCode(65 + i)}: ${mine.length} delivered, p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`;
    });
    const perChange = Array.from({ length: CHANGES }, (_, c) => {
      const mine = new Float64Array(viewers);
      let k = 0;
      for (let v = 0; v < viewers; v += 1) if (!Number.isNaN(delay[v * CHANGES + c])) mine[k++] = delay[v * CHANGES + c];
      const s = summarize(mine.subarray(0, k));
      return `${s.p50.toFixed(0)}/${s.max.toFixed(0)}`;
    });
    perNode.push(`per change p50/max (ms): ${perChange.join(' ')}`);
    if (WARM_UP) {
      const arrived = warmUp.filter((x) => !Number.isNaN(x));
      const w = summarize(arrived);
      perNode.push(
        `warm-up, left out of the figures: ${WARM_UP} change${WARM_UP > 1 ? 's' : ''} first, ${arrived.length}/${warmUp.length} delivered, ` +
          `p50 ${w.p50.toFixed(1)} ms, max ${w.max.toFixed(1)} ms; HTTP call ${warmUpHttpMs.map((ms) => ms.toFixed(1)).join(', ')} ms`,
      );
    }
    if (unexpected) perNode.push(`${unexpected} unexpected goods.salesStatus events`);
    const httpFirst = httpMs[0];
    httpMs.sort((a, b) => a - b);
    return {
      mode,
      db,
      nodes,
      viewers,
      connectMs,
      delivered: got.length,
      expected: viewers * CHANGES,
      ...all,
      perNode,
      httpP50: httpMs[Math.floor(httpMs.length / 2)],
      httpMax: httpMs[httpMs.length - 1],
      httpFirst,
      serverCpu,
      deliveredPerNode,
      generatorCpuMs,
      rss: nodes.map((n) => peakRssMb(n.pid)),
      generatorRss: generators.map((g) => peakRssMb(g.child.pid as number)),
      fairness,
    };
  } finally {
    for (const g of generators) g.stop();
  }
}

function report(r: Result): string[] {
  const TARGET = TARGETS[r.mode];
  const ok = (cond: boolean) => (cond ? 'ok' : 'MISSED');
  const rss = r.rss.map((mb, i) => `${String.fromCharCode(65 + i)} ${mb} MB`).join(', ');
  const server = r.serverCpu
    .map(({ userMs, sysMs }, i) => {
      const perEvent = r.deliveredPerNode[i] ? ` = ${(((userMs + sysMs) * 1000) / r.deliveredPerNode[i]).toFixed(1)} µs per viewer and event` : '';
      return `${String.fromCharCode(65 + i)} ${userMs + sysMs} ms (user ${userMs}, system ${sysMs})${perEvent}`;
    })
    .join('; ');
  const generator = r.generatorCpuMs.reduce((a, b) => a + b, 0);
  const parts = `this process ${r.generatorCpuMs[0]} ms, viewer processes ${r.generatorCpuMs.slice(1).join(' + ')} ms`;
  return [
    `${r.mode} (${r.nodes.length} process${r.nodes.length > 1 ? 'es' : ''}, ${r.db}${r.nodes.length > 1 ? ' + Redis' : ''}): ${r.viewers} viewers connected in ${(r.connectMs / 1000).toFixed(1)} s`,
    `  delivered/expected ${r.delivered}/${r.expected}   p50 ${r.p50.toFixed(1)} ms   p99 ${r.p99.toFixed(1)} ms   max ${r.max.toFixed(1)} ms`,
    ...r.perNode.map((l) => `  ${l}`),
    `  HTTP sales-status call: first ${r.httpFirst.toFixed(1)} ms, p50 ${r.httpP50.toFixed(1)} ms, max ${r.httpMax.toFixed(1)} ms`,
    `  CPU time during the changes: server ${server}`,
    `  CPU time during the changes: load generator ${generator} ms (${parts}) = ${((generator * 1000) / Math.max(1, r.delivered)).toFixed(1)} µs per delivered event`,
    `  server peak RSS (peakRssMb): ${rss}; viewer processes ${r.generatorRss.map((mb) => `${mb} MB`).join(', ')}`,
    ...(r.fairness ? [`  meanwhile on node A (--probe): ${fairnessLine(r.fairness)}`] : []),
    `  targets: all delivered ${ok(r.delivered === r.expected && !r.perNode.some((l) => l.includes('unexpected')))}, p99 < ${TARGET.p99Ms} ms ${ok(r.p99 < TARGET.p99Ms)}, RSS < ${TARGET.rssMb} MB ${ok(r.rss.every((mb) => mb < TARGET.rssMb))}${r.viewers < TARGET.viewers ? ` (only ${r.viewers} viewers: below the ${TARGET.viewers} target)` : ''}`,
  ];
}

const loadAvg = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function checkFdLimit(viewers: number, nodes: number): void {
  const limit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  const generator = Math.min(viewers, PER_PROCESS) + 500;
  const server = Math.ceil(viewers / nodes) + 500;
  console.log(
    `open-file limit (ulimit -n): ${Number.isFinite(limit) ? limit : 'unlimited'}; each load-generator process needs about ${generator}, each server about ${server}`,
  );
  if (Number.isFinite(limit) && limit < Math.max(generator, server)) {
    throw new Error(`ulimit -n is ${limit}, too low: raise it (ulimit -n ${Math.max(generator, server) + 1000}), or pass a lower --per-process or --viewers`);
  }
}

async function main(): Promise<void> {
  console.log(
    `bench:fanout — ${MODE === 'cluster' ? '' : `${viewersFor('single')} viewers on one process, `}${MODE === 'single' ? '' : `${viewersFor('cluster')} on two, `}${CHANGES} changes ${BURST > 1 ? `in bursts of ${BURST} sent at once, ` : ''}${GAP_MS} ms apart${WARM_UP ? ` after ${WARM_UP} warm-up` : ''}, mode ${MODE}; ${cpus().length} CPUs shared by the load generator and the server(s)`,
  );
  console.log(`load average before the run: ${loadAvg()} (other work on the machine skews the figures)`);
  console.log(readModeLine(READS.mode, READS.everyMs));
  if (NODE_ARGS.length) console.log(`server node flags: ${NODE_ARGS.join(' ')}`);
  if (MODE === 'single' || MODE === 'both') checkFdLimit(viewersFor('single'), 1);
  if (MODE === 'cluster' || MODE === 'both') checkFdLimit(viewersFor('cluster'), 2);
  const lines: string[] = [];
  let port = 3840;
  if (MODE === 'single' || MODE === 'both') {
    const server = await startServer('sqlite', port++, 'fanout', { env: { REDIS_URL: '' }, nodeArgs: profiled('single-A'), loopProbe: PROBE });
    try {
      lines.push(...report(await measure('single', 'SQLite', [server])));
    } finally {
      closeClients([server]);
      await server.stop();
    }
    console.log(lines.join('\n'));
  }
  if (MODE === 'cluster' || MODE === 'both') {
    const a = await startServer('mysql', port++, 'fanout', { env: { REDIS_URL }, nodeArgs: profiled('cluster-A'), loopProbe: PROBE });
    let b: BenchServer | undefined;
    try {
      b = await startServer('mysql', port++, 'fanout', { join: a, nodeArgs: profiled('cluster-B') });
      const r = await measure('cluster', 'MariaDB', [a, b]);
      lines.push(...report(r));
      console.log(report(r).join('\n'));
    } finally {
      closeClients([a]);
      await b?.stop();
      await a.stop();
    }
  }
  console.log(
    `\nbench:fanout results (targets: every event delivered; one process: ${TARGETS.single.viewers} viewers, p99 < ${TARGETS.single.p99Ms} ms; two: ${TARGETS.cluster.viewers} viewers, p99 < ${TARGETS.cluster.p99Ms} ms; server RSS < ${TARGETS.single.rssMb} MB)`,
  );
  for (const line of lines) console.log(line);
  console.log(`load generator peak RSS (this process) ${peakRssMb(process.pid)} MB; load average after the run: ${loadAvg()}`);
}

if (process.argv.includes('--role=viewers')) viewerProcess();
else {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
