/**
 * npm run bench:socket-floor — the floor under bench:fanout on this machine: a bare Node process (no
 * service, no Socket.IO, no WebSocket framing) writes one small buffer to each of N loopback TCP
 * connections, round after round, while another process (like bench:fanout's load generator) reads
 * them. Prints the sender's CPU per write (user and system), the wall time of a round, and the delay from
 * the start of a round to each connection's data arriving at the reader (p50, p99, max): what the fan-out
 * of one event to N viewers costs at the least on this kernel and these cores, whatever the server does.
 *
 * Options: --sockets=10000  --rounds=20  --bytes=200 (about a goods.salesStatus frame)  --gap=250 (ms)
 */
import { ChildProcess, fork } from 'node:child_process';
import { connect, createServer, Socket } from 'node:net';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SOCKETS = arg('sockets', 10_000);
const ROUNDS = arg('rounds', 20);
const BYTES = arg('bytes', 200);
const GAP_MS = arg('gap', 250);

/** The reader: opens the connections (500 at a time) and notes, per round, when each one's data arrived. */
async function reader(port: number): Promise<void> {
  const arrivals: bigint[][] = [];
  let round = 0;
  const open = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve());
      socket.once('error', reject);
      let seen = -1;
      socket.on('data', () => {
        if (seen === round) return;
        seen = round;
        (arrivals[round] ??= []).push(process.hrtime.bigint());
      });
    });
  for (let i = 0; i < SOCKETS; i += 500) await Promise.all(Array.from({ length: Math.min(500, SOCKETS - i) }, open));
  let cpuBefore: NodeJS.CpuUsage | undefined;
  process.on('message', (m: { round?: number; started?: string[] }) => {
    if (m.round !== undefined) round = m.round;
    cpuBefore ??= process.cpuUsage();
    if (m.started) {
      const delays: number[] = [];
      m.started.forEach((t, r) => {
        for (const at of arrivals[r] ?? []) delays.push(Number(at - BigInt(t)) / 1e6);
      });
      process.send?.({ delays, cpu: process.cpuUsage(cpuBefore) });
    }
  });
  process.send?.('ready');
}

async function sender(): Promise<void> {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    s.setNoDelay(true);
    sockets.push(s);
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  const port = (server.address() as { port: number }).port;
  const child: ChildProcess = fork(__filename, ['--role=reader', `--port=${port}`, ...process.argv.slice(2)], { execArgv: process.execArgv });
  const next = () => new Promise<unknown>((resolve) => child.once('message', resolve));
  await next();
  while (sockets.length < SOCKETS) await new Promise((r) => setTimeout(r, 10));
  const frame = Buffer.alloc(BYTES, 0x61);
  const started: string[] = [];
  let user = 0;
  let system = 0;
  let wall = 0;
  for (let r = 0; r < ROUNDS; r++) {
    child.send({ round: r });
    await new Promise((resolve) => setTimeout(resolve, GAP_MS));
    const cpu = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    started.push(String(t0));
    for (const s of sockets) s.write(frame);
    const used = process.cpuUsage(cpu);
    wall += Number(process.hrtime.bigint() - t0) / 1e6;
    user += used.user;
    system += used.system;
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  child.send({ started });
  const { delays, cpu } = (await next()) as { delays: number[]; cpu: NodeJS.CpuUsage };
  delays.sort((a, b) => a - b);
  const at = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
  const writes = SOCKETS * ROUNDS;
  console.log(`bench:socket-floor — ${SOCKETS} loopback connections × ${ROUNDS} rounds of ${BYTES} bytes, a bare sender and a bare reader on this machine`);
  console.log(
    `  sender CPU per write: user ${(user / writes).toFixed(2)} µs, system ${(system / writes).toFixed(2)} µs; wall time of a round ${(wall / ROUNDS).toFixed(1)} ms`,
  );
  console.log(`  reader CPU per delivery ${((cpu.user + cpu.system) / writes).toFixed(2)} µs`);
  console.log(
    `  delivered ${delays.length}/${writes}; from the start of a round to the data at the reader: p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${delays[delays.length - 1].toFixed(1)} ms`,
  );
  child.kill();
  for (const s of sockets) s.destroy();
  server.close();
}

if (process.argv.includes('--role=reader')) void reader(arg('port', 0));
else
  sender().catch((err) => {
    console.error(err);
    process.exit(1);
  });
