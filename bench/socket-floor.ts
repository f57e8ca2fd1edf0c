/**
 * npm run bench:socket-floor — the floor under bench:fanout on this machine: bare Node processes (no
 * service, no Socket.IO, no WebSocket framing) write one small buffer to each of their loopback TCP
 * connections, round after round, while reader processes (like bench:fanout's load generators, at most
 * --per-process connections each) read them. Prints the senders' CPU per write (user and system), the
 * wall time of a round, and the delay from the start of a round to each connection's data arriving at a
 * reader (p50, p99, max): what the fan-out of one event to N viewers costs at the least on this kernel
 * and these cores, whatever the server does.
 *
 * Runs the two shapes of bench:fanout: 10,000 connections on one sender, then 20,000 on two senders (a
 * round starts on both at once, as an event reaches both nodes of a cluster).
 * Options: --mode=single|cluster|both (default both)  --sockets=N (per run; default 10000 × senders)
 *          --rounds=20 (at most 255 with the warm-up)  --warm-up=1 (rounds sent first and left out of the figures,
 *          printed on a line of their own, as bench:fanout leaves out its first change)  --bytes=200 (about a goods.salesStatus frame)  --gap=250 (ms)  --per-process=10000
 *          --read=batch|wake  --read-every=1 (ms): how the readers take their reads, as in bench:fanout (bench/batched-reads.ts)
 */
import { ChildProcess, fork } from 'node:child_process';
import { connect, createServer, Socket } from 'node:net';
import { readModeFrom, readModeLine, startReading } from './batched-reads';

const text = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const arg = (name: string, fallback: number) => Number(text(name) ?? fallback);
const WARM_UP = Math.max(0, arg('warm-up', 1));
const ROUNDS = Math.min(arg('rounds', 20), 256 - WARM_UP);
/** Every round sent: the warm-up ones, then the measured ones (a frame's first byte is its round). */
const SENT = WARM_UP + ROUNDS;
const BYTES = arg('bytes', 200);
const GAP_MS = arg('gap', 250);
const PER_PROCESS = arg('per-process', 10_000);
/** How the readers take their reads (see batched-reads.ts): as bench:fanout's viewers do, with the same options. */
const READS = readModeFrom(process.argv);

/** The monotonic clock in ms (CLOCK_MONOTONIC: one clock for every process of the machine). */
const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

type Message = { port?: number; ready?: true; round?: number; cpu?: NodeJS.CpuUsage; wall?: number; delays?: number[][] };

/** A sender (--role=sender): accepts --sockets connections, then writes the frame to each of them on every `round`. */
function sender(): void {
  const count = arg('sockets', 0);
  const sockets: Socket[] = [];
  let user = 0;
  let system = 0;
  let wall = 0;
  const server = createServer((s) => {
    s.setNoDelay(true);
    sockets.push(s);
    if (sockets.length === count) process.send?.({ ready: true });
  });
  server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => process.send?.({ port: (server.address() as { port: number }).port }));
  process.on('message', (m: Message) => {
    if (m.round === undefined) {
      process.send?.({ cpu: { user, system }, wall });
      return;
    }
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const frame = Buffer.alloc(BYTES, 0x61);
    frame[0] = m.round;
    for (const s of sockets) s.write(frame);
    if (m.round < WARM_UP) return; // not measured
    wall += performance.now() - t0;
    const used = process.cpuUsage(cpu);
    user += used.user;
    system += used.system;
  });
}

/** Where a reader's connections' reads land, one after the other (see reader()). */
const READ_BUFFER = Buffer.alloc(256 * 1024);

/**
 * A reader (--role=reader): opens its share of connections to the senders (--ports, --sockets each,
 * 500 at a time) and notes when each one's data arrived in each round (the monotonic clock, shared by
 * the processes of one machine).
 */
async function reader(): Promise<void> {
  const ports = (text('ports') ?? '').split(',').map(Number);
  const each = arg('sockets', 0);
  const arrivals: number[][] = [];
  const open = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      // A frame's first byte is its round; a read may hold the end of one frame or several frames. Reads
      // land in one shared buffer (net's `onread`: no Buffer and no stream event per read), as
      // bench:fanout's viewers read theirs, so that the floor's readers cost no more than those viewers.
      let seen = -1;
      let offset = 0;
      const onRead = (length: number): boolean => {
        const at = monotonicMs();
        for (; offset < length; offset += BYTES) {
          const round = READ_BUFFER[offset];
          if (round !== seen) (arrivals[round] ??= []).push(at);
          seen = round;
        }
        offset -= length;
        return true;
      };
      const socket = connect({ port, host: '127.0.0.1', onread: { buffer: READ_BUFFER, callback: onRead } }, () => resolve());
      socket.once('error', reject);
    });
  for (const port of ports) {
    for (let i = 0; i < each; i += 500) await Promise.all(Array.from({ length: Math.min(500, each - i) }, () => open(port)));
  }
  // Connected: from here until the process ends, reads are taken as --read says.
  startReading(READS.mode, READS.everyMs);
  let cpuBefore: NodeJS.CpuUsage | undefined;
  process.on('message', (m: Message & { started?: number[] }) => {
    cpuBefore ??= process.cpuUsage();
    if (m.started) {
      const delays = m.started.map((t, r) => (arrivals[r] ?? []).map((at) => at - t));
      process.send?.({ delays, cpu: process.cpuUsage(cpuBefore) });
    }
  });
  process.send?.({ ready: true });
}

