import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { sign, SignOptions } from 'jsonwebtoken';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { configureApp } from '../../src/app.setup';
import { AppConfig } from '../../src/config/app-config';
import { CustomersService } from '../../src/customers/customers.service';

export type Engine = 'sqlite' | 'mysql';
export const ENGINES: Engine[] = ['sqlite', 'mysql'];

export const mysqlServer = {
  host: process.env.TEST_DB_HOST || '127.0.0.1',
  port: Number(process.env.TEST_DB_PORT || 3306),
  user: process.env.TEST_DB_USER || 'root',
  password: process.env.TEST_DB_PASSWORD || '',
};

export interface TestCustomer {
  id: number;
  accessKey: string;
  secretKey: string;
  currency: string;
  /** A valid HS256 token (1 h) for this customer; claims may be added or overridden. */
  token(claims?: Record<string, unknown>, options?: SignOptions): string;
  /** `Authorization` header value with a fresh valid token. */
  auth(claims?: Record<string, unknown>): string;
}

export interface TestApp {
  engine: Engine;
  app: NestExpressApplication;
  config: AppConfig;
  dataSource: DataSource;
  http: ReturnType<typeof request>;
  createCustomer(name?: string, currency?: string): Promise<TestCustomer>;
  close(): Promise<void>;
}

/**
 * The database name one spec file uses on MySQL: derived from the spec's name, so files never share.
 * TEST_DB_PREFIX (default `lgtest`) keeps two checkouts testing against one server apart.
 */
export function databaseNameFor(specFile: string, engine: Engine): string {
  const stem = basename(specFile)
    .replace(/\.e2e-spec\.ts$/, '')
    .replace(/[^A-Za-z0-9]/g, '_');
  const prefix = (process.env.TEST_DB_PREFIX || 'lgtest').replace(/[^A-Za-z0-9_]/g, '_');
  return `${prefix}_${stem}_${engine}`.slice(0, 64);
}

export async function recreateDatabase(name: string): Promise<void> {
  const { createConnection } = await import('mysql2/promise');
  const conn = await createConnection(mysqlServer);
  try {
    await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await conn.end();
  }
}

export async function dropDatabase(name: string): Promise<void> {
  const { createConnection } = await import('mysql2/promise');
  const conn = await createConnection(mysqlServer);
  try {
    await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await conn.end();
  }
}

/** Settings for a test run of the app on one engine: a fresh temp DATA_DIR, a fresh MySQL database. */
export async function testConfig(engine: Engine, specFile: string, extra: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'livegoods-test-'));
  const database = databaseNameFor(specFile, engine);
  if (engine === 'mysql') await recreateDatabase(database);
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    DB_TYPE: engine,
    DB_HOST: mysqlServer.host,
    DB_PORT: String(mysqlServer.port),
    DB_USER: mysqlServer.user,
    DB_PASSWORD: mysqlServer.password,
    DB_NAME: database,
    LOG_LEVEL: 'error',
    // Suites send bursts from one address; the rate-limit spec turns the limits on itself.
    RATE_LIMIT_ENABLED: 'false',
    // Released image files go at once, as suites check; test/media-release.e2e-spec.ts sets its own delay.
    MEDIA_RELEASE_DELAY_MS: '0',
    MEDIA_SWEEP_INTERVAL_MS: '0',
    ...extra,
  };
  return { config: AppConfig.fromEnv(env), env, dataDir, database };
}

/**
 * The real app (same modules, same setup as main.ts) on the given settings, configured but not yet
 * initialized: call `init()` or `listen()`.
 */
export async function buildApp(config: AppConfig): Promise<NestExpressApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(AppConfig)
    .useValue(config)
    .compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: ['error'] });
  configureApp(app);
  return app;
}

/** Boots the real app (same modules, same setup as main.ts) on the given engine. */
/**
 * Holds a write lock the app will wait for, from a connection of its own: SQLite's database lock
 * (BEGIN IMMEDIATE) or, on MySQL, the customer's row (SELECT … FOR UPDATE). Resolves to its release.
 */
export async function holdWriteLock(t: TestApp, customerId: number): Promise<() => Promise<void>> {
  if (t.engine === 'sqlite') {
    const other = new Database(join(t.config.dataDir, 'livegoods.sqlite'));
    other.prepare('BEGIN IMMEDIATE').run();
    return () => {
      other.prepare('COMMIT').run();
      other.close();
      return Promise.resolve();
    };
  }
  const { createConnection } = await import('mysql2/promise');
  const other = await createConnection({ ...mysqlServer, database: t.config.database.database });
  await other.query('START TRANSACTION');
  await other.query('SELECT id FROM customers WHERE id = ? FOR UPDATE', [customerId]);
  return async () => {
    await other.query('COMMIT');
    await other.end();
  };
}

export async function createTestApp(engine: Engine, specFile: string, extra: Record<string, string> = {}): Promise<TestApp> {
  const { config, dataDir, database } = await testConfig(engine, specFile, extra);
  const app = await buildApp(config);
  await app.init();
  const server = app.getHttpServer();
  const customers = app.get(CustomersService);
  let counter = 0;
  return {
    engine,
    app,
    config,
    dataSource: app.get(DataSource),
    http: request(server),
    async createCustomer(name?: string, currency = 'KRW') {
      counter += 1;
      const c = await customers.create(name ?? `Customer ${counter}`, currency);
      const token = (claims: Record<string, unknown> = {}, options: SignOptions = {}) =>
        sign({ accessKey: c.accessKey, ...claims }, Buffer.from(c.secretKey, 'base64'), {
          algorithm: 'HS256',
          expiresIn: 3600,
          ...options,
        });
      return {
        id: c.id,
        accessKey: c.accessKey,
        secretKey: c.secretKey,
        currency: c.currency,
        token,
        auth: (claims?: Record<string, unknown>) => `Bearer ${token(claims)}`,
      };
    },
    async close() {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
      if (engine === 'mysql') await dropDatabase(database);
    },
  };
}

/** Why an engine's server is unusable in this run ('' when it is fine); set by global-setup.js. */
export function engineUnavailable(engine: Engine): string {
  return engine === 'mysql' ? (process.env.LG_MYSQL_DOWN ?? '') : '';
}

/**
 * Runs the same suite on SQLite and on MySQL/MariaDB, each against its own fresh database.
 * A missing MySQL server skips its half (and says so), or fails it when REQUIRE_SERVICES=1.
 */
export function describeEngines(title: string, specFile: string, suite: (ctx: () => TestApp) => void, extra: Record<string, string> = {}): void {
  for (const engine of ENGINES) {
    const down = engineUnavailable(engine);
    if (down && process.env.REQUIRE_SERVICES !== '1') {
      describe.skip(`${title} [${engine}] (skipped: ${down})`, () => suite(() => undefined as unknown as TestApp));
      continue;
    }
    describe(`${title} [${engine}]`, () => {
      let current: TestApp | undefined;
      beforeAll(async () => {
        if (down) throw new Error(`${engine} server required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
        current = await createTestApp(engine, specFile, extra);
      });
      afterAll(async () => {
        await current?.close();
      });
      suite(() => {
        if (!current) throw new Error('test app not started');
        return current;
      });
    });
  }
}
