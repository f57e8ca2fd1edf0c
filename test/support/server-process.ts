import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { sign } from 'jsonwebtoken';
import { dropDatabase, Engine, ENGINES, engineUnavailable, mysqlServer, testConfig } from './test-app';

const ROOT = resolve(__dirname, '../..');

/**
 * The real service in a process of its own (src/main.ts through ts-node, as `npm start` runs its build):
 * for tests that send it signals, kill it, or need to see whether it exits.
 */
export class ServerProcess {
  output = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly base: string,
  ) {
    const append = (chunk: Buffer) => {
      this.output += chunk.toString();
      if (this.output.length > 2_000_000) this.output = this.output.slice(-1_000_000);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    this.exited = new Promise((done) => {
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        done();
      });
    });
  }

  /** Starts the service with `env` (on a free port unless PORT is given) and waits until it is ready. */
  static async start(env: Record<string, string>, timeoutMs = 90_000): Promise<ServerProcess> {
    const port = env.PORT ?? String(await freePort());
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'log', ...env, PORT: port, TS_NODE_PROJECT: resolve(ROOT, 'tsconfig.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ServerProcess(child, `http://127.0.0.1:${port}`);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (server.exit) throw new Error(`the service exited (${JSON.stringify(server.exit)}) before it was ready:\n${server.output.slice(-3000)}`);
      try {
        if ((await fetch(`${server.base}/health/ready`)).ok) return server;
      } catch {
        /* not listening yet */
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    server.child.kill('SIGKILL');
    throw new Error(`the service was not ready within ${timeoutMs} ms:\n${server.output.slice(-3000)}`);
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Waits for the process to end (kills it after `timeoutMs`); returns how it ended. */
  async stopped(timeoutMs = 60_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
    return this.exit as { code: number | null; signal: NodeJS.Signals | null };
  }

  /** Ends it for good (test clean-up). */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

export interface ProcessCustomer {
  accessKey: string;
  /** `Authorization` header value (a 1 h token). */
  auth: string;
}

/** Adds a customer straight into the database a service process uses (after it has migrated it). */
export async function insertCustomer(env: Record<string, string>, name = 'Customer'): Promise<ProcessCustomer> {
  const accessKey = randomBytes(18).toString('base64url');
  const secretKey = randomBytes(32).toString('base64');
  const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
  const sql = 'INSERT INTO customers (accessKey, secretKey, name, currency, catalogVersion, createdAt, updatedAt) VALUES (?, ?, ?, ?, 0, ?, ?)';
  const values = [accessKey, secretKey, name, 'KRW', now, now];
  if (env.DB_TYPE === 'mysql') {
    const { createConnection } = await import('mysql2/promise');
    const conn = await createConnection({ ...mysqlServer, database: env.DB_NAME });
    await conn.query(sql, values);
    await conn.end();
  } else {
    const db = new Database(join(env.DATA_DIR, 'livegoods.sqlite'));
    db.prepare(sql).run(...values);
    db.close();
  }
  const token = sign({ accessKey }, Buffer.from(secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 3600 });
  return { accessKey, auth: `Bearer ${token}` };
}

export interface ProcessSuite {
  engine: Engine;
  /** The suite's settings (its own DATA_DIR and database), for ServerProcess.start and insertCustomer. */
  env: Record<string, string>;
  dataDir: string;
  /** Starts the service on the suite's settings and `extra`; every process started is killed after the suite. */
  start(extra?: Record<string, string>): Promise<ServerProcess>;
}

/**
 * A suite run once per engine against the service in processes of its own (to signal or kill them), on
 * a DATA_DIR and a database of its own (named after `specFile`), both removed afterwards. Skipped when an
 * engine's server is absent, unless REQUIRE_SERVICES=1 (then it fails).
 */
export function describeServerProcesses(title: string, specFile: string, settings: Record<string, string>, suite: (ctx: () => ProcessSuite) => void): void {
  for (const engine of ENGINES) {
    const down = engineUnavailable(engine);
    const run = down && process.env.REQUIRE_SERVICES !== '1' ? describe.skip : describe;
    run(`${title} [${engine}]`, () => {
      let current: ProcessSuite | undefined;
      let database = '';
      const started: ServerProcess[] = [];
      beforeAll(async () => {
        if (down) throw new Error(`${engine} server required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
        const setup = await testConfig(engine, specFile, settings);
        database = setup.database;
        const { env, dataDir } = setup;
        current = {
          engine,
          env,
          dataDir,
          start: async (extra = {}) => {
            const server = await ServerProcess.start({ ...env, ...extra });
            started.push(server);
            return server;
          },
        };
      });
      afterAll(async () => {
        for (const server of started) await server.kill();
        if (current) rmSync(current.dataDir, { recursive: true, force: true });
        if (engine === 'mysql' && database) await dropDatabase(database);
      });
      suite(() => {
        if (!current) throw new Error('suite not set up');
        return current;
      });
    });
  }
}
