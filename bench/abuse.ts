/**
 * npm run bench:abuse — sends the hostile inputs of the attack report to the real server (built, own
 * process) while a probe calls GET /health every 50 ms, and prints, per payload, its answer and how
 * long it took, the probe's worst latency and the server's longest event-loop stall while it ran, the server's peak RSS so far, and at the end the probe's max latency overall
 * (goal < 250 ms) and the server's peak RSS.
 * Payloads: bodies built to freeze validation (15 MB of nested arrays, a deep nesting, strings dense in
 * escapes or tiny, 30 MB without a token, compressed bombs), resync floods on the viewer channel (a reading socket, and one that never
 * reads), CSV uploads of blank rows (18 MB of ",," lines, 19 MB of newlines), spreadsheets whose reading cost
 * was out of proportion to their size (deeply nested XML, cells in column XFD, rows of empty cells, CSV
 * records of a million cells, four such uploads at once beside another customer's), and inputs that regular
 * expressions of quadratic time took seconds over (an .xlsx of unclosed relationship tags, prices of
 * blanks or of 200,000 digits, a request path that the log's credential redaction scanned), and the
 * console's answers about a campaign at the caps (1,000 goods of 30 KB descriptions: about 30 MB each),
 * and slow clients: twice 20 that ask for that console list and stop reading (the server's RSS, and how
 * many connections it still holds after 2 × SEND_TIMEOUT_MS), and 200 requests without a token whose
 * body comes a byte a second (how many are still open 10 s on).
 * Options: --engines=sqlite,mysql (default sqlite); --only=<text>: only the payloads whose name holds it.
 */
import { readFileSync } from 'node:fs';
import { connect, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import JSZip from 'jszip';
import { RawViewer } from '../test/support/raw-viewer';
import { streamedXlsx } from '../test/support/sheet-fixtures';
import { BenchServer, createCustomer, Engine, goodsElement, peakRssMb, startServer } from './support';

const ENGINES = (process.argv
  .find((a) => a.startsWith('--engines='))
  ?.slice('--engines='.length)
  .split(',') ?? ['sqlite']) as Engine[];

const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);

// The slow-client payloads wait for the server to cut what it holds for clients that stopped reading:
// a shorter SEND_TIMEOUT_MS than the default 60 s keeps the bench short.
process.env.SEND_TIMEOUT_MS ??= '5000';
const SEND_TIMEOUT_MS = Number(process.env.SEND_TIMEOUT_MS);

interface Probe {
  samples: number[];
  failures: number;
  /** The server being probed. */
  server: BenchServer;
  stop(): void;
}

/** Calls the server's GET /health every 50 ms (one at a time) and records each answer's latency. */
function probe(server: BenchServer): Probe {
  const base = server.baseUrl;
  const samples: number[] = [];
  let failures = 0;
  let stopped = false;
  const loop = async () => {
    while (!stopped) {
      const started = performance.now();
      try {
        const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(30_000) });
        await res.arrayBuffer();
        if (!res.ok) failures += 1;
      } catch {
        failures += 1;
      }
      samples.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  void loop();
  return {
    samples,
    server,
    get failures() {
      return failures;
    },
    stop: () => (stopped = true),
  };
}

interface Outcome {
  name: string;
  answer: string;
  ms: number;
  probeMaxMs: number;
  /** The server's longest event-loop stall meanwhile (its loop probe). */
  stallMs: number;
  /** The server's peak RSS so far, in MB. */
  peakRssMb: number;
}

async function measure(p: Probe, name: string, work: () => Promise<string>): Promise<Outcome> {
  if (ONLY && !name.includes(ONLY)) return { name, answer: 'skipped', ms: 0, probeMaxMs: 0, stallMs: 0, peakRssMb: 0 };
  await p.server.loopStallMs(); // starts a new window
  const from = p.samples.length;
  const started = performance.now();
  let answer: string;
  try {
    answer = await work();
  } catch (err) {
    answer = `error: ${err instanceof Error ? err.message : String(err)}`;
  }
  const ms = performance.now() - started;
  await new Promise((r) => setTimeout(r, 150)); // the probe's next sample covers the tail of the work
  const window = p.samples.slice(from);
  return { name, answer, ms, probeMaxMs: window.length ? Math.max(...window) : NaN, stallMs: await p.server.loopStallMs(), peakRssMb: peakRssMb(p.server.pid) };
}