const child = (role: string, extra: string[]): ChildProcess =>
  fork(__filename, [`--role=${role}`, ...extra, ...process.argv.slice(2).filter((a) => !/^--(role|sockets|ports)=/.test(a))], {
    execArgv: process.execArgv,
  });
const reply = (c: ChildProcess, want: (m: Message) => boolean) =>
  new Promise<Message>((resolve, reject) => {
    const on = (m: Message) => {
      if (!want(m)) return;
      c.off('message', on);
      resolve(m);
    };
    c.on('message', on);
    c.once('exit', (code) => reject(new Error(`a ${c.spawnargs.join(' ')} process exited (${code})`)));
  });

async function run(senderCount: number): Promise<void> {
  const total = arg('sockets', 10_000 * senderCount);
  const perSender = Math.floor(total / senderCount);
  const senders = Array.from({ length: senderCount }, () => child('sender', [`--sockets=${perSender}`]));
  const ports = (await Promise.all(senders.map((s) => reply(s, (m) => m.port !== undefined)))).map((m) => m.port as number);
  const sendersReady = senders.map((s) => reply(s, (m) => m.ready === true));
  // Each reader takes the same share of every sender's connections, so that no reader holds more than --per-process.
  const readerCount = Math.max(1, Math.ceil(total / PER_PROCESS));
  const readers = Array.from({ length: readerCount }, () =>
    child('reader', [`--ports=${ports.join(',')}`, `--sockets=${Math.floor(perSender / readerCount)}`]),
  );
  await Promise.all(readers.map((r) => reply(r, (m) => m.ready === true)));
  await Promise.all(sendersReady);
  const connections = Math.floor(perSender / readerCount) * readerCount * senderCount;
  const started: number[] = [];
  for (let r = 0; r < SENT; r++) {
    await new Promise((resolve) => setTimeout(resolve, GAP_MS));
    if (r === WARM_UP) for (const c of readers) c.send({}); // their CPU is counted from here
    // The readers' clock starts counting from here; the senders get the round over IPC (as a cluster's
    // second node gets an event over Redis).
    started.push(monotonicMs());
    for (const s of senders) s.send({ round: r });
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const sent = await Promise.all(senders.map((s) => (s.send({}), reply(s, (m) => m.cpu !== undefined))));
  const read = await Promise.all(readers.map((c) => (c.send({ started }), reply(c, (m) => m.delays !== undefined))));
  const byRound = (from: number, to: number) => read.flatMap((m) => (m.delays as number[][]).slice(from, to).flat()).sort((a, b) => a - b);
  const delays = byRound(WARM_UP, SENT);
  const warmUp = byRound(0, WARM_UP);
  const at = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
  const writes = connections * ROUNDS;
  const user = sent.reduce((s, m) => s + (m.cpu as NodeJS.CpuUsage).user, 0);
  const system = sent.reduce((s, m) => s + (m.cpu as NodeJS.CpuUsage).system, 0);
  const readerCpu = read.reduce((s, m) => s + (m.cpu as NodeJS.CpuUsage).user + (m.cpu as NodeJS.CpuUsage).system, 0);
  const wall = sent.map((m) => ((m.wall as number) / ROUNDS).toFixed(1));
  console.log(
    `bench:socket-floor — ${connections} loopback connections on ${senderCount} sender${senderCount > 1 ? 's' : ''} × ${ROUNDS} rounds of ${BYTES} bytes${WARM_UP ? ` after ${WARM_UP} warm-up` : ''}, read by ${readerCount} reader${readerCount > 1 ? 's' : ''}, on this machine`,
  );
  console.log(`  ${readModeLine(READS.mode, READS.everyMs)}`);
  console.log(
    `  sender CPU per write: user ${(user / writes).toFixed(2)} µs, system ${(system / writes).toFixed(2)} µs; wall time of a round ${wall.join(' / ')} ms`,
  );
  console.log(`  reader CPU per delivery ${(readerCpu / writes).toFixed(2)} µs`);
  console.log(
    `  delivered ${delays.length}/${writes}; from the start of a round to the data at a reader: p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${delays[delays.length - 1].toFixed(1)} ms`,
  );
  if (WARM_UP) {
    console.log(
      `  warm-up, left out of the figures: ${WARM_UP} round${WARM_UP > 1 ? 's' : ''} first, ${warmUp.length}/${connections * WARM_UP} delivered, ` +
        `p50 ${warmUp[Math.floor(warmUp.length / 2)]?.toFixed(1)} ms, max ${warmUp[warmUp.length - 1]?.toFixed(1)} ms`,
    );
  }
  for (const c of [...readers, ...senders]) c.kill();
}

async function main(): Promise<void> {
  const mode = text('mode') ?? 'both';
  if (mode === 'single' || mode === 'both') await run(1);
  if (mode === 'cluster' || mode === 'both') await run(2);
}

const role = text('role');
if (role === 'sender') sender();
else if (role === 'reader') void reader();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
