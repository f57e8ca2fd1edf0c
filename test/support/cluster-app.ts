import { rmSync } from 'node:fs';
import { NestExpressApplication } from '@nestjs/platform-express';
import { sign } from 'jsonwebtoken';
import request, { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../src/config/app-config';
import { CustomersService } from '../../src/customers/customers.service';
import { eventually } from './eventually';
import { closeAllViewers, listenOn } from './live-client';
import { buildApp, dropDatabase, engineUnavailable, testConfig } from './test-app';

/**
 * One node of a multi-node test: the real app (same modules and setup as main.ts) on a given config,
 * listening on an ephemeral loopback port. Several nodes built from one config share its database
 * (MySQL/MariaDB) and, with REDIS_URL, the Socket.IO Redis adapter and the viewer counts.
 */
export interface Node {
  app: NestExpressApplication;
  base: string;
  http: ReturnType<typeof request>;
  close(): Promise<void>;
}

export async function startNode(config: AppConfig): Promise<Node> {
  const app = await buildApp(config);
  await app.init();
  const base = await listenOn(app);
  const node = { app, base, http: request(base), close: () => app.close() };
  // As a load balancer would, send nothing before the node reads ready: a node does not wait for Redis
  // to start, and a command sent while its connection is still being opened (a loaded machine) has the
  // node count and fan out on its own until the next PING answers.
  const ready = await eventually(
    () => node.http.get('/health/ready').then((res) => res.status),
    (status) => status === 200,
    20_000,
    100,
  );
  if (ready !== 200) {
    await app.close();
    throw new Error(`the node did not read ready within 20 s (GET /health/ready: ${ready})`);
  }
  return node;
}

export interface NodeCustomer {
  id: number;
  accessKey: string;
  /** `Authorization` header value with a fresh valid token (claims may be added). */
  auth(claims?: Record<string, unknown>): string;
}

/** Creates a customer through one node's service (the database is shared, so every node knows it). */
export async function createNodeCustomer(node: Node, name: string): Promise<NodeCustomer> {
  const c = await node.app.get(CustomersService).create(name, 'KRW');
  return {
    id: c.id,
    accessKey: c.accessKey,
    auth: (claims = {}) => `Bearer ${sign({ accessKey: c.accessKey, ...claims }, Buffer.from(c.secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 3600 })}`,
  };
}

/** Two nodes sharing one MariaDB database and one Redis, and a customer; filled in by describeTwoNodes. */
export interface TwoNodes {
  A: Node;
  B: Node;
  C: NodeCustomer;
  /** The nodes' environment (another node may be built from it). */
  env: Record<string, string>;
  database: string;
  /** This run's REDIS_PREFIX: other runs sharing the Redis keep to theirs. */
  redisPrefix: string;
}

/** A 200, or an error that shows what came instead. */
export function expectOk(res: Response): void {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status} ${JSON.stringify(res.body)}`);
}

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * A suite on two app nodes sharing one MariaDB database and one Redis (SQLite cannot be shared between
 * processes), with `extra` settings: starts them (the first migrates the database) and a customer before the suite, closes
 * viewers after each test, and stops everything after it. A missing MariaDB or Redis skips the suite
 * (and says so), or fails it with REQUIRE_SERVICES=1.
 */
export function describeTwoNodes(
  title: string,
  specFile: string,
  customerName: string,
  suite: (cluster: TwoNodes) => void,
  extra: Record<string, string> = {},
): void {
  const down = [
    engineUnavailable('mysql') && `MariaDB/MySQL: ${engineUnavailable('mysql')}`,
    process.env.LG_REDIS_DOWN && `Redis: ${process.env.LG_REDIS_DOWN}`,
  ]
    .filter(Boolean)
    .join('; ');
  const required = process.env.REQUIRE_SERVICES === '1';
  (down && !required ? describe.skip : describe)(`${title} [mysql]${down ? ` (skipped: ${down})` : ''}`, () => {
    const cluster = { redisPrefix: `lgtest-${process.pid}-${Date.now().toString(36)}` } as TwoNodes;
    let dataDir = '';

    beforeAll(async () => {
      if (down) throw new Error(`MariaDB and Redis are required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
      const setup = await testConfig('mysql', specFile, { REDIS_URL, REDIS_PREFIX: cluster.redisPrefix, ...extra });
      cluster.env = setup.env;
      dataDir = setup.dataDir;
      cluster.database = setup.database;
      // One after the other: the first one migrates the shared database.
      cluster.A = await startNode(setup.config);
      cluster.B = await startNode(setup.config);
      // Other runs may share this Redis; their own REDIS_PREFIX keeps them apart, and campaign ids far
      // from theirs would too.
      const base = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
      await cluster.A.app.get(DataSource).query(`ALTER TABLE campaigns AUTO_INCREMENT = ${base}`);
      cluster.C = await createNodeCustomer(cluster.A, customerName);
    });

    afterEach(() => closeAllViewers());

    afterAll(async () => {
      closeAllViewers();
      await cluster.B?.close();
      await cluster.A?.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      if (cluster.database) await dropDatabase(cluster.database);
    });

    suite(cluster);
  });
}