async function post(base: string, path: string, body: Buffer | string, headers: Record<string, string>): Promise<string> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers, body });
  const text = await res.text();
  let code = '';
  try {
    code = ` ${(JSON.parse(text) as { _s?: number })._s ?? ''}`;
  } catch {
    /* not JSON */
  }
  return `${res.status}${code}`;
}

function manyArrays(bytes: number): string {
  return `{"name":[${new Array(Math.floor(bytes / 3)).fill('[]').join(',')}]}`;
}

async function run(engine: Engine): Promise<void> {
  const server: BenchServer = await startServer(engine, engine === 'sqlite' ? 3601 : 3602, 'abuse', { loopProbe: true });
  const { baseUrl: base, accessKey, auth } = server;
  const json = { authorization: auth, 'content-type': 'application/json' };
  let other: { accessKey: string; auth: string } | undefined;
  try {
    // A campaign with 499 logged events (chat lines), for the resync floods.
    const created = await fetch(`${base}/v1/console/${accessKey}/campaigns`, { method: 'POST', headers: json, body: JSON.stringify({ title: 'Abused' }) });
    const { campaignKey } = (await created.json()) as { campaignKey: string };
    for (let i = 0; i < 499; i += 1) {
      await fetch(`${base}/v1/console/${accessKey}/campaigns/${campaignKey}/chat`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ message: `line ${i} ${'x'.repeat(60)}` }),
      });
    }
    const rssBefore = peakRssMb(server.pid);
    const p = probe(server);
    await new Promise((r) => setTimeout(r, 500));
    const outcomes: Outcome[] = [];
    const goods = `/v1/goods/${accessKey}`;
    const csv = (bytes: Buffer) => {
      const form = new FormData();
      form.append('file', new Blob([bytes], { type: 'text/csv' }), 'goods.csv');
      return form;
    };

    outcomes.push(await measure(p, 'POST goods, 15 MB {"name":[[],[],…]}', () => post(base, goods, manyArrays(15 * 1024 * 1024), json)));
    outcomes.push(await measure(p, 'POST sync, 15 MB {"name":[[],[],…]}', () => post(base, `${goods}/sync`, `[${manyArrays(15 * 1024 * 1024)}]`, json)));
    outcomes.push(
      await measure(p, 'POST sync, 8 MB array nested 4M deep', () => post(base, `${goods}/sync`, `${'['.repeat(4_000_000)}${']'.repeat(4_000_000)}`, json)),
    );
    // Strings the text scan cannot skip with one search: one of 4M escapes, and 2M strings of one character.
    outcomes.push(await measure(p, 'POST sync, 8 MB string of 4M escapes', () => post(base, `${goods}/sync`, `[{"name":"${'\\n'.repeat(4_000_000)}"}]`, json)));
    outcomes.push(
      await measure(p, 'POST sync, 8 MB of 2M one-character strings', () =>
        post(base, `${goods}/sync`, `[${new Array(2_000_000).fill('"a"').join(',')}]`, json),
      ),
    );
    outcomes.push(await measure(p, 'POST goods, object nested 5,000 deep', () => post(base, goods, `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`, json)));
    outcomes.push(
      await measure(p, 'POST sync, 30 MB without a token', () =>
        post(base, `${goods}/sync`, manyArrays(30 * 1024 * 1024), { 'content-type': 'application/json' }),
      ),
    );
    outcomes.push(
      await measure(p, 'POST /nowhere, 30 MB without a token', () =>
        post(base, '/nowhere', manyArrays(30 * 1024 * 1024), { 'content-type': 'application/json' }),
      ),
    );
    outcomes.push(
      await measure(p, 'POST goods, malformed gzip body', () => post(base, goods, Buffer.from('not gzip at all'), { ...json, 'content-encoding': 'gzip' })),
    );
    outcomes.push(
      await measure(p, 'POST sync, gzip bomb (200 MB inflated)', () =>
        post(base, `${goods}/sync`, gzipSync(Buffer.alloc(200 * 1024 * 1024, 0x20)), { ...json, 'content-encoding': 'gzip' }),
      ),
    );
    outcomes.push(
      await measure(p, 'viewer: 500 × resync {sinceSeq:0}', async () => {
        const raw = await RawViewer.connect(base, { accessKey, campaignKey });
        for (let i = 0; i < 500; i += 1) raw.emit('resync', { sinceSeq: 0 });
        const until = Date.now() + 10_000;
        while (!raw.closed && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        raw.close();
        return `${raw.closed ? 'dropped by the server' : 'still open'} after ${raw.events.length} events (${Math.round(raw.bytesReceived / 1024)} KB)`;
      }),
    );
    outcomes.push(
      await measure(p, 'viewer never reading: 2,000 × resync', async () => {
        const raw = await RawViewer.connect(base, { accessKey, campaignKey });
        raw.pause();
        for (let i = 0; i < 2000; i += 1) raw.emit('resync', { sinceSeq: 0 });
        await new Promise((r) => setTimeout(r, 3000));
        const res = await fetch(`${base}/v1/campaigns/${accessKey}/${campaignKey}`);
        const { userCount } = (await res.json()) as { userCount: number };
        raw.close();
        return `viewers left on the campaign: ${userCount}`;
      }),
    );
    outcomes.push(
      await measure(p, 'POST excel, 18 MB of ",," lines', async () => {
        const res = await fetch(`${base}${goods}/excel`, {
          method: 'POST',
          headers: { authorization: auth },
          body: csv(Buffer.from('sku,url,name\n' + ',,\n'.repeat(6 * 1024 * 1024))),
        });
        return `${res.status} ${(JSON.parse(await res.text()) as { _s: number })._s}`;
      }),
    );
    outcomes.push(
      await measure(p, 'POST excel, 19 MB of newlines', async () => {
        const res = await fetch(`${base}${goods}/excel`, {
          method: 'POST',
          headers: { authorization: auth },
          body: csv(Buffer.from('sku,url,name\n' + '\n'.repeat(19 * 1024 * 1024))),
        });
        return `${res.status} ${(JSON.parse(await res.text()) as { _s: number })._s}`;
      }),
    );

    // Inputs that regular expressions of quadratic time took seconds over (now read in linear time).
    const upload = async (body: FormData) => {
      const res = await fetch(`${base}${goods}/excel`, { method: 'POST', headers: { authorization: auth }, body });
      return `${res.status} ${(JSON.parse(await res.text()) as { _s: number })._s}`;
    };

    // Spreadsheets whose cost on the synchronous import was out of proportion to their size: a row of
    // 10,000,000 nested unknown elements (70 KB), 10,000 rows with a cell in column XFD (110 KB), 2,000
    // rows of 16,000 empty cells (210 KB), CSV records of 1,000,000 empty cells (19 MB), and four of
    // the 10,000-row files from one customer at once while another customer sends a one-row file.
    const sheetFile = async (name: string, bytes: Uint8Array) => {
      const form = new FormData();
      form.append('file', new Blob([bytes], { type: name.endsWith('.csv') ? 'text/csv' : XLSX_TYPE }), name);
      return upload(form);
    };
    outcomes.push(
      await measure(p, 'POST excel, 70 KB .xlsx of a row of 10,000,000 nested elements', async () =>
        sheetFile('deep.xlsx', await hostileXlsx(`<row r="2">${'<x>'.repeat(10_000_000)}${'</x>'.repeat(10_000_000)}</row>`)),
      ),
    );
    const farColumn = await hostileXlsx(
      Array.from(
        { length: 10_000 },
        (_, k) => `<row r="${k + 2}"><c r="A${k + 2}" t="inlineStr"><is><t>sku${k}</t></is></c><c r="XFD${k + 2}"><v>1</v></c></row>`,
      ).join(''),
    );
    outcomes.push(await measure(p, 'POST excel, 110 KB .xlsx of 10,000 rows with a cell in XFD', () => sheetFile('farcol.xlsx', farColumn)));
    outcomes.push(
      await measure(p, 'POST excel, 210 KB .xlsx of 2,000 rows × 16,000 empty cells', async () =>
        sheetFile(
          'wide.xlsx',
          await hostileXlsx(
            Array.from(
              { length: 2_000 },
              (_, k) => `<row r="${k + 2}"><c r="A${k + 2}" t="inlineStr"><is><t>W${k}</t></is></c>${'<c/>'.repeat(16_000)}</row>`,
            ).join(''),
          ),
        ),
      ),
    );
    outcomes.push(
      await measure(p, 'POST excel, 19 MB CSV of 19 records × 1,000,000 empty cells', () =>
        sheetFile('wide.csv', Buffer.from('sku,name\n' + `${','.repeat(1_000_000)}\n`.repeat(19))),
      ),
    );
    outcomes.push(
      await measure(p, "POST excel, 4 × the XFD .xlsx at once; another customer's one-row file meanwhile", async () => {
        if (!other) other = await createCustomer(server.env, 'Other');
        const form = new FormData();
        form.append('file', new Blob([await minimalXlsx()], { type: XLSX_TYPE }), 'small.xlsx');
        const four = Array.from({ length: 4 }, () => sheetFile('farcol.xlsx', farColumn));
        await new Promise((r) => setTimeout(r, 200));
        const started = performance.now();
        const res = await fetch(`${base}/v1/goods/${other.accessKey}/excel`, { method: 'POST', headers: { authorization: other.auth }, body: form });
        const small = `${res.status} ${(JSON.parse(await res.text()) as { _s?: number })._s ?? ''} after ${Math.round(performance.now() - started)} ms`;
        return `the other's: ${small}; the four: ${(await Promise.all(four)).join(', ')}`;
      }),
    );
    outcomes.push(
      await measure(p, 'POST excel, 2 KB .xlsx whose workbook rels are 600 KB of "<Relationship "', async () => {
        const zip = await JSZip.loadAsync(await minimalXlsx());
        zip.file('xl/_rels/workbook.xml.rels', '<Relationship '.repeat(43_000));
        const form = new FormData();
        const bytes = await zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE' });
        form.append('file', new Blob([bytes], { type: XLSX_TYPE }), 'goods.xlsx');
        return upload(form);
      }),
    );
    outcomes.push(
      await measure(p, 'POST excel, CSV of 100 prices of 30,000 blanks each', () =>
        upload(
          csv(
            Buffer.from(
              'sku,url,name,originalPrice\n' + Array.from({ length: 100 }, (_, i) => `s${i},https://x.example/${i},n,1${' '.repeat(30_000)}x\n`).join(''),
            ),
          ),
        ),
      ),
    );
    // Shared strings made of rich-text runs: exceljs keeps each run as an object with its font.
    outcomes.push(
      await measure(p, 'POST excel, 480 KB .xlsx of 4,500 shared strings × 1,400 rich-text runs', async () =>
        sheetFile('runs.xlsx', await richStringsXlsx(4_500, 1_400, '<r><rPr><b/></rPr><t>a</t></r>')),
      ),
    );
    outcomes.push(
      await measure(p, 'POST excel, 480 KB .xlsx of one shared string of 9,000,000 empty runs', async () =>
        sheetFile('oneruns.xlsx', await richStringsXlsx(1, 9_000_000, '<r><rPr><b/></rPr></r>')),
      ),
    );
    outcomes.push(
      await measure(p, 'POST goods, a price of 200,000 digits and a letter', () =>
        post(base, goods, JSON.stringify({ name: 'n', sku: 's', url: 'https://x.example/1', originalPrice: `${'1'.repeat(200_000)}x` }), json),
      ),
    );
    // One element as big as a whole sync body, or a body that is not an array, or one long number: each
    // was parsed (and walked) in one go, the event loop held 0.6-6 s (attack audit); refused while scanned.
    const M = 1024 * 1024;
    const syncBodies: Array<[string, () => string]> = [
      ['sync, 12 MB: one element of 999,000 keys', () => `[{${Array.from({ length: 999_000 }, (_, i) => `"k${i}":0`).join(',')}}]`],
      ['sync, 27 MB: one element of 999,980 strings', () => `[{"a":[${new Array(999_980).fill('"xxxxxxxxxxxxxxxxxxxxxxxx"').join(',')}]}]`],
      ['sync, 29 MB: an object of 999,990 long numbers', () => `{"a":[${new Array(999_990).fill('1234567890123456789012345678').join(',')}]}`],
      ['sync, 31 MB: one number of 31 MB of digits', () => `[${'1'.repeat(31 * M)}]`],
      ['sync, 31 MB: an object of one string of escapes', () => `{"a":"${'\\u0041'.repeat(Math.floor((31 * M) / 6))}"}`],
    ];
    for (const [name, body] of syncBodies) outcomes.push(await measure(p, `POST ${name}`, () => post(base, `${goods}/sync`, body(), json)));
    outcomes.push(
      await measure(p, 'GET a 14 KB unknown path of "A+A+…0//@" (logged)', async () => {
        const res = await fetch(`${base}/${'A+'.repeat(7_000)}0//@`);
        return `${res.status} ${(JSON.parse(await res.text()) as { _s: number })._s}`;
      }),
    );

    // A campaign at the caps: 1,000 goods with 10,000-character descriptions of Hangul (about 30 MB of
    // goods text). Every console answer about its goods carries them all.
    const big =
      !ONLY || ['console', 'public', 'slow'].some((name) => ONLY.includes(name)) ? await bigCampaign(base, accessKey, json) : { campaignKey: '', goodsIds: [] };
    const sized = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}/v1/console/${accessKey}/campaigns/${big.campaignKey}${path}`, {
        method,
        headers: json,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const bytes = (await res.arrayBuffer()).byteLength;
      return `${res.status}, ${(bytes / 1024 / 1024).toFixed(1)} MB`;
    };
    outcomes.push(
      await measure(p, 'console: PUT showing, campaign of 1,000 goods × 30 KB', () =>
        sized('PUT', `/goods/${big.goodsIds[500]}/showing`, { showingNow: true }),
      ),
    );
    outcomes.push(await measure(p, 'console: GET its goods', () => sized('GET', '/goods')));
    outcomes.push(await measure(p, 'console: GET the campaign with its goods', () => sized('GET', '')));
    outcomes.push(
      await measure(p, 'console: PUT goods/order, 1,000 ids reversed', () => sized('PUT', '/goods/order', { goodsIds: [...big.goodsIds].reverse() })),
    );
    outcomes.push(await measure(p, 'console: DELETE one of its goods', () => sized('DELETE', `/goods/${big.goodsIds[0]}`)));

    // Clients that stop reading, and bodies sent a byte at a time.
    outcomes.push(
      await measure(p, 'slow clients: twice 20 ask for the console goods list (29 MB) and stop reading', () =>
        unreadAnswers(server, `/v1/console/${accessKey}/campaigns/${big.campaignKey}/goods`, auth, 20),
      ),
    );
    outcomes.push(await measure(p, 'slow clients: 200 bodies sent a byte a second without a token', () => trickledBodies(server, goods, 200)));

    // The public list with goods at its largest kept size: 40 listed campaigns of 999 goods (about 14 MB).
    if (!ONLY || ONLY.includes('public')) await listedCampaigns(base, accessKey, json, big.goodsIds.slice(1), 40);
    const publicList = async () => {
      const res = await fetch(`${base}/v1/campaigns/${accessKey}?detail=true&count=40`);
      const bytes = (await res.arrayBuffer()).byteLength;
      return `${res.status}, ${(bytes / 1024 / 1024).toFixed(1)} MB`;
    };
    outcomes.push(await measure(p, 'public: GET detail=true&count=40, 40 campaigns × 999 goods, built', publicList));
    outcomes.push(await measure(p, 'public: the same, kept', publicList));
    outcomes.push(
      await measure(p, 'public: the same, kept, 5 at once', async () => (await Promise.all(Array.from({ length: 5 }, () => publicList()))).join('; ')),
    );

    p.stop();
    const max = Math.max(...p.samples);
    console.log(`\n[${engine}] payload | answer | time | worst /health latency meanwhile | longest event-loop stall meanwhile | server's peak RSS so far`);
    for (const o of outcomes.filter((x) => x.answer !== 'skipped')) {
      console.log(`  ${o.name} | ${o.answer} | ${Math.round(o.ms)} ms | ${Math.round(o.probeMaxMs)} ms | ${Math.round(o.stallMs)} ms | ${o.peakRssMb} MB`);
    }
    console.log(`[${engine}] /health probe: ${p.samples.length} calls, ${p.failures} failed, max latency ${Math.round(max)} ms (goal < 250 ms)`);
    console.log(`[${engine}] server peak RSS: ${peakRssMb(server.pid)} MB (${rssBefore} MB before the payloads)`);
  } finally {
    await server.stop();
  }
}

