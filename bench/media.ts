/**
 * npm run bench:media — one POST /sync of 500 new goods whose mediaUrls are 500 distinct 2000x2000 JPEGs
 * served by a loopback image server inside this process, against the real server in its own process.
 * Prints images per second, the server's peak RSS, and its event-loop delay (p99, max) during the run
 * from GET /health/metrics; while the sync runs, a probe lists goods every 100 ms to show how
 * responsive the API stays. Checks that every row got its media.
 * Targets (2-core machine): >= 40 images/s, peak RSS < 400 MB, event-loop p99 < 50 ms.
 * Options: --engines=sqlite,mysql (default sqlite)  --count=500
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { BenchServer, Engine, goodsElement, peakRssMb, startServer } from './support';

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const COUNT = Number(arg('count', '500'));
const ENGINES = arg('engines', 'sqlite').split(',') as Engine[];
const SIZE = 2000;
const BASES = 8;

/** A SIZE x SIZE photo-like JPEG: smooth gradients and blobs plus grain, ~0.8 MB at quality 85. */
async function baseImage(k: number): Promise<Buffer> {
  const raw = Buffer.alloc(SIZE * SIZE * 3);
  let seed = 12345 + k * 7919;
  for (let y = 0; y < SIZE; y += 1) {
    for (let x = 0; x < SIZE; x += 1) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const grain = ((seed >> 16) % 25) - 12;
      const blob = Math.sin((x + k * 200) / 180) * Math.cos((y - k * 150) / 130) * 60;
      const i = (y * SIZE + x) * 3;
      raw[i] = Math.max(0, Math.min(255, (x * 200) / SIZE + blob + grain + k * 10));
      raw[i + 1] = Math.max(0, Math.min(255, (y * 180) / SIZE - blob + grain + 30));
      raw[i + 2] = Math.max(0, Math.min(255, 128 + blob + grain - k * 12));
    }
  }
  return sharp(raw, { raw: { width: SIZE, height: SIZE, channels: 3 } })
    .jpeg({ quality: 85 })
    .toBuffer();
}

/** Same picture, distinct bytes: a JPEG COM segment carrying the index right after SOI. */
function withComment(jpeg: Buffer, text: string): Buffer {
  const body = Buffer.from(text);
  return Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0xff, 0xfe, (body.length + 2) >> 8, (body.length + 2) & 0xff]), body, jpeg.subarray(2)]);
}

interface ImageHost {
  base: string;
  hits: number[];
  averageBytes: number;
  close(): Promise<void>;
}

