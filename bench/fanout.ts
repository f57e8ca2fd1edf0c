/**
 * npm run bench:fanout — live push fan-out. Connects N Socket.IO viewers (websocket transport)
 * to one ONAIR campaign, then sends sales-status changes one after the other through the HTTP API and
 * measures, for every viewer and every change, the time from the HTTP request being sent to the
 * goods.salesStatus event arriving at that viewer. Prints delivered/expected, p50, p99, max and the
 * peak RSS of each server process.
 *
 *   single:  one server process on SQLite (the embedded default), no Redis.
 *   cluster: two server processes sharing one MariaDB database and Redis (REDIS_URL), viewers split
 *            half and half, every change sent through node A. (SQLite cannot be shared between
 *            processes, hence MariaDB here.)
 *
 * Options: --viewers=10000 --changes=20 --mode=single|cluster|both (default both) --gap=250 (ms between
 *          changes) --batch=500 (viewers connecting at a time) --redis=redis://127.0.0.1:6379
 *          --profile=DIR (V8 tick profile of each server into DIR/<mode>-<node>.log; read it with
 *          `node --prof-process DIR/single-A.log`)  --node-args=--max-semi-space-size=64,... (extra
 *          node flags for the server processes, comma-separated, to try GC settings)
 *          --client=raw|socket.io (default raw: a minimal WebSocket + Socket.IO v5 client on a plain TCP
 *          socket, so that the load generator, which shares the 2 cores with the server, spends little
 *          CPU per message; socket.io: the full socket.io-client, for comparison)
 * The load generator (this process) runs on the same machine as the server(s). A delivery
 * counts for a change when it is a goods.salesStatus event whose seq is that change's; any other seq is
 * reported as unexpected.
 */