/** The server's resident set now, in MB. */
function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : NaN;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Raw connections to the server, each sending `head` once connected. */
async function rawConnections(server: BenchServer, n: number, head: string): Promise<Array<{ socket: Socket; bytes: number; closed: boolean }>> {
  const { hostname, port } = new URL(server.baseUrl);
  return Promise.all(
    Array.from({ length: n }, async () => {
      const socket = connect({ host: hostname, port: Number(port) });
      const conn = { socket, bytes: 0, closed: false };
      socket.on('data', (d: Buffer) => (conn.bytes += d.length));
      socket.on('error', () => undefined);
      socket.once('close', () => (conn.closed = true));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(head);
      return conn;
    }),
  );
}

/**
 * Two rounds of `n` clients that ask for `path` and stop reading after its first bytes, and stay
 * connected. Prints the server's RSS once every answer of a round has started, and after both rounds
 * (2 × SEND_TIMEOUT_MS + 3 s each: Node checks the clock a second time when a write was still being
 * taken at the first expiry) how many of these connections the server still holds open: once read again,
 * a cut one ends within a second, one still served goes on.
 */
async function unreadAnswers(server: BenchServer, path: string, auth: string, n: number): Promise<string> {
  const all: Array<{ socket: Socket; bytes: number; closed: boolean }> = [];
  const rss: number[] = [];
  for (let round = 0; round < 2; round += 1) {
    const conns = await rawConnections(server, n, `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n\r\n`);
    all.push(...conns);
    for (const c of conns) c.socket.once('data', () => c.socket.pause());
    // Every answer has started (each is built whole before its first byte), and the buffers have filled.
    for (const end = Date.now() + 120_000; Date.now() < end && conns.some((c) => c.bytes === 0);) await sleep(100);
    await sleep(1000);
    rss.push(rssMb(server.pid));
    await sleep(2 * SEND_TIMEOUT_MS + 3000);
  }
  // Reading again: a connection the server cut ends once what was in flight is read; one it still serves
  // goes on with its answer.
  for (const c of all) c.socket.resume();
  await sleep(1000);
  const held = all.filter((c) => !c.closed).length;
  for (const c of all) c.socket.destroy();
  return `RSS ${rss[0]} MB with ${n} waiting, ${rss[1]} MB with ${n} more; ${held} of ${2 * n} connections still held`;
}

