import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from '../app.module';
import { createOpenApiDocument } from '../app.setup';

/**
 * `npm run openapi [-- <file>]`: builds the app on a throw-away SQLite database (nothing listens, no
 * database or Redis of yours is touched; PUBLIC_BASE_URL and PORT name the document's server) and writes
 * the OpenAPI document it serves at /docs-json to openapi.json (git-ignored), for the linters and
 * client generators.
 */
async function main(): Promise<void> {
  const out = resolve(process.argv[2] ?? 'openapi.json');
  const dataDir = mkdtempSync(join(tmpdir(), 'livegoods-openapi-'));
  try {
    // Real environment variables win over .env: these keep the run away from your data and services.
    Object.assign(process.env, { DATA_DIR: dataDir, DB_TYPE: 'sqlite', REDIS_URL: '', LOG_LEVEL: 'error' });
    const app = await NestFactory.create<NestExpressApplication>(AppModule, { bodyParser: false, logger: ['error'] });
    writeFileSync(out, `${JSON.stringify(createOpenApiDocument(app), null, 2)}\n`);
    await app.close();
    console.log(`wrote ${out}`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
