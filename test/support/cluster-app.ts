import { NestExpressApplication } from '@nestjs/platform-express';
import { sign } from 'jsonwebtoken';
import request from 'supertest';
import { AppConfig } from '../../src/config/app-config';
import { CustomersService } from '../../src/customers/customers.service';
import { listenOn } from './live-client';
import { buildApp } from './test-app';

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
  return { app, base, http: request(base), close: () => app.close() };
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