import { execFileSync } from 'node:child_process';
import { randomBytes, randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { io } from 'socket.io-client';
import { BenchServer, peakRssMb, startServer } from './support';

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
const VIEWERS = Number(arg('viewers', '10000'));
const CHANGES = Number(arg('changes', '20'));
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
const GOODS = 5;
const STATUSES = ['SOLD_OUT', 'ALMOST_SOLD_OUT', 'ON_SALE'];

const TARGET = { viewers: 10_000, p99Ms: 200, rssMb: 600 };

interface Result {
  mode: string;
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
  serverCpuMs: number[];
  generatorCpuMs: number;
  rss: number[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** utime + stime of a process so far, in ms (Linux /proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summarize(values: Float64Array): { p50: number; p99: number; max: number } {
  const sorted = values.slice().sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
}

async function call(server: BenchServer, method: string, path: string, body?: unknown, form = false): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: server.auth, 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' },
    body: body === undefined ? undefined : form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
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

async function measure(mode: string, db: string, nodes: BenchServer[]): Promise<Result> {
  const origin = nodes[0];
  const { key, goodsIds } = await setUpCampaign(origin);

  // Arrival times: one slot per viewer and change (NaN = not arrived).
  const arrival = new Float64Array(VIEWERS * CHANGES).fill(NaN);
  const sentAt = new Float64Array(CHANGES).fill(NaN);
  const nodeOf = new Uint8Array(VIEWERS);
  const snapshotSeq = new Float64Array(VIEWERS).fill(NaN);
  let baseSeq = -1;
  let unexpected = 0;
  const sockets: ViewerConnection[] = [];
  const connect = CLIENT === 'socket.io' ? socketIoViewer : rawViewer;

  const connectStarted = performance.now();
  for (let start = 0; start < VIEWERS; start += BATCH) {
    const batch: Promise<void>[] = [];
    for (let v = start; v < Math.min(VIEWERS, start + BATCH); v += 1) {
      const node = v % nodes.length;
      nodeOf[v] = node;
      batch.push(
        new Promise<void>((resolve, reject) => {
          let joined = false;
          sockets.push(
            connect(
              nodes[node].baseUrl,
              { accessKey: origin.accessKey, campaignKey: key },
              {
                status: (seq) => {
                  const now = performance.now();
                  const change = seq - baseSeq - 1;
                  if (baseSeq < 0 || change < 0 || change >= CHANGES) {
                    unexpected += 1;
                    return;
                  }
                  arrival[v * CHANGES + change] = now - sentAt[change];
                },
                snapshot: (seq) => {
                  if (joined) return;
                  joined = true;
                  snapshotSeq[v] = seq;
                  resolve();
                },
                fail: (reason) => {
                  if (!joined) reject(new Error(`viewer ${v}: ${reason} before its snapshot`));
                },
              },
            ),
          );
        }),
      );
    }
    await Promise.all(batch);
    if ((start / BATCH) % 4 === 3 || start + BATCH >= VIEWERS) process.stdout.write(`  ${mode}: ${Math.min(VIEWERS, start + BATCH)} viewers connected\n`);
  }
  const connectMs = performance.now() - connectStarted;
  baseSeq = Math.max(...snapshotSeq);
  if (Math.min(...snapshotSeq) !== baseSeq) throw new Error('viewers got snapshots with different seqs before any change');
  await sleep(1000); // let the server settle after the connection storm

  const cpuBefore = nodes.map((n) => cpuMs(n.pid));
  const generatorBefore = process.cpuUsage();
  const httpMs: number[] = [];
  for (let c = 0; c < CHANGES; c += 1) {
    const goodsId = goodsIds[c % goodsIds.length];
    const salesStatus = STATUSES[c % STATUSES.length];
    sentAt[c] = performance.now();
    await call(origin, 'PUT', `/v1/goods/${origin.accessKey}/campaign/${key}/salesStatus/id`, { goodsId: String(goodsId), salesStatus }, true);
    httpMs.push(performance.now() - sentAt[c]);
    await sleep(GAP_MS);
  }
  // Wait for stragglers (up to 10 s after the last change).
  const expected = VIEWERS * CHANGES;
  const deadline = performance.now() + 10_000;
  const deliveredCount = () => arrival.reduce((n, x) => (Number.isNaN(x) ? n : n + 1), 0);
  while (deliveredCount() < expected && performance.now() < deadline) await sleep(100);
  const serverCpuMs = nodes.map((n, i) => cpuMs(n.pid) - cpuBefore[i]);
  const generatorUsage = process.cpuUsage(generatorBefore);
  const generatorCpuMs = Math.round((generatorUsage.user + generatorUsage.system) / 1000);

  for (const s of sockets) s.close();
  await sleep(500);

  const got = arrival.filter((x) => !Number.isNaN(x));
  const all = summarize(got);
  const perNode = nodes.map((n, i) => {
    const mine = arrival.filter((x, j) => nodeOf[Math.floor(j / CHANGES)] === i && !Number.isNaN(x));
    const s = summarize(mine);
    return `viewers on node ${String.fromCharCode(65 + i)}: ${mine.length} delivered, p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`;
  });
  const perChange = Array.from({ length: CHANGES }, (_, c) => {
    const mine = new Float64Array(VIEWERS);
    let k = 0;
    for (let v = 0; v < VIEWERS; v += 1) if (!Number.isNaN(arrival[v * CHANGES + c])) mine[k++] = arrival[v * CHANGES + c];
    const s = summarize(mine.subarray(0, k));
    return `${s.p50.toFixed(0)}/${s.max.toFixed(0)}`;
  });
  perNode.push(`per change p50/max (ms): ${perChange.join(' ')}`);
  if (unexpected) perNode.push(`${unexpected} unexpected goods.salesStatus events`);
  const httpFirst = httpMs[0];
  httpMs.sort((a, b) => a - b);
  return {
    mode,
    db,
    nodes,
    viewers: VIEWERS,
    connectMs,
    delivered: got.length,
    expected,
    ...all,
    perNode,
    httpP50: httpMs[Math.floor(httpMs.length / 2)],
    httpMax: httpMs[httpMs.length - 1],
    httpFirst,
    serverCpuMs,
    generatorCpuMs,
    rss: nodes.map((n) => peakRssMb(n.pid)),
  };
}

function report(r: Result): string[] {
  const ok = (cond: boolean) => (cond ? 'ok' : 'MISSED');
  const rss = r.rss.map((mb, i) => `${String.fromCharCode(65 + i)} ${mb} MB`).join(', ');
  return [
    `${r.mode} (${r.nodes.length} process${r.nodes.length > 1 ? 'es' : ''}, ${r.db}${r.nodes.length > 1 ? ' + Redis' : ''}): ${r.viewers} viewers connected in ${(r.connectMs / 1000).toFixed(1)} s`,
    `  delivered/expected ${r.delivered}/${r.expected}   p50 ${r.p50.toFixed(1)} ms   p99 ${r.p99.toFixed(1)} ms   max ${r.max.toFixed(1)} ms`,
    ...r.perNode.map((l) => `  ${l}`),
    `  HTTP sales-status call: first ${r.httpFirst.toFixed(1)} ms, p50 ${r.httpP50.toFixed(1)} ms, max ${r.httpMax.toFixed(1)} ms; CPU time during the changes: server ${r.serverCpuMs.map((ms) => `${ms} ms`).join(', ')}, load generator ${r.generatorCpuMs} ms`,
    `  server peak RSS (peakRssMb): ${rss}`,
    `  targets: all delivered ${ok(r.delivered === r.expected)}, p99 < ${TARGET.p99Ms} ms ${ok(r.p99 < TARGET.p99Ms)}, RSS < ${TARGET.rssMb} MB ${ok(r.rss.every((mb) => mb < TARGET.rssMb))}${r.viewers < TARGET.viewers ? ` (only ${r.viewers} viewers: below the ${TARGET.viewers} target)` : ''}`,
  ];
}

const loadAvg = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function checkFdLimit(): void {
  const limit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  const need = VIEWERS + 1000;
  console.log(
    `open-file limit (ulimit -n): ${Number.isFinite(limit) ? limit : 'unlimited'}; this load generator needs about ${need}, a single server about ${need}`,
  );
  if (Number.isFinite(limit) && limit < need) {
    throw new Error(
      `ulimit -n is ${limit}, too low for ${VIEWERS} viewers: raise it (ulimit -n ${need + 1000}) or pass --viewers=${Math.max(100, limit - 1000)}`,
    );
  }
}

async function main(): Promise<void> {
  console.log(
    `bench:fanout — ${VIEWERS} viewers, ${CHANGES} changes ${GAP_MS} ms apart, mode ${MODE}; ${cpus().length} CPUs shared by the load generator and the server(s)`,
  );
  console.log(`load average before the run: ${loadAvg()} (other work on the machine skews the figures)`);
  if (NODE_ARGS.length) console.log(`server node flags: ${NODE_ARGS.join(' ')}`);
  checkFdLimit();
  const lines: string[] = [];
  let port = 3840;
  if (MODE === 'single' || MODE === 'both') {
    const server = await startServer('sqlite', port++, 'fanout', { env: { REDIS_URL: '' }, nodeArgs: profiled('single-A') });
    try {
      lines.push(...report(await measure('single', 'SQLite', [server])));
    } finally {
      await server.stop();
    }
    console.log(lines.join('\n'));
  }
  if (MODE === 'cluster' || MODE === 'both') {
    const a = await startServer('mysql', port++, 'fanout', { env: { REDIS_URL }, nodeArgs: profiled('cluster-A') });
    let b: BenchServer | undefined;
    try {
      b = await startServer('mysql', port++, 'fanout', { join: a, nodeArgs: profiled('cluster-B') });
      const r = await measure('cluster', 'MariaDB', [a, b]);
      lines.push(...report(r));
      console.log(report(r).join('\n'));
    } finally {
      await b?.stop();
      await a.stop();
    }
  }
  console.log(`\nbench:fanout results (targets: ${TARGET.viewers} viewers, every event delivered, p99 < ${TARGET.p99Ms} ms, server RSS < ${TARGET.rssMb} MB)`);
  for (const line of lines) console.log(line);
  console.log(`load generator peak RSS ${peakRssMb(process.pid)} MB; load average after the run: ${loadAvg()}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