async function startImageHost(): Promise<ImageHost> {
  const bases: Buffer[] = [];
  for (let k = 0; k < BASES; k += 1) bases.push(await baseImage(k));
  const hits = new Array<number>(COUNT).fill(0);
  const server = http.createServer((req, res) => {
    const m = /^\/img\/(\d+)\.jpg$/.exec(req.url ?? '');
    const i = m ? Number(m[1]) : -1;
    if (i < 0 || i >= COUNT) {
      res.writeHead(404).end();
      return;
    }
    hits[i] += 1;
    const body = withComment(bases[i % BASES], `livegoods bench image ${i}`);
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    hits,
    averageBytes: Math.round(bases.reduce((n, b) => n + b.length, 0) / BASES),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface Metrics {
  rssMb: number;
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}

/** The server's metrics; its event-loop delay figures cover the whole life of the process (boot included). */
async function metrics(server: BenchServer): Promise<Metrics> {
  const res = await fetch(`${server.baseUrl}/health/metrics`);
  return (await res.json()) as Metrics;
}

/** Lists goods every 100 ms until stopped; returns the latencies (ms). */
function probe(server: BenchServer): { stop(): Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const res = await fetch(`${server.baseUrl}/v1/goods/${server.accessKey}?count=30`, { headers: { authorization: server.auth } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`probe: HTTP ${res.status}`);
      latencies.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return latencies;
    },
  };
}

/** CPU seconds (user + system, all threads) a process has used so far (Linux; clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

interface Row {
  status: string;
  message: string | null;
  medias: Array<{ width: number; height: number; url: string; thumbnails: Array<{ width: number; height: number }> }>;
}

function verify(rows: Row[], host: ImageHost): string[] {
  const problems: string[] = [];
  if (rows.length !== COUNT) problems.push(`${rows.length} rows instead of ${COUNT}`);
  rows.forEach((r, i) => {
    const m = r.medias?.[0];
    const thumbs = m?.thumbnails?.map((t) => `${t.width}x${t.height}`).join(',');
    if (
      r.status !== 'CREATE' ||
      r.message !== null ||
      r.medias?.length !== 1 ||
      m.width !== SIZE ||
      m.height !== SIZE ||
      thumbs !== '120x120,240x240,480x480'
    ) {
      problems.push(`row ${i + 1}: ${JSON.stringify({ status: r.status, message: r.message, medias: r.medias }).slice(0, 300)}`);
    }
  });
  const distinct = new Set(rows.map((r) => r.medias?.[0]?.url)).size;
  if (distinct !== COUNT) problems.push(`${distinct} distinct media URLs instead of ${COUNT}`);
  const fetchedTwice = host.hits.filter((h) => h !== 1).length;
  if (fetchedTwice) problems.push(`${fetchedTwice} images were not fetched exactly once`);
  return problems;
}

async function main(): Promise<void> {
  console.log(`generating ${BASES} base ${SIZE}x${SIZE} JPEGs ...`);
  const host = await startImageHost();
  console.log(`image server ${host.base}: ${COUNT} distinct JPEGs, ~${(host.averageBytes / 1024).toFixed(0)} KB each`);
  const lines: string[] = [];
  let failed = false;
  let port = 3830;
  try {
    for (const engine of ENGINES) {
      const server = await startServer(engine, port++, 'media', { env: { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' } });
      try {
        const body = Array.from({ length: COUNT }, (_, i) => ({ ...goodsElement(i), mediaUrl: `${host.base}/img/${i}.jpg` }));
        const loadBefore = loadavg()
          .map((l) => l.toFixed(2))
          .join(' ');
        const watcher = probe(server);
        const cpuBefore = cpuSeconds(server.pid);
        const started = performance.now();
        const res = await fetch(`${server.baseUrl}/v1/goods/${server.accessKey}/sync`, {
          method: 'POST',
          headers: { authorization: server.auth, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const json = (await res.json()) as { results: Row[]; createCount: number; failCount: number };
        const seconds = (performance.now() - started) / 1000;
        const cpuMsPerImage = ((cpuSeconds(server.pid) - cpuBefore) * 1000) / COUNT;
        const loop = (await metrics(server)).eventLoopDelayMs;
        const probes = (await watcher.stop()).sort((a, b) => a - b);
        const rss = peakRssMb(server.pid);
        if (res.status !== 200) throw new Error(`sync failed: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
        const problems = verify(json.results, host);
        host.hits.fill(0);
        const rate = COUNT / seconds;
        const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');
        const pad = ' '.repeat(9);
        lines.push(
          [
            `${`${engine}:`.padEnd(9)}${COUNT} images in ${seconds.toFixed(2)} s = ${rate.toFixed(1)} images/s (target >= 40: ${mark(rate >= 40)})`,
            `${pad}peak RSS ${rss} MB (target < 400: ${mark(rss < 400)})`,
            `${pad}event loop since server start p99 ${loop.p99} ms (target < 50: ${mark(loop.p99 < 50)}), p50 ${loop.p50} ms, max ${loop.max} ms`,
            `${pad}list probe during the run: ${probes.length} requests, p50 ${pct(probes, 50).toFixed(1)} ms, p99 ${pct(probes, 99).toFixed(1)} ms, max ${(probes[probes.length - 1] ?? NaN).toFixed(1)} ms`,
            `${pad}server CPU ${cpuMsPerImage.toFixed(1)} ms per image (at most ${((availableParallelism() * 1000) / cpuMsPerImage).toFixed(0)} images/s on ${availableParallelism()} idle cores); load average before the run ${loadBefore}`,
            `${pad}rows: ${problems.length ? `WRONG, ${problems.length} problems` : `all ${COUNT} CREATE, message null, media 2000x2000 with 120/240/480 thumbnails, each image fetched once`}`,
          ].join('\n'),
        );
        console.log(lines[lines.length - 1]);
        for (const p of problems.slice(0, 10)) console.log(`  ${p}`);
        if (problems.length) failed = true;
      } finally {
        await server.stop();
      }
    }
  } finally {
    await host.close();
  }
  console.log('\nbench:media results (targets: >= 40 images/s, peak RSS < 400 MB, event-loop p99 < 50 ms)');
  for (const line of lines) console.log(line);
  if (failed) process.exit(1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
