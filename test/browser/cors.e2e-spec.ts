/**
 * CORS in a real browser (Debian's Chromium through playwright-core): pages served from other origins
 * (other local ports) call the API with fetch. Any page reads the public campaign list; the authenticated
 * goods API is readable only from an origin listed in CORS_ORIGINS. SQLite only (CORS does not depend on
 * the engine). Without /usr/bin/chromium the suite is skipped, or fails when REQUIRE_SERVICES=1.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NestExpressApplication } from '@nestjs/platform-express';
import { sign } from 'jsonwebtoken';
import { Browser, chromium, Page } from 'playwright-core';
import { AppConfig } from '../../src/config/app-config';
import { CustomersService } from '../../src/customers/customers.service';
import { freePort } from '../support/server-process';
import { buildApp } from '../support/test-app';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'];
const chromiumMissing = !existsSync(CHROMIUM);
const required = process.env.REQUIRE_SERVICES === '1';

/** A site of its own (one port = one origin) serving one empty page. */
async function pageServer(port: number): Promise<http.Server> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>shop</title>'));
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return server;
}

interface Outcome {
  status?: number;
  body?: unknown;
  blocked?: string;
}

/** fetch() from the page: the answer, or why the browser refused to hand it over. */
function fetchFrom(page: Page, url: string, headers: Record<string, string> = {}): Promise<Outcome> {
  return page.evaluate(
    async ({ url, headers }) => {
      try {
        const res = await fetch(url, { headers });
        return { status: res.status, body: await res.json() };
      } catch (err) {
        return { blocked: String(err) };
      }
    },
    { url, headers },
  );
}

const title = 'CORS in Chromium';

if (chromiumMissing && !required) {
  process.stderr.write(`\n[livegoods tests] ${CHROMIUM} not found: the browser CORS suite is SKIPPED (apt-get install -y chromium)\n`);
  describe.skip(`${title} (skipped: ${CHROMIUM} not found)`, () => {
    it('needs Chromium', () => undefined);
  });
} else {
  describe(title, () => {
    jest.setTimeout(90_000);
    let dataDir: string;
    let app: NestExpressApplication;
    let api: string;
    let browser: Browser;
    let listedSite: http.Server;
    let otherSite: http.Server;
    let listedOrigin: string;
    let otherOrigin: string;
    let accessKey: string;
    let auth: string;

    beforeAll(async () => {
      if (chromiumMissing) throw new Error(`REQUIRE_SERVICES=1 but ${CHROMIUM} is missing: apt-get install -y chromium (Debian package)`);
      const [listedPort, otherPort] = [await freePort(), await freePort()];
      listedOrigin = `http://127.0.0.1:${listedPort}`;
      otherOrigin = `http://127.0.0.1:${otherPort}`;
      listedSite = await pageServer(listedPort);
      otherSite = await pageServer(otherPort);
      dataDir = mkdtempSync(join(tmpdir(), 'livegoods-cors-'));
      const config = AppConfig.fromEnv({ DATA_DIR: dataDir, DB_TYPE: 'sqlite', LOG_LEVEL: 'error', CORS_ORIGINS: listedOrigin });
      app = await buildApp(config);
      await app.listen(0, '127.0.0.1');
      api = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
      const customer = await app.get(CustomersService).create('Browser shop', 'KRW');
      accessKey = customer.accessKey;
      auth = `Bearer ${sign({ accessKey }, Buffer.from(customer.secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 3600 })}`;
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    });

    afterAll(async () => {
      await browser?.close();
      await app?.close();
      await new Promise((r) => listedSite?.close(r));
      await new Promise((r) => otherSite?.close(r));
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    async function pageAt(origin: string): Promise<Page> {
      const page = await browser.newPage();
      await page.goto(`${origin}/`);
      return page;
    }

    it('any page reads the public campaign list', async () => {
      const page = await pageAt(otherOrigin);
      const res = await fetchFrom(page, `${api}/v1/campaigns/${accessKey}`);
      expect(res.blocked).toBeUndefined();
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ _s: 0 });
      await page.close();
    });

    it('any page reads the ETag of an answer and asks again with If-None-Match: 304 (public list, listed origin on the goods API)', async () => {
      /** Two fetch() calls from the page: the second sends back the first's ETag (read by the page's script). */
      const twice = (page: Page, url: string, headers: Record<string, string> = {}) =>
        page.evaluate(
          async ({ url, headers }) => {
            try {
              const first = await fetch(url, { headers });
              const etag = first.headers.get('ETag');
              if (!etag) return { etag, status: first.status };
              const again = await fetch(url, { headers: { ...headers, 'If-None-Match': etag, 'Cache-Control': 'no-cache' } });
              return { etag, status: again.status };
            } catch (err) {
              return { blocked: String(err) };
            }
          },
          { url, headers },
        );
      const other = await pageAt(otherOrigin);
      expect(await twice(other, `${api}/v1/campaigns/${accessKey}`)).toEqual({ etag: expect.stringMatching(/^(W\/)?"/), status: 304 });
      await other.close();
      const listed = await pageAt(listedOrigin);
      expect(await twice(listed, `${api}/v1/goods/${accessKey}?count=1`, { Authorization: auth })).toEqual({
        etag: expect.stringMatching(/^(W\/)?"/),
        status: 304,
      });
      await listed.close();
    });

    it('an unlisted origin cannot read the authenticated goods API', async () => {
      const page = await pageAt(otherOrigin);
      const res = await fetchFrom(page, `${api}/v1/goods/${accessKey}?count=1`, { Authorization: auth });
      expect(res.status).toBeUndefined();
      expect(res.blocked).toMatch(/TypeError|Failed to fetch/);
      await page.close();
    });

    it('a listed origin reads it (Authorization preflighted and allowed)', async () => {
      const page = await pageAt(listedOrigin);
      const res = await fetchFrom(page, `${api}/v1/goods/${accessKey}?count=1`, { Authorization: auth });
      expect(res.blocked).toBeUndefined();
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ _s: 0 });
      await page.close();
    });
  });
}
