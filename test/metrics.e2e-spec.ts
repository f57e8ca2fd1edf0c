import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { closeAllViewers, eventually, listenOn, Viewer } from './support/live-client';
import { Family, parsePrometheusText, sumOf, valueOf } from './support/prometheus-text';
import { createTestApp, describeEngines, ENGINES, engineUnavailable, TestApp } from './support/test-app';

/**
 * GET /metrics: the Prometheus text format (checked by a strict parser and by `promtool check metrics`),
 * the families and values traffic leaves, METRICS_TOKEN, scrapes that change nothing, the rate-limit
 * exemption, and the Grafana dashboard's queries against what a node serves.
 */

const TOKEN = 'metrics-token-0123456789abcdef';
const ROOT = resolve(__dirname, '..');

function promtoolAvailable(): boolean {
  return spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** Metric names used by the dashboard's queries (histogram suffixes stripped). */
function dashboardMetrics(): string[] {
  const dashboard = JSON.parse(readFileSync(resolve(ROOT, 'docs/monitoring/grafana-dashboard.json'), 'utf8')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
  };
  const names = new Set<string>();
  for (const panel of dashboard.panels) {
    for (const target of panel.targets ?? []) {
      for (const m of target.expr.matchAll(/\b((?:livegoods|nodejs|process)_[a-zA-Z0-9_]+)/g)) names.add(m[1].replace(/_(bucket|sum|count)$/, ''));
    }
  }
  return [...names].sort();
}

describeEngines(
  'GET /metrics',
  __filename,
  (ctx) => {
    let base: string;
    const scrape = async (): Promise<{ text: string; families: Map<string, Family> }> => {
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      return { text, families: parsePrometheusText(text) };
    };

    beforeAll(async () => {
      base = await listenOn(ctx().app);
    });
    afterEach(() => closeAllViewers());

    it('asks for METRICS_TOKEN when it is set: 401 in the error shape without it or with another token', async () => {
      for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789abcdef' }, { authorization: TOKEN }] as Array<Record<string, string>>) {
        const res = await fetch(`${base}/metrics`, { headers });
        expect(res.status).toBe(401);
        const body = (await res.json()) as { _s: number; _e: string };
        expect(body._s).toBe(-102);
        expect(typeof body._e).toBe('string');
      }
      // The token twice, in two headers: refused (which one counts would depend on who reads them).
      const twice = await ctx()
        .http.get('/metrics')
        .set('Authorization', [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`] as unknown as string);
      expect(twice.status).toBe(401);
      expect(twice.body).toEqual({ _s: -102, _e: 'Missing bearer token: the request carries more than one Authorization header; send one' });
      // Any letter case of the scheme, as the API's tokens.
      expect((await ctx().http.get('/metrics').set('Authorization', `bearer ${TOKEN}`)).status).toBe(200);
    });

    it('counts the requests, goods rows, live sockets and events that traffic causes', async () => {
      const t = ctx();
      const c = await t.createCustomer();
      await t.http.get(`/v1/goods/${c.accessKey}`).set('Authorization', c.auth()).expect(200);
      await t.http.get(`/v1/goods/${c.accessKey}`).set('Authorization', 'Bearer not-a-token').expect(401);
      await t.http.get('/no/such/route').expect(404);
      const sync = await t.http
        .post(`/v1/goods/${c.accessKey}/sync`)
        .set('Authorization', c.auth())
        .send([
          { name: 'A', sku: 'M-1', url: 'https://shop.example.com/m1', originalPrice: 1000 },
          { name: 'B', sku: 'M-2', url: 'https://shop.example.com/m2', originalPrice: 1000 },
          { name: 'A2', sku: 'M-1', url: 'https://shop.example.com/m1', originalPrice: 900 },
          { sku: 'M-3' },
        ]);
      expect(sync.status).toBe(200);
      expect([sync.body.createCount, sync.body.updateCount, sync.body.failCount]).toEqual([2, 1, 1]);
      const created = await t.http
        .post(`/v1/goods/${c.accessKey}`)
        .set('Authorization', c.auth())
        .send({ name: 'C', sku: 'M-4', url: 'https://shop.example.com/m4', originalPrice: 10 });
      expect(created.status).toBe(200);
      await t.http
        .post(`/v1/goods/${c.accessKey}`)
        .set('Authorization', c.auth())
        .send({ name: 'dup', sku: 'M-4', url: 'https://shop.example.com/m5' })
        .expect(409);

      // A viewer and an operator console on a campaign; a status change is published and delivered.
      const campaign = await t.http.post(`/v1/console/${c.accessKey}/campaigns`).set('Authorization', c.auth()).send({ title: 'Metrics live' });
      expect(campaign.status).toBe(200);
      const key = campaign.body.campaignKey as string;
      const viewer = await Viewer.connect(base, { accessKey: c.accessKey, campaignKey: key });
      await Viewer.connect(base, { accessKey: c.accessKey, campaignKey: key, role: 'operator', token: c.token() });
      await t.http.put(`/v1/console/${c.accessKey}/campaigns/${key}/status`).set('Authorization', c.auth()).send({ campaignStatus: 'ONAIR' }).expect(200);
      await viewer.waitFor((e) => e.type === 'campaign.status', 5000);

      // (SQLite: the checkpointer tells the WAL's length every 25 ms.)
      const { families } = await eventually(
        scrape,
        (s) =>
          (valueOf(s.families, 'livegoods_live_delivery_latency_seconds_count') ?? 0) >= 1 &&
          (t.engine === 'mysql' || (valueOf(s.families, 'livegoods_sqlite_wal_bytes') ?? 0) > 0),
      );
      const count = (route: string, status: string, method = 'GET') =>
        valueOf(families, 'livegoods_http_request_duration_seconds_count', { method, route, status });
      expect(count('/v1/goods/:accessKey', '200')).toBe(1);
      expect(count('/v1/goods/:accessKey', '401')).toBe(1);
      expect(count('unmatched', '404')).toBe(1);
      expect(count('/v1/goods/:accessKey/sync', '200', 'POST')).toBe(1);
      // No label value ever carries a URL's own values.
      for (const s of families.get('livegoods_http_request_duration_seconds')?.samples ?? []) {
        expect(s.labels.route).not.toContain(c.accessKey);
        expect(s.labels.route).not.toContain('no/such');
      }
      expect(families.get('livegoods_http_requests_in_flight')?.type).toBe('gauge');
      expect(valueOf(families, 'livegoods_goods_rows_written_total', { source: 'sync', outcome: 'CREATE' })).toBe(2);
      expect(valueOf(families, 'livegoods_goods_rows_written_total', { source: 'sync', outcome: 'UPDATE' })).toBe(1);
      expect(valueOf(families, 'livegoods_goods_rows_written_total', { source: 'sync', outcome: 'FAIL' })).toBe(1);
      expect(valueOf(families, 'livegoods_goods_rows_written_total', { source: 'api', outcome: 'CREATE' })).toBe(1);
      expect(valueOf(families, 'livegoods_goods_rows_written_total', { source: 'api', outcome: 'FAIL' })).toBe(1);
      expect(valueOf(families, 'livegoods_live_sockets', { role: 'viewer' })).toBe(1);
      expect(valueOf(families, 'livegoods_live_sockets', { role: 'operator' })).toBe(1);
      expect(valueOf(families, 'livegoods_live_events_published_total')).toBeGreaterThanOrEqual(1);
      expect(valueOf(families, 'livegoods_live_events_delivered_total')).toBeGreaterThanOrEqual(1);
      expect(families.get('livegoods_live_delivery_latency_seconds')?.type).toBe('histogram');
      expect(families.get('livegoods_media_fetches_total')?.type).toBe('counter');
      expect(families.get('livegoods_work_refusals_total')?.type).toBe('counter');
      expect(valueOf(families, 'livegoods_work_slots', { work: 'image', state: 'limit' })).toBe(2);
      expect(valueOf(families, 'livegoods_work_slots', { work: 'spreadsheet', state: 'limit' })).toBe(2);
      expect(valueOf(families, 'livegoods_work_slots', { work: 'image', state: 'waiting' })).toBe(0);
      expect(families.get('livegoods_rate_limit_refusals_total')?.type).toBe('counter');
      expect(valueOf(families, 'livegoods_event_loop_delay_seconds', { stat: 'p99' })).toBeGreaterThanOrEqual(0);
      expect(valueOf(families, 'process_cpu_seconds_total')).toBeGreaterThan(0);
      expect(valueOf(families, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      // Dropped: gauges named *_total (promtool refuses them) and the lag gauges a scrape resets.
      for (const name of families.keys()) expect(name).not.toMatch(/^nodejs_active_\w+_total$|^nodejs_eventloop_lag/);
      if (t.engine === 'mysql') {
        expect(valueOf(families, 'livegoods_db_pool_connections', { state: 'max' })).toBe(10);
        expect(valueOf(families, 'livegoods_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
        expect(valueOf(families, 'livegoods_db_pool_connections', { state: 'waiting' })).toBe(0);
        expect(families.has('livegoods_sqlite_wal_bytes')).toBe(false);
      } else {
        expect(families.get('livegoods_db_pool_connections')?.samples ?? []).toEqual([]);
        // The writes above went to the WAL (whole 4 kB pages), which nothing started over since.
        const wal = valueOf(families, 'livegoods_sqlite_wal_bytes') ?? 0;
        expect(wal).toBeGreaterThan(0);
        expect(wal % 4096).toBe(0);
      }
    });

    it('passes promtool check metrics', async () => {
      if (!promtoolAvailable()) {
        if (process.env.REQUIRE_SERVICES === '1') throw new Error('promtool is required (REQUIRE_SERVICES=1): apt-get install prometheus');
        console.warn('promtool not installed: skipping promtool check metrics');
        return;
      }
      const { text } = await scrape();
      const run = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(`${run.stdout}${run.stderr}`.trim()).toBe('');
      expect(run.status).toBe(0);
    });

    it('scrapes change nothing: counters keep counting, no method but GET is routed', async () => {
      const first = await scrape();
      const second = await scrape();
      await ctx().http.get('/health').expect(200);
      for (const name of ['livegoods_http_request_duration_seconds_count', 'process_cpu_seconds_total']) {
        expect(sumOf(second.families, name)).toBeGreaterThanOrEqual(sumOf(first.families, name));
        expect(sumOf(second.families, name)).toBeGreaterThan(0);
      }
      for (const method of ['post', 'put', 'delete'] as const) {
        await ctx().http[method]('/metrics').set('Authorization', `Bearer ${TOKEN}`).expect(404);
      }
      const json = await ctx().http.get('/health/metrics').expect(200);
      expect(Object.keys(json.body).sort()).toEqual(['eventLoopDelayMs', 'heapUsedMb', 'rssMb', 'uptimeSeconds']);
    });

    it('serves every metric the Grafana dashboard queries', async () => {
      const { families } = await scrape();
      // Declared by the node (a labelled family without traffic yet, or the pool on SQLite, has no samples).
      const missing = dashboardMetrics().filter((name) => !families.has(name));
      expect(missing).toEqual([]);
      expect(dashboardMetrics().length).toBeGreaterThan(10);
    });
  },
  { METRICS_TOKEN: TOKEN },
);

describe('docs/monitoring/prometheus.yml', () => {
  it('passes promtool check config', () => {
    if (!promtoolAvailable()) {
      if (process.env.REQUIRE_SERVICES === '1') throw new Error('promtool is required (REQUIRE_SERVICES=1): apt-get install prometheus');
      console.warn('promtool not installed: skipping promtool check config');
      return;
    }
    const run = spawnSync('promtool', ['check', 'config', resolve(ROOT, 'docs/monitoring/prometheus.yml')], { encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`).toContain('SUCCESS');
    expect(run.status).toBe(0);
  });
});

// Rate limits on: a refusal is counted by limit, and /metrics itself is never refused.
for (const engine of ENGINES) {
  const down = engineUnavailable(engine);
  const skip = down && process.env.REQUIRE_SERVICES !== '1';
  (skip ? describe.skip : describe)(`GET /metrics with rate limits [${engine}]`, () => {
    let t: TestApp | undefined;
    afterAll(async () => {
      await t?.close();
    });

    it('counts refusals by limit and never refuses a scrape', async () => {
      if (down) throw new Error(`${engine} required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
      t = await createTestApp(engine, `${__filename}-limits`, { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_IP: '3', RATE_LIMIT_WINDOW_MS: '60000' });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i += 1) statuses.push((await t.http.get('/v1/campaigns/nobody-1234567890')).status);
      expect(statuses.filter((s) => s === 429).length).toBe(2);
      for (let i = 0; i < 5; i += 1) await t.http.get('/metrics').expect(200);
      const families = parsePrometheusText((await t.http.get('/metrics').expect(200)).text);
      expect(valueOf(families, 'livegoods_rate_limit_refusals_total', { limit: 'ip' })).toBe(2);
    });
  });
}
