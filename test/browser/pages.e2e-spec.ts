/**
 * The operator page (/console) and the viewer page (/watch/...) in a real browser: Debian's Chromium
 * driven by playwright-core. An operator in one browser context runs a broadcast; a viewer on a
 * phone-sized screen in another context sees every change live, and catches up after a server restart.
 *
 * Runs against SQLite only (the pages do not depend on the engine), with a real listening app. Without
 * /usr/bin/chromium the suite is skipped (and says so), or fails when REQUIRE_SERVICES=1 (CI installs
 * the package). Screenshots go to test/artifacts/ (ignored by git); UPDATE_SCREENSHOTS=1
 * (`npm run screenshots`) also refreshes docs/screenshots/console.png and viewer.png for the README.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NestExpressApplication } from '@nestjs/platform-express';
import { sign } from 'jsonwebtoken';
import { Browser, BrowserContext, chromium, Page, Response } from 'playwright-core';
import sharp from 'sharp';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../src/config/app-config';
import { CustomersService } from '../../src/customers/customers.service';
import { buildApp } from '../support/test-app';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ROOT = resolve(__dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test', 'artifacts');
const DOCS_SHOTS = join(ROOT, 'docs', 'screenshots');
const VIEWER_LOCALE = 'en-US';

const chromiumMissing = !existsSync(CHROMIUM);
const required = process.env.REQUIRE_SERVICES === '1';

// ---------------------------------------------------------------------------------------------
// Harness: the real app on a fixed DATA_DIR (so a second instance finds the same SQLite file), a tiny
// image server for the goods pictures, and HTTP helpers.

async function startApp(dataDir: string, port: number): Promise<NestExpressApplication> {
  const config = AppConfig.fromEnv({ DATA_DIR: dataDir, DB_TYPE: 'sqlite', LOG_LEVEL: 'error', MEDIA_ALLOW_PRIVATE_HOSTS: 'true' });
  const app = await buildApp(config);
  await app.listen(port, '127.0.0.1');
  return app;
}

function portOf(app: NestExpressApplication): number {
  return (app.getHttpServer().address() as AddressInfo).port;
}

/** Serves /img/<rrggbb>.png: a 480 px square product-like picture in that colour (made with sharp). */
async function startImageServer(): Promise<{ url(color: string): string; close(): Promise<void> }> {
  const cache = new Map<string, Buffer>();
  const server = http.createServer((req, res) => {
    const match = /^\/img\/([0-9a-f]{6})\.png$/.exec(req.url ?? '');
    if (!match) {
      res.writeHead(404).end();
      return;
    }
    const color = match[1];
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="480">
      <rect width="480" height="480" fill="#${color}"/>
      <circle cx="240" cy="215" r="120" fill="#ffffff" fill-opacity="0.85"/>
      <rect x="150" y="360" width="180" height="28" rx="14" fill="#ffffff" fill-opacity="0.6"/></svg>`;
    const ready = cache.get(color) ? Promise.resolve(cache.get(color) as Buffer) : sharp(Buffer.from(svg)).png().toBuffer();
    ready.then(
      (png) => {
        cache.set(color, png);
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
      },
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: (color) => `http://127.0.0.1:${port}/img/${color}.png`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

async function call(url: string, init: { method?: string; token?: string; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(url, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Takes a screenshot into test/artifacts/ and checks the file is a non-empty PNG. */
async function shot(target: Page, name: string, fullPage = false): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, name);
  await target.screenshot({ path: file, fullPage });
  expect(statSync(file).size).toBeGreaterThan(1000);
  expect(
    readFileSync(file)
      .subarray(0, 8)
      .equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  ).toBe(true);
  return file;
}

// The browser globals the page callbacks below use (they run in Chromium, not in Node; the project's
// type-check has no DOM library, so they are declared here, for this file only).
interface PageNode {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  getElementById(id: string): PageNode | null;
  querySelector(selector: string): PageNode | null;
  querySelectorAll(selector: string): { length: number };
  activeElement: PageNode | null;
  documentElement: { scrollWidth: number };
  body: { dataset: Record<string, string | undefined> };
};
declare const window: unknown;
declare const sessionStorage: { getItem(key: string): string | null };
declare function getComputedStyle(node: unknown): { outlineStyle: string };

/** What the viewer page exposes on window (see public/watch/watch.js). */
interface LiveWindow {
  livegoods: {
    live: {
      lastSeq: number | null;
      stats: { snapshots: number; events: number; resyncs: number; reconnects: number };
      socket: {
        io: { engine: { transport: { name: string } } };
        listeners(event: string): Array<(...args: unknown[]) => void>;
        off(event: string): void;
        on(event: string, listener: (...args: unknown[]) => void): void;
        once(event: string, listener: (...args: unknown[]) => void): void;
      };
    };
  };
}

// ---------------------------------------------------------------------------------------------

const title = 'operator and viewer pages in Chromium';

if (chromiumMissing && !required) {
  process.stderr.write(`\n[livegoods tests] ${CHROMIUM} not found: the browser suite is SKIPPED (apt-get install -y chromium)\n`);
  describe.skip(`${title} (skipped: ${CHROMIUM} not found; apt-get install -y chromium)`, () => {
    it('needs Chromium', () => undefined);
  });
} else {
  describe(title, () => {
    jest.setTimeout(90_000);

    let dataDir: string;
    let app: NestExpressApplication | null = null;
    let port = 0;
    let base = '';
    let images: Awaited<ReturnType<typeof startImageServer>>;
    let accessKey = '';
    let secretKey = '';
    let token = '';
    let browser: Browser;
    let operatorContext: BrowserContext;
    let viewerContext: BrowserContext;
    let operator: Page;
    let viewer: Page;
    let campaignKey = '';
    const goodsIds: Record<string, string> = {};
    const pageErrors: string[] = [];

    const goods = [
      {
        key: 'watch',
        name: 'Smart Watch 7',
        brand: 'Sampletech',
        sku: 'SW-7',
        originalPrice: 399000,
        discountedPrice: 359100,
        discountPercentage: 10,
        color: '3d5afe',
      },
      { key: 'shirt', name: 'Linen Shirt', brand: 'Haru', sku: 'LS-1', originalPrice: 59000, discountedPrice: 47200, discountPercentage: 20, color: 'ff7043' },
      {
        key: 'mug',
        name: 'Ceramic Mug Set',
        brand: 'Potter & Co',
        sku: 'MUG-2',
        originalPrice: 32000,
        discountedPrice: 32000,
        discountPercentage: 0,
        color: '26a69a',
      },
      {
        key: 'buds',
        name: 'Wireless Earbuds',
        brand: 'Sampletech',
        sku: 'WB-3',
        originalPrice: 129000,
        discountedPrice: 99000,
        discountPercentage: 23,
        color: '8e24aa',
      },
    ];

    const watchErrors = (page: Page, who: string) => {
      page.on('pageerror', (err) => pageErrors.push(`${who}: ${err.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text())) pageErrors.push(`${who}: ${msg.text()}`);
      });
    };
    const api = (path: string, init: { method?: string; body?: unknown } = {}) => call(`${base}${path}`, { ...init, token });
    const card = (key: string) => viewer.locator(`#goods li[data-goods-id="${goodsIds[key]}"]`);
    const row = (key: string) => operator.locator(`#cg-list li[data-goods-id="${goodsIds[key]}"]`);
    const viewerNames = () => viewer.locator('#goods li .name').allTextContents();
    const operatorNames = () => operator.locator('#cg-list li .info strong').allTextContents();

    beforeAll(async () => {
      if (chromiumMissing) throw new Error(`REQUIRE_SERVICES=1 but ${CHROMIUM} is missing: apt-get install -y chromium (Debian package)`);
      dataDir = mkdtempSync(join(tmpdir(), 'livegoods-pages-'));
      images = await startImageServer();
      app = await startApp(dataDir, 0);
      port = portOf(app);
      base = `http://127.0.0.1:${port}`;
      const customer = await app.get(CustomersService).create('Demo Shop', 'KRW');
      accessKey = customer.accessKey;
      secretKey = customer.secretKey;
      token = sign({ accessKey, name: 'Mina' }, Buffer.from(secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 3600 });
      for (const g of goods) {
        const res = await api(`/v1/goods/${accessKey}`, {
          method: 'POST',
          body: { ...g, key: undefined, color: undefined, url: `https://shop.example.com/goods/${g.sku}`, mediaUrl: images.url(g.color) },
        });
        expect(res.status).toBe(200);
        const body = res.json as { id: number; medias: unknown[] };
        expect(body.medias).toHaveLength(1);
        goodsIds[g.key] = String(body.id);
      }
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      operatorContext = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: VIEWER_LOCALE });
      viewerContext = await browser.newContext({
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 1,
        isMobile: true,
        hasTouch: true,
        locale: VIEWER_LOCALE,
      });
      operator = await operatorContext.newPage();
      viewer = await viewerContext.newPage();
      watchErrors(operator, 'console page');
      watchErrors(viewer, 'viewer page');
      operator.on('dialog', (dialog) => void dialog.accept());
    });

    afterAll(async () => {
      await browser?.close();
      await app?.close();
      await images?.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('serves the pages with a strict Content-Security-Policy, their assets, and the Socket.IO browser client', async () => {
      const page = await call(`${base}/console`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('cache-control')).toBe('no-cache');
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain(`connect-src 'self' ws://127.0.0.1:${port}`);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(page.text).not.toMatch(/<script>|<style>|style="/); // nothing inline

      const watch = await call(`${base}/watch/${accessKey}/AnyKey123`);
      expect(watch.status).toBe(200);
      expect(watch.text).toContain('/assets/watch/watch.js');
      expect(watch.headers.get('content-security-policy')).toContain("script-src 'self'");

      for (const [path, type] of [
        ['/assets/console/console.js', /javascript/],
        ['/assets/watch/watch.js', /javascript/],
        ['/assets/live-client.js', /javascript/],
        ['/assets/shared.css', /text\/css/],
      ] as const) {
        const asset = await call(`${base}${path}`);
        expect(asset.status).toBe(200);
        expect(asset.headers.get('content-type')).toMatch(type);
        expect(asset.headers.get('cache-control')).toBe('public, max-age=300');
      }
      for (const path of ['/assets/nothing.js', '/assets/%2e%2e/package.json', '/assets/..%2fpackage.json', '/assets/console/../../package.json']) {
        const missing = await call(`${base}${path}`);
        expect(missing.status).toBe(404);
        expect(missing.text).not.toContain('"dependencies"');
      }
      const client = await call(`${base}/socket.io/socket.io.min.js`);
      expect(client.status).toBe(200);
      expect(client.headers.get('content-type')).toMatch(/javascript/);
      expect(client.text.length).toBeGreaterThan(10_000);
      // No token needed for the pages, and they stay out of the API documentation.
      const docs = (await call(`${base}/docs-json`)).json as { paths: Record<string, unknown> };
      expect(Object.keys(docs.paths).filter((p) => /console$|watch|assets/.test(p))).toEqual([]);
    });

    it('console: a bad token or a pasted secret key is refused, in words', async () => {
      await operator.goto(`${base}/console`);
      await operator.getByLabel('Access key').fill(accessKey);
      // A secret key is caught before anything is sent.
      await operator.getByLabel('Token (JWT)').fill(secretKey);
      await operator.getByLabel('Token (JWT)').press('Enter'); // keyboard: Enter submits the sign-in form
      const alert = operator.getByRole('alert');
      await expect(alert.textContent()).resolves.toContain('looks like a secret key');
      // A token signed with another key: the API answers 401 -102, and the page says so.
      const forged = sign({ accessKey }, Buffer.alloc(32, 7), { algorithm: 'HS256', expiresIn: 600 });
      await operator.getByLabel('Token (JWT)').fill(forged);
      await operator.getByRole('button', { name: 'Sign in' }).click();
      await operator.waitForFunction(() => /HTTP 401/.test(document.getElementById('error-text')?.textContent ?? ''));
      const text = await operator.locator('#error-text').textContent();
      expect(text).toMatch(/^Signing in failed: HTTP 401 \(-102\): .+/);
      expect(await alert.isVisible()).toBe(true);
      expect(await operator.locator('#workspace').isVisible()).toBe(false);
    });

    it('console: signs in, refuses a blank title with the API message, creates a campaign', async () => {
      await operator.getByLabel('Token (JWT)').fill(token);
      await operator.getByRole('button', { name: 'Sign in' }).click();
      await operator.locator('#workspace').waitFor({ state: 'visible' });
      expect(await operator.getByRole('alert').isVisible()).toBe(false);
      expect(await operator.locator('#whoami').textContent()).toContain('Mina');
      expect(await operator.locator('#campaigns-empty').isVisible()).toBe(true);
      // The token is kept for this tab only.
      const kept = await operator.evaluate(() => sessionStorage.getItem('livegoods.console'));
      expect(JSON.parse(kept ?? '{}')).toEqual({ accessKey, token });

      await operator.locator('#create-title').fill('   ');
      await operator.getByRole('button', { name: 'Create campaign' }).click();
      await operator.waitForFunction(() => /HTTP 400/.test(document.getElementById('error-text')?.textContent ?? ''));
      expect(await operator.locator('#error-text').textContent()).toMatch(/Creating the campaign failed: HTTP 400 \(-510\): .*title/);
      expect(await operator.locator('#error-fields').textContent()).toContain('title');

      await operator.locator('#create-title').fill('Friday Night Deals');
      await operator.locator('#create-scheduled').fill('2030-11-22T20:00');
      await operator.locator('#create-operator').fill('Mina');
      await operator.locator('#create-visible').check();
      await operator.getByRole('button', { name: 'Create campaign' }).click();
      await operator.locator('#campaign').waitFor({ state: 'visible' });
      expect(await operator.getByRole('alert').isVisible()).toBe(false);
      campaignKey = (await operator.locator('#campaign').getAttribute('data-campaign-key')) ?? '';
      expect(campaignKey).toMatch(/^[A-Za-z0-9]{16}$/);
      expect(await operator.locator('#campaign-title').textContent()).toBe('Friday Night Deals');
      expect(await operator.locator('#campaigns-body tr').count()).toBe(1);
      const stored = (await api(`/v1/console/${accessKey}/campaigns/${campaignKey}`)).json as Record<string, unknown>;
      expect(stored).toMatchObject({ title: 'Friday Night Deals', operatorName: 'Mina', collectionVisible: true, campaignStatus: 'READY' });
      expect(stored.scheduledAt).toBe(await operator.evaluate(() => new Date('2030-11-22T20:00').getTime()));
      expect(await operator.getByRole('link', { name: 'Open the viewer page' }).getAttribute('href')).toBe(`/watch/${accessKey}/${campaignKey}`);
    });

    it('console: edits the settings', async () => {
      await operator.locator('#edit-title').fill('Friday Night Deals: Live');
      await operator.locator('#edit-scheduled-end').fill('2030-11-22T22:00');
      await operator.locator('#edit-visible').uncheck();
      await operator.getByRole('button', { name: 'Save settings' }).click();
      await operator.waitForFunction(() => document.getElementById('campaign-title')?.textContent === 'Friday Night Deals: Live');
      const stored = (await api(`/v1/console/${accessKey}/campaigns/${campaignKey}`)).json as Record<string, unknown>;
      expect(stored).toMatchObject({ title: 'Friday Night Deals: Live', collectionVisible: false });
      expect(stored.scheduledEndAt).toBe(await operator.evaluate(() => new Date('2030-11-22T22:00').getTime()));
      expect(await operator.locator('#campaigns-body').textContent()).toContain('Friday Night Deals: Live');
    });

    it('console: saving the settings sends only what the operator changed (a schedule set to the second through the API stays)', async () => {
      const path = `/v1/console/${accessKey}/campaigns/${campaignKey}`;
      const stored = async () => (await api(path)).json as Record<string, unknown>;
      const at = (await stored()).scheduledAt as number;
      const precise = at + 30_500;
      expect((await api(path, { method: 'PATCH', body: { scheduledAt: precise } })).status).toBe(200);
      // Opened again (the form filled anew), it holds whole minutes.
      await operator.locator('#edit-title').fill('(not filled yet)');
      await operator.locator('#campaigns-body').getByRole('button', { name: 'Friday Night Deals: Live' }).click();
      await operator.waitForFunction(
        (title) => (document.getElementById('edit-title') as unknown as { value: string } | null)?.value === title,
        'Friday Night Deals: Live',
      );
      await operator.locator('#edit-description').fill('Every Friday at eight');
      await operator.getByRole('button', { name: 'Save settings' }).click();
      await operator.waitForFunction(() => document.getElementById('flash')?.textContent === 'Settings saved');
      expect(await stored()).toMatchObject({ description: 'Every Friday at eight', scheduledAt: precise });
      // Nothing changed: nothing is sent.
      const updatedAt = (await stored()).updatedAt as number;
      await operator.getByRole('button', { name: 'Save settings' }).click();
      await operator.waitForFunction(() => document.getElementById('flash')?.textContent === 'Nothing changed');
      expect(await stored()).toMatchObject({ updatedAt, scheduledAt: precise });
    });

    it('console: exports the catalog as CSV and as .xlsx (downloads named by the service)', async () => {
      const [csv] = await Promise.all([operator.waitForEvent('download'), operator.getByRole('button', { name: 'Export CSV' }).click()]);
      expect(csv.suggestedFilename()).toMatch(/^goods-\d{8}-\d{6}\.csv$/);
      const text = readFileSync(await csv.path(), 'utf8');
      const lines = text.split('\r\n');
      expect(lines[0]).toBe('\uFEFFid,sku,url,name,brand,description,mediaUrl,originalPrice,discountedPrice,discountPercentage');
      expect(lines.slice(1, -1).map((l) => l.split(',')[1])).toEqual(goods.map((g) => g.sku));
      await operator.waitForFunction(() => /^Saved goods-.*\.csv/.test(document.getElementById('export-status')?.textContent ?? ''));

      const [xlsx] = await Promise.all([operator.waitForEvent('download'), operator.getByRole('button', { name: 'Export .xlsx' }).click()]);
      expect(xlsx.suggestedFilename()).toMatch(/^goods-\d{8}-\d{6}\.xlsx$/);
      expect(
        readFileSync(await xlsx.path())
          .subarray(0, 2)
          .toString(),
      ).toBe('PK');
      expect(await operator.getByRole('button', { name: 'Export .xlsx' }).isDisabled()).toBe(false);
    });

    it('console: adds goods by searching the catalog, reorders them (by keyboard too), marks the item showing now', async () => {
      await operator.getByLabel('Name, brand or goods code').fill('watch');
      await operator.getByRole('button', { name: 'Search', exact: true }).click();
      await operator.waitForFunction(() => document.querySelectorAll('#search-results li').length === 1);
      await operator.getByRole('button', { name: 'Add Smart Watch 7 to the campaign' }).click();
      await row('watch').waitFor();

      await operator.getByLabel('Name, brand or goods code').fill('');
      await operator.getByRole('button', { name: 'Search', exact: true }).click();
      await operator.waitForFunction(() => document.querySelectorAll('#search-results li').length === 4);
      expect(await operator.getByRole('button', { name: 'Smart Watch 7 is in the campaign' }).isDisabled()).toBe(true);
      await operator.getByRole('button', { name: 'Add Linen Shirt to the campaign' }).click();
      await row('shirt').waitFor();
      await operator.getByRole('button', { name: 'Add Ceramic Mug Set to the campaign' }).click();
      await row('mug').waitFor();
      expect(await operatorNames()).toEqual(['Smart Watch 7', 'Linen Shirt', 'Ceramic Mug Set']);

      // Keyboard: focus "move up" of the mug, press Enter; focus stays on that control after the list re-renders.
      const up = operator.getByRole('button', { name: 'Move Ceramic Mug Set up' });
      await up.focus();
      await operator.keyboard.press('Enter');
      await operator.waitForFunction(() => document.querySelector('#cg-list li:nth-child(2) .info strong')?.textContent === 'Ceramic Mug Set');
      expect(await operatorNames()).toEqual(['Smart Watch 7', 'Ceramic Mug Set', 'Linen Shirt']);
      expect(await operator.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move Ceramic Mug Set up');
      // The focused control shows a visible focus ring.
      expect(await operator.evaluate(() => getComputedStyle(document.activeElement).outlineStyle)).not.toBe('none');
      // Tab moves on to the next control (Move down), Space presses it: back to the original order.
      await operator.keyboard.press('Tab');
      expect(await operator.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Move Ceramic Mug Set down');
      await operator.keyboard.press('Space');
      await operator.waitForFunction(() => document.querySelector('#cg-list li:nth-child(3) .info strong')?.textContent === 'Ceramic Mug Set');
      expect(await operatorNames()).toEqual(['Smart Watch 7', 'Linen Shirt', 'Ceramic Mug Set']);

      await operator.getByRole('button', { name: 'Showing now: Smart Watch 7' }).click();
      await operator.waitForFunction(() => document.querySelector('#cg-list li.showing .info strong')?.textContent === 'Smart Watch 7');
      expect(await operator.getByRole('button', { name: 'Showing now: Smart Watch 7' }).getAttribute('aria-pressed')).toBe('true');
    });

    it('viewer (phone-sized): the campaign, goods in order with prices, discounts, badges and the item showing now', async () => {
      await viewer.goto(`${base}/watch/${accessKey}/${campaignKey}`);
      await viewer.waitForSelector('body[data-connection="live"]');
      await viewer.waitForFunction(() => document.querySelectorAll('#goods li').length === 3);
      expect(await viewer.locator('h1').textContent()).toBe('Friday Night Deals: Live');
      expect(await viewer.locator('#campaign-status').getAttribute('data-status')).toBe('READY');
      expect(await viewer.locator('#connection').textContent()).toBe('Connected');
      expect(await viewer.locator('#skip').isVisible()).toBe(true); // kept off screen until it has the focus
      // The Content-Security-Policy lets the WebSocket through (no fallback to long-polling needed).
      expect(await viewer.evaluate(() => (window as LiveWindow).livegoods.live.socket.io.engine.transport.name)).toBe('websocket');
      expect(await viewerNames()).toEqual(['Smart Watch 7', 'Linen Shirt', 'Ceramic Mug Set']);
      // The console shows the viewer among those watching (read again every few seconds).
      await operator.waitForFunction(() => document.getElementById('campaign-viewers')?.textContent === '1 watching now', undefined, { timeout: 15_000 });

      const won = (n: number) => new Intl.NumberFormat(VIEWER_LOCALE, { style: 'currency', currency: 'KRW' }).format(n);
      const watch = card('watch');
      expect(await watch.locator('.price').textContent()).toBe(won(359100));
      expect(await watch.locator('.original').textContent()).toContain(won(399000));
      expect(await watch.locator('.badge-discount').textContent()).toContain('-10%');
      // A discount just short of 100 % is not shown as 100 % (the one decimal is cut, not rounded).
      // (A string, which the test's compiler leaves alone: it would turn import() into require().)
      const percents = await viewer.evaluate<string[]>(
        `import('/assets/shared.js').then((shared) => [99.99, 12.36, 10, 0].map((value) => shared.formatPercent(value, 'en-US')))`,
      );
      expect(percents).toEqual(['99.9%', '12.3%', '10%', '']);
      expect(await watch.locator('.badge[data-status]').textContent()).toBe('On sale');
      expect(await watch.getAttribute('class')).toContain('showing');
      expect(await watch.getAttribute('aria-current')).toBe('true');
      expect(await watch.locator('img.thumb').getAttribute('src')).toMatch(new RegExp(`^${base}/media/`));
      expect(await watch.locator('img.thumb').evaluate((img: { complete: boolean; naturalWidth: number }) => img.complete && img.naturalWidth > 0)).toBe(true);
      // No discount, no struck-through price.
      expect(await card('mug').locator('.original').count()).toBe(0);
      expect(await card('mug').locator('.badge-discount').count()).toBe(0);
      // Fits the phone: nothing wider than the screen.
      expect(await viewer.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      // Even with a brand that has no place to break.
      const brand = 'SAMPLETECH_OFFICIAL_STORE_KOREA_GLOBAL_FLAGSHIP';
      expect((await api(`/v1/goods/${accessKey}`, { method: 'PUT', body: { id: goodsIds.mug, brand } })).status).toBe(200);
      await viewer.waitForFunction((b) => document.querySelector(`#goods li:last-child .brand`)?.textContent === b, brand);
      expect(await viewer.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      expect((await api(`/v1/goods/${accessKey}`, { method: 'PUT', body: { id: goodsIds.mug, brand: 'Potter & Co' } })).status).toBe(200);
      await viewer.waitForFunction(() => document.querySelector(`#goods li:last-child .brand`)?.textContent === 'Potter & Co');
    });

    it('operator starts the broadcast; the viewer sees it live', async () => {
      await operator.getByRole('button', { name: 'Start broadcast (ONAIR)' }).click();
      await viewer.waitForSelector('#campaign-status[data-status="ONAIR"]', { timeout: 2000 });
      expect(await viewer.locator('#campaign-status').textContent()).toBe('Live');
      await operator.waitForSelector('#campaign-status[data-status="ONAIR"]', { timeout: 2000 });
      expect(await operator.locator('#campaign-status').textContent()).toBe('ONAIR (live)');
      expect(await operator.getByRole('button', { name: 'Start broadcast (ONAIR)' }).isDisabled()).toBe(true);
      expect(await operator.getByRole('button', { name: 'End broadcast' }).isEnabled()).toBe(true);
    });

    it('operator marks an item SOLD_OUT: the viewer shows the badge within one second', async () => {
      const soldOut = row('watch').getByRole('button', { name: 'Sold out', exact: true });
      await soldOut.click();
      const clicked = Date.now();
      await viewer.waitForSelector(`#goods li[data-goods-id="${goodsIds.watch}"][data-status="SOLD_OUT"] .badge-sold-out`, { timeout: 1000 });
      expect(Date.now() - clicked).toBeLessThan(1000);
      expect(await card('watch').locator('.badge[data-status]').textContent()).toBe('Sold out');
      await viewer.waitForFunction(() => document.getElementById('announcer')?.textContent === 'Smart Watch 7: Sold out');
      await operator.waitForFunction(
        (id) => document.querySelector(`#cg-list li[data-goods-id="${id}"]`)?.getAttribute('data-status') === 'SOLD_OUT',
        goodsIds.watch,
      );
      expect(await soldOut.getAttribute('aria-pressed')).toBe('true');
    });

    it('operator pins a notice and posts a chat line; the viewer shows both', async () => {
      await operator.getByLabel('Message').fill('Free shipping until 9 pm tonight');
      await operator.getByRole('button', { name: 'Pin as notice' }).click();
      await viewer.waitForFunction(() => document.getElementById('notice-text')?.textContent === 'Free shipping until 9 pm tonight', undefined, {
        timeout: 2000,
      });
      expect(await viewer.locator('#notice').isVisible()).toBe(true);
      await operator.waitForSelector('#pinned:not([hidden])');

      await operator.getByLabel('Message').fill('Welcome, everyone!');
      await operator.getByRole('button', { name: 'Send chat line' }).click();
      await viewer.waitForFunction(() => /Welcome, everyone!/.test(document.getElementById('chat')?.textContent ?? ''), undefined, { timeout: 2000 });
      expect(await viewer.locator('#chat li').last().locator('.who').textContent()).toBe('Mina');
      // The console's own chat log follows the channel too.
      await operator.waitForFunction(() => /Welcome, everyone!/.test(document.getElementById('chat-log')?.textContent ?? ''));

      // A status change without notify, with a chat line: the line is pushed, the status is not.
      await operator.getByLabel('Notify viewers now').uncheck();
      await operator.getByLabel('Post a chat line with it (optional)').fill('Only a few shirts left!');
      await row('shirt').getByRole('button', { name: 'Almost sold out', exact: true }).click();
      await viewer.waitForFunction(() => /Only a few shirts left!/.test(document.getElementById('chat')?.textContent ?? ''), undefined, { timeout: 2000 });
      expect(await card('shirt').getAttribute('data-status')).toBe('ON_SALE');
      await operator.waitForFunction(
        (id) => document.querySelector(`#cg-list li[data-goods-id="${id}"]`)?.getAttribute('data-status') === 'ALMOST_SOLD_OUT',
        goodsIds.shirt,
      );
      expect(await operator.getByLabel('Post a chat line with it (optional)').inputValue()).toBe('');
      await operator.getByLabel('Notify viewers now').check();

      await shot(operator, 'console.png', true);
      await shot(viewer, 'viewer-mobile.png');
      await viewer.setViewportSize({ width: 1280, height: 800 });
      await shot(viewer, 'viewer-desktop.png');
      await viewer.setViewportSize({ width: 390, height: 844 });
      if (process.env.UPDATE_SCREENSHOTS === '1') {
        mkdirSync(DOCS_SHOTS, { recursive: true });
        await operator.evaluate('window.scrollTo(0, 0)');
        await operator.screenshot({ path: join(DOCS_SHOTS, 'console.png') });
        copyFileSync(join(ARTIFACTS, 'viewer-mobile.png'), join(DOCS_SHOTS, 'viewer.png'));
      }
    });

    it('a campaign edit and a catalog edit of one of its goods reach the viewer page live', async () => {
      const patched = await api(`/v1/console/${accessKey}/campaigns/${campaignKey}`, { method: 'PATCH', body: { title: 'Friday Night Deals: Extended' } });
      expect(patched.status).toBe(200);
      await viewer.waitForFunction(() => document.querySelector('h1')?.textContent === 'Friday Night Deals: Extended', undefined, { timeout: 2000 });
      const updated = await api(`/v1/goods/${accessKey}`, { method: 'PUT', body: { id: goodsIds.mug, name: 'Ceramic Mug Set of 4', discountedPrice: 15000 } });
      expect(updated.status).toBe(200);
      await viewer.waitForFunction(
        (id) => document.querySelector(`#goods li[data-goods-id="${id}"] .name`)?.textContent === 'Ceramic Mug Set of 4',
        goodsIds.mug,
        {
          timeout: 2000,
        },
      );
      const won = new Intl.NumberFormat(VIEWER_LOCALE, { style: 'currency', currency: 'KRW' }).format(15000);
      expect(await card('mug').locator('.price').textContent()).toBe(won);
      expect(await viewerNames()).toEqual(['Smart Watch 7', 'Linen Shirt', 'Ceramic Mug Set of 4']);
      // The console follows the channel too.
      await operator.waitForFunction(() => document.getElementById('campaign-title')?.textContent === 'Friday Night Deals: Extended');
    });

    it('a missed event opens a gap: the viewer page resyncs and applies the missed events once, in order', async () => {
      // Drop the next chat.message on the page's socket, as a lost packet would.
      await viewer.evaluate(() => {
        const socket = (window as LiveWindow).livegoods.live.socket;
        const [listener] = socket.listeners('chat.message');
        socket.off('chat.message');
        socket.once('chat.message', () => socket.on('chat.message', listener));
      });
      const resyncs = await viewer.evaluate(() => (window as LiveWindow).livegoods.live.stats.resyncs);
      const chat = (message: string) => api(`/v1/console/${accessKey}/campaigns/${campaignKey}/chat`, { method: 'POST', body: { message } });
      expect((await chat('First line (lost on the way)')).status).toBe(200);
      expect((await chat('Second line')).status).toBe(200);
      await viewer.waitForFunction(() => /Second line/.test(document.getElementById('chat')?.textContent ?? ''), undefined, { timeout: 15_000 });
      const lines = await viewer.locator('#chat li .text').allTextContents();
      expect(lines.slice(-2)).toEqual(['First line (lost on the way)', 'Second line']);
      expect(await viewer.evaluate(() => (window as LiveWindow).livegoods.live.stats.resyncs)).toBe(resyncs + 1);
    });

    it('the viewer page survives a server restart and catches up', async () => {
      const seqBefore = Number(await viewer.locator('body').getAttribute('data-seq'));
      expect(seqBefore).toBeGreaterThan(0);
      await app?.close();
      app = null;
      await viewer.waitForSelector('body:not([data-connection="live"])', { timeout: 10_000 });
      expect(await viewer.locator('#connection').textContent()).toMatch(/Reconnecting/);

      // A second instance on the same port and the same SQLite file; changes made before the page is back.
      app = await startApp(dataDir, port);
      const status = await api(`/v1/goods/${accessKey}/campaign/${campaignKey}/salesStatus/id`, {
        method: 'PUT',
        body: { goodsId: Number(goodsIds.mug), salesStatus: 'SOLD_OUT', chatMessage: 'Mugs are gone, thank you!' },
      });
      expect(status.status).toBe(200);

      await viewer.waitForSelector('body[data-connection="live"]', { timeout: 20_000 });
      await viewer.waitForSelector(`#goods li[data-goods-id="${goodsIds.mug}"][data-status="SOLD_OUT"]`, { timeout: 5000 });
      await viewer.waitForFunction(() => /Mugs are gone, thank you!/.test(document.getElementById('chat')?.textContent ?? ''), undefined, { timeout: 5000 });
      // The un-notified shirt status arrives with the fresh snapshot.
      expect(await card('shirt').getAttribute('data-status')).toBe('ALMOST_SOLD_OUT');
      // Nothing lost, nothing twice: the page is at the server's seq, chat lines appear once.
      const [{ lastSeq }] = await app.get(DataSource).query<Array<{ lastSeq: number }>>('SELECT lastSeq FROM campaigns WHERE campaignKey = ?', [campaignKey]);
      await viewer.waitForFunction((seq) => document.body.dataset.seq === String(seq), Number(lastSeq));
      expect(Number(lastSeq)).toBeGreaterThan(seqBefore);
      const chat = await viewer.locator('#chat li .text').allTextContents();
      expect(chat.filter((line) => line === 'Welcome, everyone!')).toHaveLength(1);

      // Live again: a change made now arrives at once.
      await api(`/v1/console/${accessKey}/campaigns/${campaignKey}/goods/${goodsIds.shirt}/showing`, { method: 'PUT', body: { showingNow: true } });
      await viewer.waitForSelector(`#goods li.showing[data-goods-id="${goodsIds.shirt}"]`, { timeout: 2000 });
      expect(await viewer.locator('#goods li.showing').count()).toBe(1);
      await shot(viewer, 'viewer-after-restart.png');

      // The operator page carries on against the new instance: end the broadcast (confirmed).
      await operator.getByRole('button', { name: 'End broadcast' }).click();
      await viewer.waitForSelector('#campaign-status[data-status="CLOSED"]', { timeout: 15_000 });
      expect(await viewer.locator('#ended').isVisible()).toBe(true);
      expect(await operator.getByRole('alert').isVisible()).toBe(false);
    });

    it('operator shows viewers the stock and sets the stock of an item: the status follows it on both pages', async () => {
      await operator.locator('#edit-show-stock').check();
      // The settings saved, and the page done with what follows, before the stock fields are filled: a
      // reload would clear them. The save reads the campaign's goods again, and so does the campaign.update
      // it causes (250 ms after the event, which under load can come after the network has gone quiet).
      let goodsReads = 0;
      const goodsPath = `/campaigns/${encodeURIComponent(campaignKey)}/goods`;
      const countRead = (r: Response) => {
        if (r.request().method() === 'GET' && new URL(r.url()).pathname.endsWith(goodsPath) && r.ok()) goodsReads += 1;
      };
      operator.on('response', countRead);
      try {
        await Promise.all([
          operator.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().includes(`/campaigns/${campaignKey}`) && r.ok()),
          operator.getByRole('button', { name: 'Save settings' }).click(),
        ]);
        for (let waited = 0; goodsReads < 2 && waited < 10_000; waited += 50) await operator.waitForTimeout(50);
        expect(goodsReads).toBeGreaterThanOrEqual(2);
        await operator.waitForLoadState('networkidle');
      } finally {
        operator.off('response', countRead);
      }
      await operator.locator(`#stock-${goodsIds.mug}`).fill('3');
      await operator.locator(`#threshold-${goodsIds.mug}`).fill('5');
      await row('mug').getByRole('button', { name: 'Set the stock of Ceramic Mug Set' }).click();
      await viewer.waitForSelector(`#goods li[data-goods-id="${goodsIds.mug}"][data-status="ALMOST_SOLD_OUT"]`, { timeout: 15_000 });
      await viewer.waitForFunction((id) => document.querySelector(`#goods li[data-goods-id="${id}"] .stock-left`)?.textContent === '3 left', goodsIds.mug, {
        timeout: 15_000,
      });
      await operator.waitForFunction(
        (id) => document.querySelector(`#cg-list li[data-goods-id="${id}"] [data-stock]`)?.textContent === 'Stock: 3 left (almost sold out at 5)',
        goodsIds.mug,
      );
      expect(await operator.locator(`#stock-${goodsIds.mug}`).inputValue()).toBe('3');
    });

    it('console: uploads a 30,000-row spreadsheet; the progress bar follows the import job to 100 %', async () => {
      const lines = ['sku,name,url,originalPrice'];
      for (let i = 1; i <= 30_000; i++) lines.push(`BULK-${i},Bulk item ${i},https://shop.example.com/bulk/${i},${1000 + i}`);
      lines.push('BULK-BAD,Bad price,https://shop.example.com/bulk/bad,not a price');
      await operator.locator('#import-file').setInputFiles({ name: 'bulk.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n')) });
      await Promise.all([
        operator.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/excel?async=true') && r.status() === 202),
        operator.getByRole('button', { name: 'Upload and import' }).click(),
      ]);
      await operator.waitForFunction(() => document.querySelector('#import-label')?.textContent === 'Import finished: 100 %', undefined, { timeout: 120_000 });
      expect(await operator.locator('#import-progress').evaluate((bar) => (bar as unknown as { value: number }).value)).toBe(100);
      expect(await operator.locator('#import-counts').textContent()).toBe('30,001 of 30,001 rows · 30,000 created · 0 updated · 1 failed');
      await expect(operator.getByRole('button', { name: 'Download failed rows (CSV)' }).isVisible()).resolves.toBe(true);
      mkdirSync(ARTIFACTS, { recursive: true });
      await operator
        .locator('#import-h')
        .locator('xpath=..')
        .screenshot({ path: join(ARTIFACTS, 'console-import.png') });
    }, 180_000);

    // ------------------------------------------------------------------------------------------
    // UI fixes: each test below stands alone (its own campaign, page and context where needed).

    const newCampaign = async (title: string, goodsKeys: string[] = []): Promise<string> => {
      const created = await api(`/v1/console/${accessKey}/campaigns`, { method: 'POST', body: { title } });
      expect(created.status).toBe(200);
      const key = (created.json as { campaignKey: string }).campaignKey;
      if (goodsKeys.length) {
        const added = await api(`/v1/console/${accessKey}/campaigns/${key}/goods`, {
          method: 'POST',
          body: { goodsIds: goodsKeys.map((k) => Number(goodsIds[k])) },
        });
        expect(added.status).toBe(200);
      }
      return key;
    };
    const signInConsole = async (page: Page, jwt: string) => {
      await page.goto(`${base}/console`);
      await page.getByLabel('Access key').fill(accessKey);
      await page.getByLabel('Token (JWT)').fill(jwt);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('#workspace').waitFor({ state: 'visible' });
    };
    const openInConsole = async (page: Page, title: string) => {
      await page.locator('#campaigns-body').getByRole('button', { name: title }).click();
      await page.waitForFunction((t) => document.getElementById('campaign-title')?.textContent === t, title);
    };

    it('console (no campaign open): an import poll that fails is tried again; the progress goes on to the end, the failure shown meanwhile goes; a job gone (404) ends the polling', async () => {
      const page = await operatorContext.newPage();
      watchErrors(page, 'console page (import polls)');
      await signInConsole(page, token);
      const poll = /\/excel\/jobs\/[^/?]+\?count=1$/;
      let polls = 0;
      let mode: 'fail-once' | 'pass' | 'gone' = 'fail-once';
      await page.route(
        (url) => poll.test(url.pathname + url.search),
        async (route) => {
          polls += 1;
          if (mode === 'gone') return route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ _s: -404, _e: 'No import job' }) });
          if (mode === 'fail-once') {
            mode = 'pass';
            return route.abort('failed'); // as when the service restarts: fetch() rejects (TypeError)
          }
          return route.continue();
        },
      );
      const upload = async (name: string) => {
        const lines = ['sku,name,url,originalPrice', `${name}-1,Poll item 1,https://shop.example.com/${name}/1,1000`];
        lines.push(`${name}-2,Poll item 2,https://shop.example.com/${name}/2,2000`, `${name}-BAD,Bad price,https://shop.example.com/${name}/bad,not a price`);
        await page.locator('#import-file').setInputFiles({ name: `${name}.csv`, mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n')) });
        await Promise.all([
          page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/excel?async=true') && r.status() === 202),
          page.getByRole('button', { name: 'Upload and import' }).click(),
        ]);
      };
      await upload('POLL');
      await page.waitForFunction(() =>
        /^Reading the import job failed: the service did not answer/.test(document.getElementById('error-text')?.textContent ?? ''),
      );
      // The next poll answers: the end state shows, and the failure leaves the alert box.
      await page.waitForFunction(() => document.getElementById('import-label')?.textContent === 'Import finished: 100 %', undefined, { timeout: 15_000 });
      expect(await page.locator('#import-counts').textContent()).toBe('3 of 3 rows · 2 created · 0 updated · 1 failed');
      expect(await page.getByRole('button', { name: 'Download failed rows (CSV)' }).isVisible()).toBe(true);
      expect(await page.locator('#error').isVisible()).toBe(false);
      expect(polls).toBeGreaterThanOrEqual(2);

      // A job that is gone: said once, and no more polls.
      mode = 'gone';
      polls = 0;
      await upload('GONE');
      await page.waitForFunction(() => /^Reading the import job failed: HTTP 404/.test(document.getElementById('error-text')?.textContent ?? ''));
      await page.waitForTimeout(3000);
      expect(polls).toBe(1);
      await page.close();
    });

    it('Swagger UI (/docs) and the OpenAPI document cannot be framed by another site, are not sniffed, and Authorize and "Try it out" work under their Content-Security-Policy', async () => {
      for (const path of ['/docs', '/docs/', '/docs/swagger-ui-init.js', '/docs/swagger-ui.css', '/docs-json', '/docs-yaml']) {
        const answer = await call(`${base}${path}`);
        expect([path, answer.status]).toEqual([path, 200]);
        expect([path, answer.headers.get('x-frame-options')]).toEqual([path, 'DENY']);
        expect([path, answer.headers.get('x-content-type-options')]).toEqual([path, 'nosniff']);
        const csp = answer.headers.get('content-security-policy') ?? '';
        expect([path, csp]).toEqual([path, expect.stringContaining("frame-ancestors 'none'")]);
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toMatch(/script-src[^;]*unsafe/);
      }
      const page = await operatorContext.newPage();
      watchErrors(page, 'Swagger UI');
      await page.goto(`${base}/docs`);
      await page.waitForSelector('.opblock', { timeout: 15_000 });
      await page.click('button.authorize');
      await page.locator('.modal-ux input').first().fill(token);
      await page.click('.modal-ux button.authorize');
      await page.click('.modal-ux .close-modal');
      const block = page.locator('[id$="-GoodsController_list"]').first();
      await block.locator('.opblock-summary').first().click();
      await block.locator('button.try-out__btn').click();
      await block.locator('input[placeholder="accessKey"]').fill(accessKey);
      await block.locator('button.execute').click();
      const status = block.locator('.live-responses-table tr.response .response-col_status').first();
      await status.waitFor({ timeout: 15_000 });
      expect((await status.textContent())?.trim()).toBe('200');
      // 200 with the token from Authorize (the list needs one), and the goods list it answered.
      expect(await block.locator('.live-responses-table').textContent()).toContain('"results"');
      await page.close();
    });

    it('console: a goods name with a 70-character word wraps; every Add button stays on screen, on a desktop and on a phone', async () => {
      const word = `Megabundle${'X'.repeat(60)}`;
      expect(word).toHaveLength(70);
      const created = await api(`/v1/goods/${accessKey}`, {
        method: 'POST',
        body: { name: `Gift box ${word} edition`, sku: 'LONG-WORD-1', url: 'https://shop.example.com/goods/LONG-WORD-1', originalPrice: 1000 },
      });
      expect(created.status).toBe(200);
      const title = 'Scheduled weekend broadcast';
      await newCampaign(title);
      const phoneContext = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, locale: VIEWER_LOCALE });
      try {
        for (const [page, width] of [
          [await operatorContext.newPage(), 1280],
          [await phoneContext.newPage(), 390],
        ] as const) {
          watchErrors(page, `console page ${width} px`);
          await signInConsole(page, token);
          // The campaign list: the title column is wide enough for its words ("Sched / uled" was broken).
          const wordLines = await page.evaluate(`(() => {
            const button = [...document.querySelectorAll('#campaigns-body button.linkish')].find((b) => b.textContent === ${JSON.stringify(title)});
            const range = document.createRange();
            range.setStart(button.firstChild, 0);
            range.setEnd(button.firstChild, 'Scheduled'.length);
            return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
          })()`);
          expect(wordLines).toBe(1);
          const overhang = await page.evaluate(
            '(() => { const t = document.getElementById("campaigns-table"); return t.getBoundingClientRect().right - t.closest(".card").getBoundingClientRect().right; })()',
          );
          expect(overhang).toBeLessThan(0); // the table stays inside its card
          await openInConsole(page, title);
          await page.getByLabel('Name, brand or goods code').fill('');
          await page.getByRole('button', { name: 'Search', exact: true }).click();
          await page.waitForFunction(() => document.querySelectorAll('#search-results li').length > 1);
          expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
          expect(await page.getByRole('button', { name: `Add Gift box ${word} edition to the campaign` }).count()).toBe(1);
          // Every Add button within the window (document coordinates: scrolled sideways, it would still count).
          const rightmost = await page.evaluate(
            '(() => Math.max(...[...document.querySelectorAll("#search-results li button")].map((b) => b.getBoundingClientRect().right + window.scrollX)))()',
          );
          expect(rightmost).toBeGreaterThan(0);
          expect(rightmost).toBeLessThanOrEqual(width);
          await shot(page, `console-long-word-${width}.png`, true);
          await page.close();
        }
      } finally {
        await phoneContext.close();
      }
    });

    it('console: a token that expires mid-session can be replaced in place; the open campaign and the access key stay', async () => {
      const title = 'Token renewal';
      const key = await newCampaign(title);
      const secret = Buffer.from(secretKey, 'base64');
      // exp 40 s ago: the service still takes it for 20 s (60 s clock skew), so the page signs in with it.
      const exp = Math.floor(Date.now() / 1000) - 40;
      const expiring = sign({ accessKey, name: 'Mina', exp }, secret, { algorithm: 'HS256' });
      const page = await operatorContext.newPage();
      watchErrors(page, 'console page (token renewal)');
      await signInConsole(page, expiring);
      expect(await page.locator('#whoami').textContent()).toMatch(/token valid until/);
      await openInConsole(page, title);
      expect(await page.locator('#campaign').getAttribute('data-campaign-key')).toBe(key);

      // Past exp + 60 s: the service ends the console's live channel, refuses it the operator role when it
      // comes back, and the page offers to paste a new token without being asked to do anything.
      const wait = (exp + 61) * 1000 - Date.now();
      if (wait > 0) await page.waitForTimeout(wait);
      await page.waitForFunction(() => /^Live updates failed: HTTP 401/.test(document.getElementById('error-text')?.textContent ?? ''), undefined, {
        timeout: 10_000,
      });
      expect(await page.locator('#error-text').textContent()).toMatch(/Token expired/);
      expect(await page.getByLabel('A fresh token, to carry on').isVisible()).toBe(true);
      // The next call of the API is refused with 401 too, and the offer stays.
      await page.getByRole('button', { name: 'Refresh', exact: true }).click();
      await page.waitForFunction(
        () =>
          /HTTP 401/.test(document.getElementById('error-text')?.textContent ?? '') &&
          !/^Live updates/.test(document.getElementById('error-text')?.textContent ?? ''),
      );
      expect(await page.locator('#error-text').textContent()).toMatch(/Token expired/);
      const fresh = page.getByLabel('A fresh token, to carry on');
      expect(await fresh.isVisible()).toBe(true);
      expect(await fresh.evaluate((node) => node === (document.activeElement as unknown))).toBe(true);
      expect(await page.locator('#whoami').getAttribute('data-token')).toBe('expired');
      expect(await page.locator('#whoami').textContent()).toMatch(/token expired at/);
      await shot(page, 'console-token-expired.png');

      // A token valid for two days: the header names the date, not only the time.
      const later = Math.floor(Date.now() / 1000) + 2 * 86_400;
      const renewed = sign({ accessKey, name: 'Mina', exp: later }, secret, { algorithm: 'HS256' });
      await fresh.fill(renewed);
      await page.getByRole('button', { name: 'Use this token' }).click();
      await page.waitForFunction(() => document.getElementById('flash')?.textContent === 'Token renewed');
      expect(await page.getByRole('alert').isVisible()).toBe(false);
      expect(await page.locator('#campaign').isVisible()).toBe(true);
      expect(await page.locator('#campaign').getAttribute('data-campaign-key')).toBe(key);
      const until = await page.evaluate(
        (ms) => new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(ms)),
        later * 1000,
      );
      expect(await page.locator('#whoami').textContent()).toBe(`Access key ${accessKey} · Mina · token valid until ${until}`);
      expect(await page.locator('#whoami').getAttribute('data-token')).toBe('valid');
      expect(JSON.parse((await page.evaluate(() => sessionStorage.getItem('livegoods.console'))) ?? '{}')).toEqual({ accessKey, token: renewed });
      // It works: a chat line goes out with the new token.
      await page.getByLabel('Message').fill('Back with a fresh token');
      await page.getByRole('button', { name: 'Send chat line' }).click();
      await page.waitForFunction(() => /Back with a fresh token/.test(document.getElementById('chat-log')?.textContent ?? ''));
      expect(await page.getByRole('alert').isVisible()).toBe(false);
      await page.close();
    });

    it('a campaign deleted while a viewer watches: its goods, prices, shop links and chat leave the page', async () => {
      const key = await newCampaign('Soon gone', ['watch', 'shirt']);
      expect((await api(`/v1/console/${accessKey}/campaigns/${key}/chat`, { method: 'POST', body: { message: 'Hello there' } })).status).toBe(200);
      const page = await viewerContext.newPage();
      watchErrors(page, 'viewer page (deleted)');
      await page.goto(`${base}/watch/${accessKey}/${key}`);
      await page.waitForFunction(() => document.querySelectorAll('#goods li').length === 2);
      await page.waitForFunction(() => /Hello there/.test(document.getElementById('chat')?.textContent ?? ''));
      expect((await api(`/v1/console/${accessKey}/campaigns/${key}`, { method: 'DELETE' })).status).toBe(200);
      await page.waitForFunction(() => document.getElementById('ended')?.textContent === 'This broadcast no longer exists.', undefined, { timeout: 15_000 });
      expect(await page.locator('#goods li').count()).toBe(0);
      expect(await page.locator('a[href^="https://shop.example.com"]').count()).toBe(0);
      expect(await page.locator('#chat li').count()).toBe(0);
      expect(await page.locator('#goods-section').isVisible()).toBe(false);
      expect(await page.locator('#chat-section').isVisible()).toBe(false);
      expect(await page.locator('#ended').isVisible()).toBe(true);
      // The link that skips to the goods goes with them (it is the first thing a keyboard reaches).
      expect(await page.locator('#skip').isVisible()).toBe(false);
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.getAttribute('id') ?? '')).not.toBe('skip');
      await page.close();
    });

    it('console: a campaign deleted elsewhere while it is open is closed at once, with word of it, and leaves the list', async () => {
      const key = await newCampaign('Deleted elsewhere', ['watch']);
      const page = await operatorContext.newPage();
      watchErrors(page, 'console page (deleted elsewhere)');
      await signInConsole(page, token);
      await openInConsole(page, 'Deleted elsewhere');
      await page.waitForSelector('#campaign-live[data-state="live"]');
      expect(await page.locator(`#campaigns-body tr[data-campaign-key="${key}"]`).count()).toBe(1);
      expect((await api(`/v1/console/${accessKey}/campaigns/${key}`, { method: 'DELETE' })).status).toBe(200);
      // Told by the live channel, without a reload (a generous wait: a CI machine may be loaded).
      await page.waitForFunction(() => /Deleted elsewhere.*was deleted/.test(document.getElementById('error-text')?.textContent ?? ''), undefined, {
        timeout: 15_000,
      });
      expect(await page.getByRole('alert').isVisible()).toBe(true);
      expect(await page.locator('#campaign').isVisible()).toBe(false);
      await page.waitForFunction((k) => !document.querySelector(`#campaigns-body tr[data-campaign-key="${k}"]`), key, { timeout: 15_000 });
      expect(await page.evaluate(() => (window as { location: { hash: string } }).location.hash)).toBe('');
      await page.close();
    });

    // Where the characters of `sub` (found in the text of `selector`) show on screen: [left of the first, left of the last].
    const placed = (page: Page, selector: string, sub: string) =>
      page.evaluate<[number, number] | null>(`((sel, sub) => {
        const root = document.querySelector(sel);
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        const nodes = [];
        let text = '';
        for (let n = walker.nextNode(); n; n = walker.nextNode()) { nodes.push([n, text.length]); text += n.data; }
        const at = text.indexOf(sub);
        if (at < 0) return null;
        const left = (i) => {
          const [node, start] = nodes.filter(([, s]) => s <= i).pop();
          const range = document.createRange();
          range.setStart(node, i - start);
          range.setEnd(node, i - start + 1);
          return range.getBoundingClientRect().left;
        };
        return [left(at), left(at + sub.length - 1)];
      })(${JSON.stringify(selector)}, ${JSON.stringify(sub)})`);

    it('user text with a right-to-left override (U+202E) does not reorder the text beside it: the goods code and price of a search result, the time of a chat line', async () => {
      const won = (n: number) => new Intl.NumberFormat(VIEWER_LOCALE, { style: 'currency', currency: 'KRW' }).format(n);
      const made = await api(`/v1/goods/${accessKey}`, {
        method: 'POST',
        body: { name: 'Bidi \u202eLamp', brand: 'Evil\u202eShop', sku: 'BIDI-1', url: 'https://shop.example.com/bidi-1', originalPrice: 5000 },
      });
      expect(made.status).toBe(200);
      const key = await newCampaign('Bidi chat');
      const page = await operatorContext.newPage();
      watchErrors(page, 'console page (bidi)');
      await signInConsole(page, token);
      await openInConsole(page, 'Bidi chat');
      await page.getByLabel('Name, brand or goods code').fill('BIDI-1');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForFunction(() => document.querySelectorAll('#search-results li').length === 1);
      const line = '#search-results li .info .small';
      for (const text of ['BIDI-1', won(5000)]) {
        const [first, last] = (await placed(page, line, text)) ?? [0, 0];
        expect([text, first < last]).toEqual([text, true]);
      }
      const sku = (await placed(page, line, 'BIDI-1')) ?? [0, 0];
      const price = (await placed(page, line, won(5000))) ?? [0, 0];
      expect(sku[1]).toBeLessThan(price[0]); // the goods code, then the price, as written
      await page.close();

      for (const message of ['price now \u202e $10 only', 'Second line']) {
        expect((await api(`/v1/console/${accessKey}/campaigns/${key}/chat`, { method: 'POST', body: { message } })).status).toBe(200);
      }
      const watcher = await viewerContext.newPage();
      watchErrors(watcher, 'viewer page (bidi)');
      await watcher.goto(`${base}/watch/${accessKey}/${key}`);
      await watcher.waitForFunction(() => document.querySelectorAll('#chat li').length === 2);
      const time = (await watcher.locator('#chat li:first-child time').textContent()) ?? '';
      expect(time.length).toBeGreaterThan(2);
      const [first, last] = (await placed(watcher, '#chat li:first-child', time)) ?? [0, 0];
      expect(first).toBeLessThan(last);
      await watcher.close();
    });

    it('console: the confirmation line after a status flip of goods with a 200-character unbroken name wraps; the page does not scroll sideways', async () => {
      const name = `W${'w'.repeat(199)}`;
      const made = await api(`/v1/goods/${accessKey}`, {
        method: 'POST',
        body: { name, sku: 'LONG-FLASH', url: 'https://shop.example.com/long-flash', originalPrice: 1000 },
      });
      expect(made.status).toBe(200);
      const id = String((made.json as { id: number }).id);
      const key = await newCampaign('Long flash');
      expect((await api(`/v1/console/${accessKey}/campaigns/${key}/goods`, { method: 'POST', body: { goodsIds: [Number(id)] } })).status).toBe(200);
      const page = await operatorContext.newPage();
      watchErrors(page, 'console page (long flash)');
      await signInConsole(page, token);
      await openInConsole(page, 'Long flash');
      await page.locator(`#cg-list li[data-goods-id="${id}"] button[data-status="ALMOST_SOLD_OUT"]`).click();
      await page.waitForFunction((n) => (document.getElementById('flash')?.textContent ?? '').startsWith(n), name);
      const viewport = await page.evaluate(() => (window as { innerWidth: number }).innerWidth);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport);
      await page.close();
    });

    it('line breaks in a chat line and a notice show as line breaks, on the viewer page and in the console', async () => {
      const key = await newCampaign('Two lines');
      const chat = await api(`/v1/console/${accessKey}/campaigns/${key}/chat`, { method: 'POST', body: { message: 'Line one\nLine two' } });
      expect(chat.status).toBe(200);
      const notice = await api(`/v1/console/${accessKey}/campaigns/${key}/chat`, { method: 'POST', body: { message: 'Notice one\nNotice two', pinned: true } });
      expect(notice.status).toBe(200);
      // innerText is the text as rendered: a line break that shows is "\n", one folded into a space is " ".
      const shown = (page: Page, selector: string) =>
        page
          .locator(selector)
          .first()
          .evaluate((node) => (node as unknown as { innerText: string }).innerText);
      const watcher = await viewerContext.newPage();
      watchErrors(watcher, 'viewer page (line breaks)');
      await watcher.goto(`${base}/watch/${accessKey}/${key}`);
      await watcher.waitForFunction(() => /Line one/.test(document.getElementById('chat')?.textContent ?? ''));
      expect(await shown(watcher, '#chat li .text')).toBe('Line one\nLine two');
      await watcher.waitForSelector('#notice:not([hidden])');
      expect(await shown(watcher, '#notice-text')).toBe('Notice one\nNotice two');
      await watcher.close();

      const page = await operatorContext.newPage();
      watchErrors(page, 'console page (line breaks)');
      await signInConsole(page, token);
      await openInConsole(page, 'Two lines');
      await page.waitForFunction(() => /Line one/.test(document.getElementById('chat-log')?.textContent ?? ''));
      expect(await shown(page, '#chat-log li')).toContain('Line one\nLine two');
      expect(await shown(page, '#pinned-text')).toBe('Notice one\nNotice two');
      await page.close();
    });

    it('viewer: a snapshot (as after a reconnect) keeps the chat lines on the page and only adds the new ones (role=log is not read again whole)', async () => {
      const key = await newCampaign('Chat kept');
      for (const message of ['First line', 'Second line']) {
        expect((await api(`/v1/console/${accessKey}/campaigns/${key}/chat`, { method: 'POST', body: { message } })).status).toBe(200);
      }
      const watcher = await viewerContext.newPage();
      watchErrors(watcher, 'viewer page (chat kept)');
      await watcher.goto(`${base}/watch/${accessKey}/${key}`);
      await watcher.waitForSelector('body[data-connection="live"]');
      await watcher.waitForFunction(() => document.querySelectorAll('#chat li').length === 2);
      // Count the chat lines taken off the page from here on.
      const snapshots = await watcher.evaluate<number>(`(() => {
        window.removedLines = 0;
        new MutationObserver((records) => records.forEach((r) => (window.removedLines += r.removedNodes.length))).observe(document.getElementById('chat'), { childList: true });
        return window.livegoods.live.stats.snapshots;
      })()`);
      // Offline, a third line is posted; back online, the join snapshot brings it.
      await watcher.evaluate(`window.livegoods.live.socket.disconnect()`);
      expect((await api(`/v1/console/${accessKey}/campaigns/${key}/chat`, { method: 'POST', body: { message: 'Third line' } })).status).toBe(200);
      await watcher.evaluate(`window.livegoods.live.socket.connect()`);
      await watcher.waitForFunction((n) => (window as LiveWindow).livegoods.live.stats.snapshots > n, snapshots);
      await watcher.waitForFunction(() => document.querySelectorAll('#chat li').length === 3);
      expect(await watcher.locator('#chat li .text').allTextContents()).toEqual(['First line', 'Second line', 'Third line']);
      expect(await watcher.evaluate<number>('window.removedLines')).toBe(0);
      await watcher.close();
    });

    it('a viewer page at an address no broadcast can have is a readable HTML 404, with the page policy', async () => {
      for (const path of [`/watch/${accessKey}/bad.key!`, `/watch/${'x'.repeat(65)}/AnyKey123`]) {
        const answer = await call(`${base}${path}`);
        expect(answer.status).toBe(404);
        expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
        expect(answer.headers.get('cache-control')).toBe('no-store');
        expect(answer.headers.get('content-security-policy')).toContain("script-src 'self'");
        expect(answer.text).toContain('This broadcast is not available');
        expect(answer.text).not.toContain('_s');
      }
      const page = await viewerContext.newPage();
      watchErrors(page, 'viewer page (malformed key)');
      const response = await page.goto(`${base}/watch/${accessKey}/%7B%22_s%22%7D`);
      expect(response?.status()).toBe(404);
      expect(await page.locator('h1').textContent()).toBe('This broadcast is not available');
      expect(await page.locator('#ended').textContent()).toMatch(/no broadcast at this address/);
      await page.close();
    });

    it('a viewer on another host name than the operator sees the thumbnails of goods added live (media links load from its own address)', async () => {
      const key = await newCampaign('Two host names');
      const page = await viewerContext.newPage();
      watchErrors(page, 'viewer page (localhost)');
      // The operator's calls go to 127.0.0.1; this viewer uses localhost (PUBLIC_BASE_URL is not set).
      await page.goto(`http://localhost:${port}/watch/${accessKey}/${key}`);
      await page.waitForSelector('body[data-connection="live"]');
      await page.waitForSelector('#campaign-status[data-status="READY"]');
      expect((await api(`/v1/console/${accessKey}/campaigns/${key}/goods`, { method: 'POST', body: { goodsIds: [Number(goodsIds.shirt)] } })).status).toBe(200);
      const img = page.locator(`#goods li[data-goods-id="${goodsIds.shirt}"] img.thumb`);
      await img.waitFor();
      const src = (await img.getAttribute('src')) ?? '';
      expect(src).toMatch(/^\/media\/[0-9a-f]{2}\/[0-9a-f]{64}-240(-up)?\.\w+$/);
      await page.waitForFunction(
        (id) => {
          const node = document.querySelector(`#goods li[data-goods-id="${id}"] img.thumb`) as unknown as { complete: boolean; naturalWidth: number } | null;
          return Boolean(node && node.complete && node.naturalWidth > 0);
        },
        goodsIds.shirt,
        { timeout: 5000 },
      );
      // The join snapshot names the viewer's own host: kept as it is, and loaded too.
      await page.reload();
      await page.waitForSelector(`#goods li[data-goods-id="${goodsIds.shirt}"] img.thumb`);
      expect(await img.getAttribute('src')).toBe(`http://localhost:${port}${src}`);
      await page.close();
    });

    it("the viewer page's live client applies a NOT_EXIST whatever its seq (below the snapshot's: a node that missed the last events), and only it", async () => {
      const page = await viewerContext.newPage();
      watchErrors(page, 'live client');
      await page.goto(`${base}/watch/${accessKey}/NoSuchCampaign2`);
      // As text: the page's own module, imported as the viewer page imports it (a function given to
      // evaluate would be compiled for Node, its import() turned into a require()).
      const applied = await page.evaluate(`(async () => {
        const { LiveClient } = await import('/assets/live-client.js');
        const seen = [];
        const client = new LiveClient({ onEvent: (type, payload) => seen.push([type, payload.seq]), onSnapshot: () => undefined });
        client.lastSeq = 11; // as after a snapshot at seq 11
        client.receive('chat.message', { seq: 5, message: 'old' }); // already reflected: ignored
        client.receive('campaign.status', { seq: 9, campaignStatus: 'ONAIR' }); // likewise
        client.receive('campaign.status', { seq: 2, campaignStatus: 'NOT_EXIST', startedAt: null, endedAt: null });
        return seen;
      })()`);
      expect(applied).toEqual([['campaign.status', 2]]);
      await page.close();
    });

    it('a viewer page of an unknown broadcast says so', async () => {
      const page = await viewerContext.newPage();
      watchErrors(page, 'unknown viewer page');
      await page.goto(`${base}/watch/${accessKey}/NoSuchCampaign1`);
      await page.waitForSelector('body[data-connection="offline"]');
      // In words for a viewer; the server's reason stays in data-detail for integrators.
      expect(await page.locator('#connection').textContent()).toBe('Offline');
      expect(await page.locator('#connection').getAttribute('data-detail')).toMatch(/not found/);
      expect(await page.locator('h1').textContent()).toBe('This broadcast is not available');
      expect(await page.locator('#ended').textContent()).toMatch(/^There is no broadcast at this address/);
      expect(await page.locator('#goods-section').isVisible()).toBe(false);
      expect(await page.locator('#chat-section').isVisible()).toBe(false);
      expect(await page.getByText('No messages yet.').isVisible()).toBe(false);
      expect(await page.locator('#skip').isVisible()).toBe(false);
      await page.close();
    });

    it('console: an item without a discounted price, or without any price, shows what it has (the API answers 0 for a price never set)', async () => {
      const won = (n: number) => new Intl.NumberFormat(VIEWER_LOCALE, { style: 'currency', currency: 'KRW' }).format(n);
      for (const body of [
        { name: 'Brass Lamp', sku: 'PR-LAMP', url: 'https://shop.example.com/pr-lamp', originalPrice: 5000 },
        { name: 'Brass Pebble', sku: 'PR-PEBBLE', url: 'https://shop.example.com/pr-pebble' },
      ]) {
        expect((await api(`/v1/goods/${accessKey}`, { method: 'POST', body })).status).toBe(200);
      }
      await operator.getByLabel('Name, brand or goods code').fill('Brass');
      await operator.getByRole('button', { name: 'Search', exact: true }).click();
      await operator.waitForFunction(() => document.querySelectorAll('#search-results li').length === 2);
      const texts = await operator.locator('#search-results li').allTextContents();
      const lamp = texts.find((t) => t.includes('Brass Lamp')) ?? '';
      const pebble = texts.find((t) => t.includes('Brass Pebble')) ?? '';
      expect(lamp).toContain(won(5000));
      expect(lamp).not.toContain(won(0));
      expect(lamp).not.toContain('was');
      expect(pebble).not.toContain(won(0));
    });

    it('no script errors and no Content-Security-Policy violations on the pages', () => {
      expect(pageErrors).toEqual([]);
    });
  });
}
