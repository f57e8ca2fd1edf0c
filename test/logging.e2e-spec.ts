import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, insertCustomer, ProcessCustomer, ServerProcess } from './support/server-process';
import { dropDatabase, ENGINES, engineUnavailable, testConfig } from './support/test-app';

/**
 * The service's own output, as a process: with LOG_FORMAT=json every line is a JSON object; each request
 * leaves one access line (method, route pattern, status, durationMs, requestId, accessKey) and every line
 * logged while serving it carries its requestId; no token, secret or query value reaches the log.
 * LOG_FORMAT=text is readable and colourless on a pipe; a failed start is one fatal line in the format.
 */

const ROOT = resolve(__dirname, '..');

type Line = Record<string, unknown>;

/** Starts every ANSI colour sequence. */
const ESC = String.fromCharCode(27);

function jsonLines(output: string): Line[] {
  return output
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l, i) => {
      try {
        const parsed = JSON.parse(l) as unknown;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        return parsed as Line;
      } catch {
        throw new Error(`output line ${i + 1} is not a JSON object: ${l}`);
      }
    });
}

async function untilLogged(server: ServerProcess, probe: (lines: Line[]) => boolean, timeoutMs = 5000): Promise<Line[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = jsonLines(server.output);
    if (probe(lines) || Date.now() > deadline) return lines;
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const engine of ENGINES) {
  const down = engineUnavailable(engine);
  const skip = down && process.env.REQUIRE_SERVICES !== '1';
  (skip ? describe.skip : describe)(`structured logs [${engine}]${skip ? ` (skipped: ${down})` : ''}`, () => {
    let setup: Awaited<ReturnType<typeof testConfig>>;
    let server: ServerProcess | undefined;
    let customer: ProcessCustomer;

    beforeAll(async () => {
      if (down) throw new Error(`${engine} required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
      setup = await testConfig(engine, __filename, { LOG_LEVEL: 'log', LOG_FORMAT: 'json' });
      server = await ServerProcess.start(setup.env);
      customer = await insertCustomer(setup.env);
    }, 120_000);

    afterAll(async () => {
      await server?.kill();
      rmSync(setup.dataDir, { recursive: true, force: true });
      if (engine === 'mysql') await dropDatabase(setup.database);
    });

    it('writes one JSON object a line, an access line per request with its requestId and accessKey, no credentials', async () => {
      const s = server as ServerProcess;
      const token = customer.auth.slice('Bearer '.length);
      const badToken = `${token.slice(0, -6)}AAAAAA`;
      const queryToken = 'eyJqueryToken.secretPart.signature';
      const get = (path: string, id: string, auth?: string) =>
        fetch(`${s.base}${path}`, { headers: { 'x-request-id': id, ...(auth ? { authorization: auth } : {}) } });

      expect((await get(`/v1/goods/${customer.accessKey}?count=1`, 'req-ok.1', customer.auth)).status).toBe(200);
      expect((await get(`/v1/goods/${customer.accessKey}?count=1`, 'req-401.1', `Bearer ${badToken}`)).status).toBe(401);
      expect((await get(`/no/such/page?token=${queryToken}`, 'req-404.1')).status).toBe(404);
      expect((await get(`/v1/goods/${customer.accessKey}?count=1&token=${queryToken}`, 'req-query.1', customer.auth)).status).toBe(200);
      // A line logged inside a service while serving the request: the image of a private address is refused.
      const post = await fetch(`${s.base}/v1/goods/${customer.accessKey}`, {
        method: 'POST',
        headers: { 'x-request-id': 'req-media.1', authorization: customer.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Lamp', sku: 'LOG-1', url: 'https://shop.example.com/log-1', mediaUrl: 'http://user:pa55word@127.0.0.1:9/lamp.png' }),
      });
      expect(post.status).toBe(200);

      const ids = ['req-ok.1', 'req-401.1', 'req-404.1', 'req-query.1', 'req-media.1'];
      const lines = await untilLogged(s, (ls) => ids.every((id) => ls.some((l) => l.msg === 'request' && l.requestId === id)));
      const access = (id: string) => lines.find((l) => l.msg === 'request' && l.requestId === id);

      expect(access('req-ok.1')).toMatchObject({ level: 'info', method: 'GET', route: '/v1/goods/:accessKey', status: 200, accessKey: customer.accessKey });
      expect(typeof access('req-ok.1')?.durationMs).toBe('number');
      expect(access('req-401.1')).toMatchObject({ method: 'GET', route: '/v1/goods/:accessKey', status: 401, accessKey: customer.accessKey });
      expect(access('req-404.1')).toMatchObject({ method: 'GET', route: 'unmatched', status: 404, path: '/no/such/page' });
      expect(access('req-query.1')).toMatchObject({ route: '/v1/goods/:accessKey', status: 200 });
      expect(access('req-media.1')).toMatchObject({ method: 'POST', route: '/v1/goods/:accessKey', status: 200 });
      // Lines written while serving a request carry its id (the media warning comes from MediaService).
      const inside = lines.filter((l) => l.requestId === 'req-media.1' && l.msg !== 'request');
      expect(inside.length).toBeGreaterThanOrEqual(1);
      expect(inside.some((l) => l.level === 'warn')).toBe(true);
      // Start-up lines are JSON too, with Nest's context.
      expect(lines.some((l) => l.context === 'Bootstrap' && String(l.msg).includes('listening'))).toBe(true);

      for (const secret of [token, badToken, queryToken, 'pa55word', 'secretPart']) expect(s.output).not.toContain(secret);
      expect(s.output).not.toContain(ESC);
    });
  });
}

describe('structured logs: text format and failed starts', () => {
  it('LOG_FORMAT=text is one readable line per entry, without colours on a pipe', async () => {
    const setup = await testConfig('sqlite', __filename, { LOG_LEVEL: 'log', LOG_FORMAT: 'text' });
    const server = await ServerProcess.start(setup.env);
    try {
      await fetch(`${server.base}/health`, { headers: { 'x-request-id': 'text-1' } });
      const deadline = Date.now() + 5000;
      while (!server.output.includes('requestId=text-1') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const line = server.output.split('\n').find((l) => l.includes('requestId=text-1')) ?? '';
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+Z INFO +request requestId=text-1 method=GET route=\/health status=200 durationMs=\d+/);
      expect(server.output).toMatch(/INFO +\[Bootstrap\] livegoods listening/);
      expect(server.output).not.toContain(ESC);
      expect(server.output.split('\n').filter((l) => l.startsWith('{')).length).toBe(0);
    } finally {
      await server.kill();
      rmSync(setup.dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a start that fails writes its warnings at once and ends with one fatal line, all JSON', async () => {
    const port = await freePort();
    const closed = await freePort();
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: String(port),
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'log',
        DB_TYPE: 'mysql',
        DB_HOST: '127.0.0.1',
        DB_PORT: String(closed),
        DB_PASSWORD: 'db-pa55word',
        DB_STARTUP_TIMEOUT_MS: '1500',
        TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
    expect(code).toBe(1);
    const lines = jsonLines(output);
    expect(lines.some((l) => l.level === 'warn' && l.context === 'Database')).toBe(true);
    const last = lines[lines.length - 1];
    expect(last).toMatchObject({ level: 'fatal', context: 'Bootstrap' });
    expect(String(last.msg)).toContain('failed to start');
    expect(output).not.toContain('db-pa55word');
    // No other error lines for the same failure: no "Retrying" that does not happen (TypeORM's module says
    // so even with its retries off), no second copy of the error from Nest's ExceptionHandler.
    expect(lines.filter((l) => l.level === 'error' || l.level === 'fatal').map((l) => `${String(l.level)} ${String(l.context)}`)).toEqual(['fatal Bootstrap']);
    expect(output).not.toMatch(/Retrying \(\d+\)/);
  }, 120_000);

  it('PORT=0: the system picks a free port, and the start-up line names that port', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lg-port0-'));
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        DATA_DIR: dataDir,
        DB_TYPE: 'sqlite',
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'log',
        TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      const deadline = Date.now() + 90_000;
      let port: number | undefined;
      while (port === undefined && Date.now() < deadline && child.exitCode === null) {
        const m = /"msg":"livegoods listening on port (\d+) /.exec(output);
        if (m) port = Number(m[1]);
        else await new Promise((r) => setTimeout(r, 100));
      }
      expect(port).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    } finally {
      child.kill('SIGKILL');
      await new Promise((done) => (child.exitCode === null ? child.once('exit', done) : done(null)));
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a bad setting is a fatal line in LOG_FORMAT', async () => {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, LOG_FORMAT: 'json', CORS_ORIGINS: 'https://shop.example/path', TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    expect(await new Promise<number | null>((done) => child.once('exit', (c) => done(c)))).toBe(1);
    const lines = jsonLines(output);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'fatal' });
    expect(String(lines[0].msg)).toContain('CORS_ORIGINS');
  }, 60_000);
});