/** `n` requests without a token whose 1 MB body comes a byte a second: answered at once, then how long held. */
async function trickledBodies(server: BenchServer, path: string, n: number): Promise<string> {
  const conns = await rawConnections(server, n, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`);
  const timer = setInterval(() => {
    for (const c of conns) if (!c.closed) c.socket.write('a');
  }, 1000);
  await sleep(1000);
  const answered = conns.filter((c) => c.bytes > 0).length;
  await sleep(9000);
  const open = conns.filter((c) => !c.closed).length;
  clearInterval(timer);
  for (const c of conns) c.socket.destroy();
  return `${answered} of ${n} answered within 1 s; 10 s on, ${open} still open`;
}

/** A campaign holding 1,000 goods whose descriptions are 10,000 Hangul characters (30 KB of UTF-8) each. */
async function bigCampaign(base: string, accessKey: string, json: Record<string, string>): Promise<{ campaignKey: string; goodsIds: number[] }> {
  const goodsIds: number[] = [];
  for (let from = 0; from < 1000; from += 100) {
    const elements = Array.from({ length: 100 }, (_, k) => ({ ...goodsElement(900_000 + from + k), description: '가나다라마바사아자차'.repeat(1000) }));
    const res = await fetch(`${base}/v1/goods/${accessKey}/sync`, { method: 'POST', headers: json, body: JSON.stringify(elements) });
    const { results } = (await res.json()) as { results: Array<{ id: number }> };
    goodsIds.push(...results.map((r) => r.id));
  }
  const created = await fetch(`${base}/v1/console/${accessKey}/campaigns`, { method: 'POST', headers: json, body: JSON.stringify({ title: 'At the caps' }) });
  const { campaignKey } = (await created.json()) as { campaignKey: string };
  const added = await fetch(`${base}/v1/console/${accessKey}/campaigns/${campaignKey}/goods`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ goodsIds }),
  });
  if (added.status !== 200) throw new Error(`adding 1,000 goods answered ${added.status}`);
  await added.arrayBuffer();
  return { campaignKey, goodsIds };
}

/** `n` publicly listed campaigns, each holding these goods. */
async function listedCampaigns(base: string, accessKey: string, json: Record<string, string>, goodsIds: number[], n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) {
    const created = await fetch(`${base}/v1/console/${accessKey}/campaigns`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ title: `Listed ${i}`, collectionVisible: true, scheduledAt: Date.now() + (i + 1) * 3_600_000 }),
    });
    const { campaignKey } = (await created.json()) as { campaignKey: string };
    const added = await fetch(`${base}/v1/console/${accessKey}/campaigns/${campaignKey}/goods`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ goodsIds }),
    });
    if (added.status !== 200) throw new Error(`adding goods answered ${added.status}`);
    await added.arrayBuffer(); // (a body left unread holds the server's answer in its buffers)
  }
}

const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/** A one-sheet .xlsx of a header and one row, as exceljs writes it. */
async function minimalXlsx(): Promise<Buffer> {
  const { Workbook } = await import('exceljs');
  const workbook = new Workbook();
  workbook.addWorksheet('Goods').addRows([
    ['sku', 'url', 'name'],
    ['s1', 'https://x.example/1', 'n'],
  ]);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

/** A one-sheet .xlsx of a header (sku, name) and the given XML of further rows, written as Excel would not. */
async function hostileXlsx(rowsXml: string): Promise<Uint8Array> {
  const zip = await JSZip.loadAsync(await minimalXlsx());
  const path = Object.keys(zip.files).find((name) => /^xl\/worksheets\/sheet\d+\.xml$/.test(name)) as string;
  const head = '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c><c r="B1" t="inlineStr"><is><t>name</t></is></c></row>';
  zip.file(
    path,
    `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${head}${rowsXml}</sheetData></worksheet>`,
  );
  return zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}

/**
 * A workbook whose shared strings are `strings` strings of `runs` copies of `run` each (after "sku" and
 * "name"), the sheet's rows 2 to 11 naming the first ten of them; the XML streamed into the zip.
 */
function richStringsXlsx(strings: number, runs: number, run: string): Promise<Buffer> {
  const shared = (r: number, i: number, col: string) => `<c r="${col}${r}" t="s"><v>${i}</v></c>`;
  const rows = Array.from(
    { length: Math.min(10, strings) },
    (_, k) => `<row r="${k + 2}"><c r="A${k + 2}" t="inlineStr"><is><t>R${k}</t></is></c>${shared(k + 2, k + 2, 'B')}</row>`,
  );
  return streamedXlsx(
    function* () {
      yield Buffer.from(
        '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>' +
          `<row r="1">${shared(1, 0, 'A')}${shared(1, 1, 'B')}</row>${rows.join('')}</sheetData></worksheet>`,
      );
    },
    [
      {
        name: 'xl/sharedStrings.xml',
        level: 9,
        data: function* () {
          yield Buffer.from('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>sku</t></si><si><t>name</t></si>');
          const batch = Buffer.from(run.repeat(Math.min(runs, 10_000)));
          for (let i = 0; i < strings; i++) {
            yield Buffer.from('<si>');
            for (let left = runs; left > 0; left -= 10_000) yield left >= 10_000 ? batch : batch.subarray(0, left * run.length);
            yield Buffer.from('</si>');
          }
          yield Buffer.from('</sst>');
        },
      },
    ],
  );
}

async function main(): Promise<void> {
  for (const engine of ENGINES) await run(engine);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
