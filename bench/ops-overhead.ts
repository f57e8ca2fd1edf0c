/**
 * npm run bench:ops -- --before=<dir>: the server CPU one request costs, this build against another
 * (a checkout of an earlier commit, built: <dir>/dist/main.js), on GET /v1/goods/{accessKey}?count=1
 * (SQLite, rate limits off). Servers run side by side and take the load in turns (round robin, several
 * rounds), so that a busy machine weighs on each alike; CPU is read from /proc/<pid>/stat around each run.
 * Variants of this build: access log on (LOG_LEVEL=log, JSON to a file) and off (LOG_LEVEL=warn).
 * Options: --before=<dir> (required; several comma-separated dirs: each is measured as `before:<dir>`)
 *          --rounds=8  --duration=5  --connections=10  --variants=on,off (which variants of this build)
 */
import { execFileSync, spawn, ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { sign } from 'jsonwebtoken';

const arg = (name: string, fallback?: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const BEFORE = arg('before');
const ROUNDS = Number(arg('rounds', '8'));
const DURATION = Number(arg('duration', '5'));
const CONNECTIONS = Number(arg('connections', '10'));
const AFTER = resolve(__dirname, '..');
const TICK_MS = 1000 / 100; // USER_HZ

interface Server {
  name: string;
  child: ChildProcess;
  url: string;
  auth: string;
  dataDir: string;
  cpuMs: number;
  requests: number;
}

function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

async function start(name: string, dir: string, port: number, env: Record<string, string>): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), `livegoods-ops-${name.replace(/[^A-Za-z0-9]+/g, '-')}-`));
  const fullEnv = { ...(process.env as Record<string, string>), DATA_DIR: dataDir, DB_TYPE: 'sqlite', RATE_LIMIT_ENABLED: 'false', PORT: String(port), ...env };
  const created = execFileSync(process.execPath, [join(dir, 'dist/cli/admin.js'), 'customer', 'create', '--name', 'Bench'], { env: fullEnv, encoding: 'utf8' });
  const customer = JSON.parse(created.trim().split('\n').pop() as string) as { accessKey: string; secretKey: string };
  const auth = `Bearer ${sign({ accessKey: customer.accessKey }, Buffer.from(customer.secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 3600 })}`;
  const log = openSync(join(dataDir, 'server.log'), 'a');
  const child = spawn(process.execPath, [join(dir, 'dist/main.js')], { env: fullEnv, stdio: ['ignore', log, log] });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i += 1) {
    try {
      if ((await fetch(`${base}/health/ready`)).ok) break;
    } catch {
      /* not yet */
    }
    if (i > 300) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const body = Array.from({ length: 30 }, (_, i) => ({
    name: `Item ${i}`,
    sku: `OPS-${i}`,
    url: `https://shop.example.com/ops/${i}`,
    originalPrice: 1000 + i,
  }));
  const seeded = await fetch(`${base}/v1/goods/${customer.accessKey}/sync`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (seeded.status !== 200) throw new Error(`${name}: seeding failed (HTTP ${seeded.status})`);
  return { name, child, url: `${base}/v1/goods/${customer.accessKey}?count=1`, auth, dataDir, cpuMs: 0, requests: 0 };
}

async function load(server: Server, seconds: number, count: boolean): Promise<void> {
  const pid = server.child.pid as number;
  const before = cpuMsOf(pid);
  const result = await autocannon({ url: server.url, headers: { authorization: server.auth }, connections: CONNECTIONS, duration: seconds });
  if (result.non2xx || result.errors) throw new Error(`${server.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  if (!count) return;
  server.cpuMs += cpuMsOf(pid) - before;
  server.requests += result.requests.total;
}

async function main(): Promise<void> {
  if (!BEFORE) throw new Error('--before=<dir of a built checkout> is required');
  const befores = BEFORE.split(',');
  const variants = (arg('variants', 'on,off') as string).split(',');
  const servers: Server[] = [];
  let port = 3941;
  for (const dir of befores) servers.push(await start(befores.length > 1 ? `before:${dir}` : 'before', resolve(dir), port++, { LOG_LEVEL: 'log' }));
  if (variants.includes('on')) servers.push(await start('after (access log on, JSON)', AFTER, port++, { LOG_LEVEL: 'log', LOG_FORMAT: 'json' }));
  if (variants.includes('off')) servers.push(await start('after (access log off)', AFTER, port++, { LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }));
  try {
    for (const s of servers) await load(s, 3, false); // warm-up (JIT, caches)
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const s of servers) await load(s, DURATION, true);
      console.log(`round ${round}/${ROUNDS} done`);
    }
    const base = servers[0].cpuMs / servers[0].requests;
    for (const s of servers) {
      const perRequest = s.cpuMs / s.requests;
      const delta =
        s === servers[0]
          ? ''
          : `  (${perRequest >= base ? '+' : ''}${(((perRequest - base) / base) * 100).toFixed(1)} %, ${((perRequest - base) * 1000).toFixed(1)} µs)`;
      console.log(
        `${s.name.padEnd(30)} ${(perRequest * 1000).toFixed(1).padStart(7)} µs CPU/request   ${(s.requests / (ROUNDS * DURATION)).toFixed(0).padStart(6)} req/s${delta}`,
      );
    }
  } finally {
    for (const s of servers) {
      s.child.kill('SIGKILL');
      rmSync(s.dataDir, { recursive: true, force: true });
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
