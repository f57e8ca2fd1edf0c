import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import ExcelJS from 'exceljs';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { CustomersService } from '../src/customers/customers.service';
import { WebhookDelivery } from '../src/webhooks/entities/webhook-delivery.entity';
import { WebhookEndpoint } from '../src/webhooks/entities/webhook-endpoint.entity';
import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher';
import { verifySignature } from '../src/webhooks/webhook-signature';
import { expectError, expectOk, keys, liveHarness } from './support/live-harness';
import { xlsx } from './support/sheet-fixtures';
import { buildApp, describeEngines, dropDatabase, engineUnavailable, ENGINES, TestCustomer, testConfig } from './support/test-app';
import { useWebhookReceivers, WebhookReceiver } from './support/webhook-receiver';

/** Webhooks (docs/webhooks.md): the console routes, signed deliveries, retries, replays, address rules, restarts. */

const FAST = {
  WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true',
  WEBHOOK_RETRY_BASE_MS: '100',
  WEBHOOK_RETRY_MAX_DELAY_MS: '400',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_TIMEOUT_MS: '5000',
};

const WEBHOOK_KEYS = ['active', 'createdAt', 'description', 'events', 'updatedAt', 'url', 'webhookId'];
const DELIVERY_KEYS = [
  'attempts',
  'createdAt',
  'deliveryId',
  'durationMs',
  'error',
  'eventId',
  'eventType',
  'finishedAt',
  'lastAttemptAt',
  'nextAttemptAt',
  'payload',
  'state',
  'statusCode',
  'webhookId',
];

describeEngines(
  'webhooks',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const receiver = useWebhookReceivers();

    const wpath = (c: TestCustomer, rest = '') => `/v1/console/${c.accessKey}/webhooks${rest}`;
    const api = (c: TestCustomer) => ({
      create: (body: Record<string, unknown>) => ctx().http.post(wpath(c)).set('Authorization', c.auth()).send(body),
      list: () => ctx().http.get(wpath(c)).set('Authorization', c.auth()),
      get: (id: unknown) =>
        ctx()
          .http.get(wpath(c, `/${String(id)}`))
          .set('Authorization', c.auth()),
      patch: (id: unknown, body: Record<string, unknown>) =>
        ctx()
          .http.patch(wpath(c, `/${String(id)}`))
          .set('Authorization', c.auth())
          .send(body),
      remove: (id: unknown) =>
        ctx()
          .http.delete(wpath(c, `/${String(id)}`))
          .set('Authorization', c.auth()),
      rotate: (id: unknown) =>
        ctx()
          .http.post(wpath(c, `/${String(id)}/secret`))
          .set('Authorization', c.auth()),
      deliveries: (id: unknown, query: Record<string, unknown> = {}) =>
        ctx()
          .http.get(wpath(c, `/${String(id)}/deliveries`))
          .query(query)
          .set('Authorization', c.auth()),
      replay: (id: unknown, deliveryId: unknown) =>
        ctx()
          .http.post(wpath(c, `/${String(id)}/deliveries/${String(deliveryId)}/replay`))
          .set('Authorization', c.auth()),
    });

    async function subscribe(c: TestCustomer, r: WebhookReceiver, events: string[] = ['goods.salesStatus']): Promise<{ webhookId: number; secret: string }> {
      const res = await api(c).create({ url: r.url(), events });
      expectOk(res);
      return res.body as { webhookId: number; secret: string };
    }

    const salesStatus = (c: TestCustomer, key: string, goodsId: unknown, status: string) =>
      ctx().http.put(`/v1/goods/${c.accessKey}/campaign/${key}/salesStatus/id`).set('Authorization', c.auth()).send({ goodsId, salesStatus: status });

    describe('endpoints', () => {
      it('registers an endpoint and shows its secret once; list, get, patch, rotate and delete', async () => {
        const c = await ctx().createCustomer();
        const created = await api(c).create({
          url: 'https://shop.example.com/hooks',
          events: ['goods.salesStatus', 'campaign.status'],
          description: ' Orders ',
        });
        expectOk(created);
        expect(keys(created.body)).toEqual([...WEBHOOK_KEYS, 'secret'].sort());
        expect(created.body).toMatchObject({
          url: 'https://shop.example.com/hooks',
          events: ['goods.salesStatus', 'campaign.status'],
          active: true,
          description: 'Orders',
        });
        expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
        const id = created.body.webhookId as number;

        const listed = await api(c).list();
        expectOk(listed);
        expect(listed.body).toMatchObject({ totalCount: 1, _s: 0 });
        expect(keys(listed.body.results[0])).toEqual(WEBHOOK_KEYS);

        const got = await api(c).get(id);
        expectOk(got);
        expect(keys(got.body)).toEqual(WEBHOOK_KEYS);

        const patched = await api(c).patch(id, { active: false, events: ['campaign.stockDepleted'], description: null });
        expectOk(patched);
        expect(patched.body).toMatchObject({ active: false, events: ['campaign.stockDepleted'], description: null, url: 'https://shop.example.com/hooks' });
        expect((await api(c).get(id)).body).toMatchObject({ active: false, events: ['campaign.stockDepleted'] });
        // null for a field that cannot be cleared (the events, url, active) leaves it as it is.
        const kept = await api(c).patch(id, { events: null, url: null, active: null, description: 'Orders' });
        expectOk(kept);
        expect(kept.body).toMatchObject({ active: false, events: ['campaign.stockDepleted'], url: 'https://shop.example.com/hooks', description: 'Orders' });

        const rotated = await api(c).rotate(id);
        expectOk(rotated);
        expect(rotated.body.secret).toMatch(/^whsec_/);
        expect(rotated.body.secret).not.toBe(created.body.secret);

        const removed = await api(c).remove(id);
        expectOk(removed);
        expect(removed.body).toEqual({ _s: 0 });
        expectError(await api(c).get(id), 404, -404);
        expectError(await api(c).remove(id), 404, -404);
      });

      it('refuses bad input in the one error shape, naming each bad field', async () => {
        const c = await ctx().createCustomer();
        const missing = await api(c).create({});
        expectError(missing, 400, -510);
        expect(missing.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['events', 'url']);
        for (const body of [
          { url: 'ftp://shop.example.com/x', events: ['goods.salesStatus'] },
          { url: 'not a url', events: ['goods.salesStatus'] },
          { url: 'https://shop.example.com/x', events: [] },
          { url: 'https://shop.example.com/x', events: ['goods.nope'] },
          { url: 'https://shop.example.com/x', events: 'goods.salesStatus' },
          { url: 'https://shop.example.com/x', events: ['goods.salesStatus', 'goods.salesStatus'] },
          { url: 'https://shop.example.com/x', events: ['goods.salesStatus'], active: 'maybe' },
          { url: 'https://user:pw@shop.example.com/x', events: ['goods.salesStatus'] },
          { url: `https://shop.example.com/${'x'.repeat(2050)}`, events: ['goods.salesStatus'] },
        ]) {
          const res = await api(c).create(body);
          expectError(res, 400, -510);
          expect(res.body.errors.length).toBeGreaterThan(0);
        }
        expectError(await api(c).get('abc'), 400, -510);
        expectError(await api(c).deliveries(1, { state: 'lost' }), 400, -510);
        expect((await api(c).list()).body.totalCount).toBe(0);
      });

      it("never shows or changes another customer's endpoint (404)", async () => {
        const a = await ctx().createCustomer();
        const b = await ctx().createCustomer();
        const { webhookId } = (await api(a).create({ url: 'https://a.example.com/h', events: ['campaign.status'] })).body as { webhookId: number };
        expectError(await api(b).get(webhookId), 404, -404);
        expectError(await api(b).patch(webhookId, { active: false }), 404, -404);
        expectError(await api(b).rotate(webhookId), 404, -404);
        expectError(await api(b).deliveries(webhookId), 404, -404);
        expectError(await api(b).remove(webhookId), 404, -404);
        expect((await api(a).get(webhookId)).body.active).toBe(true);
      });

      it('allows at most 20 endpoints per customer (413 -413)', async () => {
        const c = await ctx().createCustomer();
        for (let i = 0; i < 20; i += 1) expectOk(await api(c).create({ url: `https://shop.example.com/h${i}`, events: ['campaign.status'] }));
        expectError(await api(c).create({ url: 'https://shop.example.com/h21', events: ['campaign.status'] }), 413, -413);
      });

      it('keeps to 20 endpoints under 40 concurrent creates (each counts after the others committed)', async () => {
        const c = await ctx().createCustomer();
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) => api(c).create({ url: `https://shop.example.com/c${i}`, events: ['campaign.status'] })),
        );
        const statuses = results.map((res) => res.status);
        expect(statuses.filter((s) => s === 201 || s === 200)).toHaveLength(20);
        expect(statuses.filter((s) => s === 413)).toHaveLength(20);
        expect((await api(c).list()).body.totalCount).toBe(20);
      });
    });

    describe('deliveries', () => {
      it('POSTs a signed goods.salesStatus after the change, with the event id and type headers, and logs it', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        const { webhookId, secret } = await subscribe(c, r);
        const { key, goods } = await live.liveCampaign(c, 1);
        const goodsId = goods[0].id as number;

        expectOk(await salesStatus(c, key, goodsId, 'SOLD_OUT'));
        await r.until('the delivery', () => r.received.length === 1);
        const got = r.received[0];
        expect(got.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(got.headers['livegoods-event-type']).toBe('goods.salesStatus');
        expect(got.headers['livegoods-event-id']).toBe(got.event.id);
        expect(got.event.id).toMatch(/^evt_[0-9a-f]{32}$/);
        expect(verifySignature(secret, got.headers['livegoods-signature'] as string, got.body)).toBe(true);
        expect(verifySignature('whsec_other', got.headers['livegoods-signature'] as string, got.body)).toBe(false);
        expect(got.event).toMatchObject({
          type: 'goods.salesStatus',
          data: { campaignKey: key, goodsId: String(goodsId), salesStatus: 'SOLD_OUT', previousSalesStatus: 'ON_SALE', source: 'manual' },
        });

        // The same status again changes nothing: no event.
        expectOk(await salesStatus(c, key, goodsId, 'SOLD_OUT'));
        let log = await api(c).deliveries(webhookId);
        for (let i = 0; i < 100 && log.body.results[0]?.state !== 'delivered'; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          log = await api(c).deliveries(webhookId);
        }
        expectOk(log);
        expect(log.body.totalCount).toBe(1);
        expect(keys(log.body.results[0])).toEqual(DELIVERY_KEYS);
        expect(log.body.results[0]).toMatchObject({
          webhookId,
          eventId: got.event.id,
          eventType: 'goods.salesStatus',
          state: 'delivered',
          attempts: 1,
          statusCode: 200,
          error: null,
          nextAttemptAt: null,
        });
        expect(log.body.results[0].payload).toEqual(got.event);
      });

      it('retries a failing receiver with backoff until it answers 2xx, then stops (valid signature on every try)', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        r.behaviour = (_event, nth) => (nth <= 3 ? 503 : 204);
        const { webhookId, secret } = await subscribe(c, r);
        const { key, goods } = await live.liveCampaign(c, 1);
        expectOk(await salesStatus(c, key, goods[0].id, 'ALMOST_SOLD_OUT'));

        await r.until('four tries', () => r.received.length >= 4);
        for (const got of r.received) expect(verifySignature(secret, got.headers['livegoods-signature'] as string, got.body)).toBe(true);
        expect(new Set(r.received.map((x) => x.event.id)).size).toBe(1);
        let row = (await api(c).deliveries(webhookId)).body.results[0];
        for (let i = 0; i < 100 && row.state !== 'delivered'; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          row = (await api(c).deliveries(webhookId)).body.results[0];
        }
        expect(row).toMatchObject({ state: 'delivered', attempts: 4, statusCode: 204, error: null });
        // Later polls leave a delivered row alone.
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(r.received).toHaveLength(4);
        // The tries are counted by outcome on /metrics (this suite's other tests add to the counts).
        const metrics = (await ctx().http.get('/metrics')).text;
        const counted = (outcome: string) => Number(new RegExp(`^livegoods_webhook_deliveries_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(metrics)?.[1]);
        expect(counted('retry')).toBeGreaterThanOrEqual(3);
        expect(counted('delivered')).toBeGreaterThanOrEqual(1);
      });

      it('logs a failed try with its status and error, and when the next one is due', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        r.behaviour = () => 500;
        const { webhookId } = await subscribe(c, r);
        const { key, goods } = await live.liveCampaign(c, 1);
        expectOk(await salesStatus(c, key, goods[0].id, 'SOLD_OUT'));
        await r.until('a try', () => r.received.length >= 1);
        let row = (await api(c).deliveries(webhookId)).body.results[0];
        for (let i = 0; i < 200 && !(row.state === 'pending' && row.attempts >= 1); i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          row = (await api(c).deliveries(webhookId)).body.results[0];
        }
        expect(row).toMatchObject({ state: 'pending', statusCode: 500, error: 'HTTP 500', finishedAt: null });
        expect(row.nextAttemptAt).toBeGreaterThanOrEqual(row.lastAttemptAt);
        expect(row.durationMs).toEqual(expect.any(Number));
        expectOk(await api(c).patch(webhookId, { active: false }));
      });

      it('sends a delivery whose claim expired (its node died mid-send) again', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        const { webhookId } = await subscribe(c, r, ['campaign.status']);
        const past = new Date(Date.now() - 60_000);
        await ctx().dataSource.getRepository(WebhookDelivery).insert({
          customerId: c.id,
          endpointId: webhookId,
          eventId: 'evt_orphaned',
          eventType: 'campaign.status',
          body: '{"id":"evt_orphaned","type":"campaign.status","createdAt":0,"data":{}}',
          state: 'sending',
          attempts: 1,
          nextAttemptAt: past,
          claimToken: 'claim-of-a-dead-node',
          createdAt: new Date(),
          lastAttemptAt: past,
        });
        await r.until('the orphaned delivery', () => r.received.some((x) => x.event.id === 'evt_orphaned'));
        let row = (await api(c).deliveries(webhookId)).body.results[0];
        for (let i = 0; i < 100 && row.state !== 'delivered'; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          row = (await api(c).deliveries(webhookId)).body.results[0];
        }
        expect(row).toMatchObject({ eventId: 'evt_orphaned', state: 'delivered', attempts: 2 });
      });

      it('replays a delivery: the same body and event id again, as a new delivery in the log', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        const { webhookId, secret } = await subscribe(c, r);
        const { key, goods } = await live.liveCampaign(c, 1);
        expectOk(await salesStatus(c, key, goods[0].id, 'SOLD_OUT'));
        await r.until('the delivery', () => r.received.length === 1);
        const original = (await api(c).deliveries(webhookId)).body.results[0];

        const replayed = await api(c).replay(webhookId, original.deliveryId);
        expectOk(replayed);
        expect(keys(replayed.body)).toEqual(DELIVERY_KEYS);
        expect(replayed.body).toMatchObject({ eventId: original.eventId, state: 'pending', attempts: 0 });
        expect(replayed.body.deliveryId).not.toBe(original.deliveryId);
        await r.until('the replay', () => r.received.length === 2);
        expect(r.received[1].body).toBe(r.received[0].body);
        expect(verifySignature(secret, r.received[1].headers['livegoods-signature'] as string, r.received[1].body)).toBe(true);
        expect((await api(c).deliveries(webhookId)).body.totalCount).toBe(2);
        // The documented query template, state left empty: all states, as if it were left out.
        const template = await api(c).deliveries(webhookId, { page: 1, count: 30, state: '' });
        expectOk(template);
        expect(template.body.totalCount).toBe(2);
        expect((await api(c).deliveries(webhookId, { state: 'failed' })).body.totalCount).toBe(0);

        expectError(await api(c).replay(webhookId, 999_999_999), 404, -404);
        const other = await ctx().createCustomer();
        expectError(await api(other).replay(webhookId, original.deliveryId), 404, -404);
      });

      it('campaign.stockDepleted also when an item marked SOLD_OUT by hand runs out of stock (no status change): once', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        await subscribe(c, r, ['goods.salesStatus', 'campaign.stockDepleted']);
        const { key, goods } = await live.liveCampaign(c, 1);
        const goodsId = goods[0].id as number;
        const stockPath = `/v1/goods/${c.accessKey}/campaign/${key}/stock/id`;
        expectOk(await ctx().http.put(stockPath).set('Authorization', c.auth()).send({ goodsId, stock: 1 }));
        expectOk(await salesStatus(c, key, goodsId, 'SOLD_OUT'));
        const taken = await ctx().http.post(`${stockPath}/decrement`).set('Authorization', c.auth()).send({ goodsId });
        expectOk(taken);
        expect(taken.body).toMatchObject({ stock: 0, salesStatus: 'SOLD_OUT' });
        expectError(await ctx().http.post(`${stockPath}/decrement`).set('Authorization', c.auth()).send({ goodsId }), 409, -409);

        await r.until('both events', () => r.of('goods.salesStatus').length >= 1 && r.of('campaign.stockDepleted').length >= 1);
        const rows = await ctx()
          .dataSource.getRepository(WebhookDelivery)
          .find({ where: { customerId: c.id } });
        expect(rows.map((d) => d.eventType).sort()).toEqual(['campaign.stockDepleted', 'goods.salesStatus']);
        expect(r.of('goods.salesStatus')[0].event.data).toMatchObject({ salesStatus: 'SOLD_OUT', previousSalesStatus: 'ON_SALE', source: 'manual' });
        expect(r.of('campaign.stockDepleted')[0].event.data).toMatchObject({ campaignKey: key, goodsId: String(goodsId), sku: goods[0].sku });
      });

      it('sends campaign.status, stock-derived goods.salesStatus, campaign.stockDepleted and import.completed, each only to subscribers', async () => {
        const c = await ctx().createCustomer();
        const all = await receiver();
        const onlyStatus = await receiver();
        await subscribe(c, all, ['goods.salesStatus', 'campaign.status', 'campaign.stockDepleted', 'import.completed']);
        await subscribe(c, onlyStatus, ['campaign.status']);
        const { key, goods } = await live.liveCampaign(c, 1);
        const goodsId = goods[0].id as number;
        const stockPath = `/v1/goods/${c.accessKey}/campaign/${key}/stock/id`;

        expectOk(await ctx().http.put(`/v1/console/${c.accessKey}/campaigns/${key}/status`).set('Authorization', c.auth()).send({ campaignStatus: 'ONAIR' }));
        expectOk(await ctx().http.put(stockPath).set('Authorization', c.auth()).send({ goodsId, stock: 2 }));
        expectOk(await ctx().http.post(`${stockPath}/decrement`).set('Authorization', c.auth()).send({ goodsId, quantity: 2 }));
        const sheet = await xlsx([
          ['sku', 'url', 'name'],
          ['IMP-1', 'https://shop.example.com/imp/1', 'Imported'],
          ['IMP-2', 'not a url', 'Broken'],
        ] as ExcelJS.CellValue[][]);
        // A dry run applies nothing, so it announces nothing: it comes first, and only the real import is sent.
        expectOk(await ctx().http.post(`/v1/goods/${c.accessKey}/excel?dryRun=true`).set('Authorization', c.auth()).attach('file', sheet, 'dry-run.xlsx'));
        expectOk(await ctx().http.post(`/v1/goods/${c.accessKey}/excel`).set('Authorization', c.auth()).attach('file', sheet, 'goods.xlsx'));

        await all.until('four events', () => all.received.length >= 4);
        await all.until('the import event', () => all.of('import.completed').length >= 1);
        expect(all.of('import.completed').map((x) => (x.event.data as { fileName: string }).fileName)).toEqual(['goods.xlsx']);
        await onlyStatus.until('the status event', () => onlyStatus.received.length >= 1);
        expect(all.of('campaign.status')[0].event.data).toMatchObject({ campaignKey: key, campaignStatus: 'ONAIR', previousStatus: 'READY', endedAt: null });
        expect(all.of('goods.salesStatus')[0].event.data).toMatchObject({
          goodsId: String(goodsId),
          salesStatus: 'SOLD_OUT',
          previousSalesStatus: 'ON_SALE',
          source: 'stock',
        });
        expect(all.of('campaign.stockDepleted')[0].event.data).toMatchObject({ campaignKey: key, goodsId: String(goodsId), sku: goods[0].sku });
        expect(all.of('import.completed')[0].event.data).toMatchObject({
          source: 'spreadsheet',
          fileName: 'goods.xlsx',
          total: 2,
          created: 1,
          updated: 0,
          failed: 1,
        });
        expect(onlyStatus.received.map((x) => x.event.type)).toEqual(['campaign.status']);
      });

      it('an import job records import.completed (source job) with the state it ended in', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        await subscribe(c, r, ['import.completed']);
        const sheet = await xlsx([
          ['sku', 'url', 'name'],
          ['JOB-1', 'https://shop.example.com/job/1', 'Queued'],
          ['JOB-2', 'https://shop.example.com/job/2', 'Queued too'],
        ] as ExcelJS.CellValue[][]);
        const queued = await ctx()
          .http.post(`/v1/goods/${c.accessKey}/excel`)
          .query({ async: 'true' })
          .set('Authorization', c.auth())
          .attach('file', sheet, 'jobs.xlsx');
        expect(queued.status).toBe(202);
        await r.until('the job event', () => r.received.length >= 1, 60_000);
        expect(r.received[0].event.data).toMatchObject({
          source: 'job',
          jobId: queued.body.jobId,
          state: 'succeeded',
          fileName: 'jobs.xlsx',
          total: 2,
          created: 2,
          updated: 0,
          failed: 0,
          error: null,
        });
      });

      it('records nothing for a refused change, nor for an inactive endpoint', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        const { webhookId } = await subscribe(c, r, ['goods.salesStatus', 'campaign.status']);
        const { key, goods } = await live.liveCampaign(c, 1);
        // READY → CLOSED is refused (422): nothing was recorded.
        expectError(
          await ctx().http.put(`/v1/console/${c.accessKey}/campaigns/${key}/status`).set('Authorization', c.auth()).send({ campaignStatus: 'CLOSED' }),
          422,
          -422,
        );
        expectOk(await api(c).patch(webhookId, { active: false }));
        expectOk(await salesStatus(c, key, goods[0].id, 'SOLD_OUT'));
        expect((await api(c).deliveries(webhookId)).body.totalCount).toBe(0);
      });

      it('prunes delivered and failed deliveries older than WEBHOOK_RETENTION_DAYS, keeping the rest', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        const { webhookId } = await subscribe(c, r, ['campaign.status']);
        const repo = ctx().dataSource.getRepository(WebhookDelivery);
        const old = new Date(Date.now() - 8 * 86_400_000);
        const recent = new Date(Date.now() - 86_400_000);
        const row = (eventId: string, state: 'delivered' | 'failed' | 'pending', finishedAt: Date | null) => ({
          customerId: c.id,
          endpointId: webhookId,
          eventId,
          eventType: 'campaign.status',
          body: '{}',
          state,
          attempts: 1,
          nextAttemptAt: new Date(Date.now() + 86_400_000),
          createdAt: old,
          finishedAt,
        });
        await repo.insert([
          row('evt_old_ok', 'delivered', old),
          row('evt_old_failed', 'failed', old),
          row('evt_recent', 'delivered', recent),
          row('evt_waiting', 'pending', null),
        ]);
        expect(await ctx().app.get(WebhookDispatcher).prune()).toBeGreaterThanOrEqual(2);
        const left = (await repo.find({ where: { endpointId: webhookId } })).map((d) => d.eventId).sort();
        expect(left).toEqual(['evt_recent', 'evt_waiting']);
      });

      it('a receiver that hangs does not hold up the requests that cause events', async () => {
        const c = await ctx().createCustomer();
        const r = await receiver();
        r.behaviour = () => 'hang';
        await subscribe(c, r);
        const { key, goods } = await live.liveCampaign(c, 2);
        expectOk(await salesStatus(c, key, goods[0].id, 'SOLD_OUT'));
        await r.until('a held request', () => r.hanging >= 1);
        // The receiver still holds the first delivery, unanswered, when the next change has been answered.
        expectOk(await salesStatus(c, key, goods[1].id, 'SOLD_OUT'));
        expect(r.hanging).toBeGreaterThanOrEqual(1);
        expect(
          await ctx()
            .dataSource.getRepository(WebhookDelivery)
            .count({ where: { customerId: c.id } }),
        ).toBe(2);
      });

      it('refuses at send time an address that became private (the row is bypassed into the database)', async () => {
        // A second app without private hosts, on its own database, to see the send-time check.
        const setup = await testConfig(ctx().engine, `${__filename}-strict`, {});
        const app = await buildApp(setup.config);
        await app.init();
        const r = await receiver();
        try {
          const c = await app.get(CustomersService).create('Strict', 'KRW');
          const ds = app.get(DataSource);
          const now = new Date();
          const endpoint = await ds.getRepository(WebhookEndpoint).save({
            customerId: c.id,
            url: `https://127.0.0.1:${r.port}/hook`,
            events: 'goods.salesStatus',
            active: true,
            description: null,
            secret: 'whsec_x',
            createdAt: now,
            updatedAt: now,
          });
          await ds.getRepository(WebhookDelivery).insert({
            customerId: c.id,
            endpointId: endpoint.id,
            eventId: 'evt_test',
            eventType: 'goods.salesStatus',
            body: '{"id":"evt_test","type":"goods.salesStatus","createdAt":0,"data":{}}',
            state: 'pending',
            attempts: 0,
            nextAttemptAt: now,
            createdAt: now,
          });
          let row: { state: string; lastError: string | null; attempts: number } | undefined;
          for (let i = 0; i < 200 && !row?.lastError; i += 1) {
            await new Promise((resolve) => setTimeout(resolve, 25));
            [row] = await ds.query('SELECT state, lastError, attempts FROM webhook_deliveries WHERE eventId = ?', ['evt_test']);
          }
          expect(row?.lastError).toMatch(/^refused: url may not point at a loopback address/);
          expect(row?.state).toBe('pending');
          expect(r.received).toHaveLength(0);
        } finally {
          await app.close();
          rmSync(setup.dataDir, { recursive: true, force: true });
          if (ctx().engine === 'mysql') await dropDatabase(setup.database);
        }
      });
    });
  },
  FAST,
);

/**
 * Endpoint pauses (the breaker, docs/webhooks.md Retries) against the retry window: a first pause of
 * 10–20 s (WEBHOOK_RETRY_BASE_MS 20 s) outlasts the 8 s window, and one send at a time per endpoint.
 */
const PAUSES = {
  WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true',
  WEBHOOK_RETRY_BASE_MS: '20000',
  WEBHOOK_RETRY_WINDOW: '8',
  WEBHOOK_ENDPOINT_CONCURRENCY: '1',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_TIMEOUT_MS: '5000',
};
const PAUSED_PAST_WINDOW = 'not tried: the endpoint was paused past the retry window';

describeEngines(
  'webhook endpoint pauses',
  __filename.replace('.e2e-spec', '-pauses.e2e-spec'),
  (ctx) => {
    const live = liveHarness(ctx);
    const receiver = useWebhookReceivers();
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const deliveries = () => ctx().dataSource.getRepository(WebhookDelivery);
    const endpoints = () => ctx().dataSource.getRepository(WebhookEndpoint);
    const rows = (endpointId: number) => deliveries().find({ where: { endpointId }, order: { id: 'ASC' } });

    async function subscribe(c: TestCustomer, url: string): Promise<number> {
      const res = await ctx()
        .http.post(`/v1/console/${c.accessKey}/webhooks`)
        .set('Authorization', c.auth())
        .send({ url, events: ['goods.salesStatus'] });
      expectOk(res);
      return res.body.webhookId as number;
    }

    const soldOut = (c: TestCustomer, key: string, goodsId: unknown) =>
      ctx().http.put(`/v1/goods/${c.accessKey}/campaign/${key}/salesStatus/id`).set('Authorization', c.auth()).send({ goodsId, salesStatus: 'SOLD_OUT' });

    /** A delivery row written straight into the outbox. */
    const row = (c: TestCustomer, endpointId: number, fields: Partial<WebhookDelivery>) => {
      const eventId = `evt_${randomBytes(16).toString('hex')}`;
      return {
        customerId: c.id,
        endpointId,
        eventId,
        eventType: 'goods.salesStatus',
        body: JSON.stringify({ id: eventId, type: 'goods.salesStatus', createdAt: Date.now(), data: {} }),
        state: 'pending' as const,
        attempts: 0,
        nextAttemptAt: new Date(),
        createdAt: new Date(),
        ...fields,
      };
    };

    async function until(what: string, check: () => Promise<boolean>, limitMs: number): Promise<void> {
      const end = Date.now() + limitMs;
      while (!(await check())) {
        if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
        await sleep(50);
      }
    }

    it('a pause that outlasts the retry window fails at once the deliveries it holds and those recorded during it (untried ones say why)', async () => {
      const c = await ctx().createCustomer();
      const r = await receiver();
      r.behaviour = () => 500;
      const webhookId = await subscribe(c, r.url());
      // Recorded earlier, not due yet, its window ending before the coming pause does: the pause gives it up.
      await deliveries().insert(row(c, webhookId, { createdAt: new Date(Date.now() - 2000), nextAttemptAt: new Date(Date.now() + 4000) }));
      const { key, goods } = await live.liveCampaign(c, 9);
      for (const g of goods.slice(0, 8)) expectOk(await soldOut(c, key, g.id));
      await r.until('five failed tries', () => r.received.length >= 5);
      await until('the pause', async () => ((await endpoints().findOneByOrFail({ id: webhookId })).pausedUntil?.getTime() ?? 0) > Date.now(), 3000);
      // Recorded during the pause, which ends after this event's window does.
      expectOk(await soldOut(c, key, goods[8].id));
      await until('every delivery given up', async () => (await rows(webhookId)).every((d) => d.state === 'failed'), 3000);
      const all = await rows(webhookId);
      expect(all).toHaveLength(10);
      for (const d of all) {
        expect(d.finishedAt).not.toBeNull();
        expect(d.lastError).toBe(d.attempts === 0 ? PAUSED_PAST_WINDOW : 'HTTP 500');
        // A delivery given up untried (claimed, maybe, then handed back) was never tried.
        expect(d.lastAttemptAt === null).toBe(d.attempts === 0);
      }
      expect(all.filter((d) => d.attempts === 0)).toHaveLength(5);
      expect(r.received).toHaveLength(5);
    });

    it('never starts a try after its retry window, whatever made it due (here a lease that ended after it)', async () => {
      const c = await ctx().createCustomer();
      const r = await receiver();
      const webhookId = await subscribe(c, r.url());
      const past = new Date(Date.now() - 9000);
      await deliveries().insert([
        row(c, webhookId, {
          state: 'sending',
          attempts: 1,
          claimToken: 'claim-of-a-dead-node',
          createdAt: past,
          lastAttemptAt: past,
          nextAttemptAt: new Date(Date.now() - 100),
        }),
        row(c, webhookId, { createdAt: past, nextAttemptAt: new Date(Date.now() - 100) }),
      ]);
      await until('both given up', async () => (await rows(webhookId)).every((d) => d.state === 'failed'), 3000);
      const [expired, untried] = await rows(webhookId);
      expect(expired).toMatchObject({ attempts: 1, lastError: 'not tried: the retry window had ended', lastAttemptAt: past });
      // Claimed, then given up without a try: the time of the last real try stays (none here).
      expect(untried).toMatchObject({ attempts: 0, lastError: 'not tried: the retry window had ended', lastAttemptAt: null });
      await sleep(300);
      expect(r.received).toHaveLength(0);
    });

    it('makes no sixth try once five in a row have failed, even before their outcomes are written', async () => {
      const c = await ctx().createCustomer();
      const r = await receiver();
      r.behaviour = () => 500;
      const webhookId = await subscribe(c, r.url());
      // All due at once: a claim queues several on the node, each started as soon as the one before ends.
      await deliveries().insert(Array.from({ length: 8 }, () => row(c, webhookId, {})));
      await r.until('five failed tries', () => r.received.length >= 5);
      await sleep(1500);
      expect(r.received.map((x) => x.headers['livegoods-delivery-id'])).toHaveLength(5);
    });

    it('changing the url ends the pause: the deliveries it held, and one recorded during it, are sent at once', async () => {
      const c = await ctx().createCustomer();
      const failing = await receiver();
      failing.behaviour = () => 500;
      const fixed = await receiver();
      const webhookId = await subscribe(c, failing.url());
      const pausedUntil = new Date(Date.now() + 6000);
      await endpoints().update({ id: webhookId }, { failureStreak: 5, pausedUntil });
      await deliveries().insert(row(c, webhookId, { nextAttemptAt: pausedUntil }));
      const { key, goods } = await live.liveCampaign(c, 1);
      expectOk(await soldOut(c, key, goods[0].id));
      expect((await rows(webhookId)).map((d) => d.nextAttemptAt.getTime())).toEqual([pausedUntil.getTime(), pausedUntil.getTime()]);

      expectOk(await ctx().http.patch(`/v1/console/${c.accessKey}/webhooks/${webhookId}`).set('Authorization', c.auth()).send({ url: fixed.url() }));
      await fixed.until('both deliveries at the new address', () => fixed.received.length >= 2, 2000);
      expect(failing.received).toHaveLength(0);
      expect(await endpoints().findOneByOrFail({ id: webhookId })).toMatchObject({ failureStreak: 0, pausedUntil: null });
    });

    it('a delivered try (sent before the pause began) ends the pause: the deliveries it held are sent at once', async () => {
      const c = await ctx().createCustomer();
      const r = await receiver();
      let answer: (status: number) => void = () => undefined;
      r.behaviour = () => new Promise<number>((resolve) => (answer = resolve));
      const webhookId = await subscribe(c, r.url());
      const { key, goods } = await live.liveCampaign(c, 1);
      expectOk(await soldOut(c, key, goods[0].id));
      await r.until('the first try', () => r.received.length === 1);
      // While it is in flight the endpoint's breaker opens (as another node's tries could make it) and holds a delivery.
      const pausedUntil = new Date(Date.now() + 6000);
      await endpoints().update({ id: webhookId }, { failureStreak: 5, pausedUntil });
      await deliveries().insert(row(c, webhookId, { nextAttemptAt: pausedUntil }));
      r.behaviour = () => 200;
      answer(200);
      await r.until('the held delivery', () => r.received.length >= 2, 2000);
      expect(await endpoints().findOneByOrFail({ id: webhookId })).toMatchObject({ failureStreak: 0, pausedUntil: null });
    });
  },
  PAUSES,
);

/**
 * The breaker's pause steps (docs/webhooks.md Retries): with WEBHOOK_RETRY_BASE_MS 2 s the pauses are
 * 1–2 s, then 2–4 s, then 4–8 s, however many tries were under way (three sends at a time per endpoint)
 * when the breaker opened.
 */
describeEngines(
  'webhook breaker steps',
  __filename.replace('.e2e-spec', '-breaker-steps.e2e-spec'),
  (ctx) => {
    const receiver = useWebhookReceivers();
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    it('pauses exactly one step longer each time, tries under way when it opened counting for none of the pauses', async () => {
      const c = await ctx().createCustomer();
      const r = await receiver();
      // Slow failures: three tries overlap, and the sixth is under way when the fifth opens the breaker.
      r.behaviour = () => sleep(150).then(() => 500);
      const res = await ctx()
        .http.post(`/v1/console/${c.accessKey}/webhooks`)
        .set('Authorization', c.auth())
        .send({ url: r.url(), events: ['goods.salesStatus'] });
      expectOk(res);
      const webhookId = res.body.webhookId as number;
      const now = new Date();
      await ctx()
        .dataSource.getRepository(WebhookDelivery)
        .insert(
          Array.from({ length: 9 }, (_, i) => ({
            customerId: c.id,
            endpointId: webhookId,
            eventId: `evt_${String(i).padStart(32, '0')}`,
            eventType: 'goods.salesStatus',
            body: JSON.stringify({ id: `evt_${i}`, type: 'goods.salesStatus', createdAt: now.getTime(), data: {} }),
            state: 'pending' as const,
            attempts: 0,
            nextAttemptAt: now,
            createdAt: now,
          })),
        );
      // Each new pausedUntil, as first seen: the pause it set is at least (pausedUntil − seen), and at
      // most that plus one poll.
      const pauses: number[] = [];
      let last = 0;
      const end = Date.now() + 30_000;
      while (pauses.length < 3 && Date.now() < end) {
        const e = await ctx().dataSource.getRepository(WebhookEndpoint).findOneByOrFail({ id: webhookId });
        const seen = Date.now();
        const until = e.pausedUntil?.getTime() ?? 0;
        if (until > seen && until !== last) {
          pauses.push(until - seen);
          last = until;
        }
        await sleep(15);
      }
      expect(pauses).toHaveLength(3);
      const steps = [
        [1000, 2000],
        [2000, 4000],
        [4000, 8000],
      ];
      pauses.forEach((p, i) => {
        expect(p).toBeLessThanOrEqual(steps[i][1]);
        expect(p).toBeGreaterThan(steps[i][0] - 200);
      });
    }, 60_000);
  },
  {
    WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true',
    WEBHOOK_RETRY_BASE_MS: '2000',
    WEBHOOK_RETRY_MAX_DELAY_MS: '64000',
    WEBHOOK_ENDPOINT_CONCURRENCY: '3',
    WEBHOOK_POLL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '5000',
  },
);

describeEngines('webhook address rules (private hosts not allowed)', __filename.replace('.e2e-spec', '-strict-rules.e2e-spec'), (ctx) => {
  it('refuses http, loopback, private, link-local and metadata targets with 400 -510 on url', async () => {
    const c = await ctx().createCustomer();
    for (const url of [
      'http://shop.example.com/hook',
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      'https://10.1.2.3/hook',
      'https://192.168.0.10/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://100.100.100.200/hook',
    ]) {
      const res = await ctx()
        .http.post(`/v1/console/${c.accessKey}/webhooks`)
        .set('Authorization', c.auth())
        .send({ url, events: ['campaign.status'] });
      expectError(res, 400, -510);
      expect(res.body.errors).toEqual([{ field: 'url', message: expect.stringMatching(/^url (must be an https URL|may not point at)/) }]);
    }
    expectOk(
      await ctx()
        .http.post(`/v1/console/${c.accessKey}/webhooks`)
        .set('Authorization', c.auth())
        .send({ url: 'https://93.184.215.14/hook', events: ['campaign.status'] }),
    );
  });
});

/**
 * A restart of the sending node: the first app fails to deliver (the receiver answers 500), closes
 * mid-retry; a new app on the same database delivers it, exactly once, and never again after.
 */
for (const engine of ENGINES) {
  const down = engineUnavailable(engine);
  (down && process.env.REQUIRE_SERVICES !== '1' ? describe.skip : describe)(`webhooks across a restart [${engine}]`, () => {
    it('a delivery recorded before the restart arrives after it, exactly once', async () => {
      if (down) throw new Error(`${engine} required but unavailable: ${down}`);
      const setup = await testConfig(engine, __filename.replace('.e2e-spec', '-restart.e2e-spec'), FAST);
      const r = await WebhookReceiver.start();
      r.behaviour = () => 500;
      let app = await buildApp(setup.config);
      try {
        await app.init();
        const c = await app.get(CustomersService).create('Restart', 'KRW');
        const { sign } = await import('jsonwebtoken');
        const auth = () => `Bearer ${sign({ accessKey: c.accessKey }, Buffer.from(c.secretKey, 'base64'), { algorithm: 'HS256', expiresIn: 3600 })}`;
        const http = () => request(app.getHttpServer());
        expectOk(
          await http()
            .post(`/v1/console/${c.accessKey}/webhooks`)
            .set('Authorization', auth())
            .send({ url: r.url(), events: ['campaign.status'] }),
        );
        const campaign = await http().post(`/v1/console/${c.accessKey}/campaigns`).set('Authorization', auth()).send({ title: 'Restart' });
        expectOk(campaign);
        expectOk(
          await http()
            .put(`/v1/console/${c.accessKey}/campaigns/${campaign.body.campaignKey}/status`)
            .set('Authorization', auth())
            .send({ campaignStatus: 'ONAIR' }),
        );
        await r.until('a failed try', () => r.received.length >= 1);
        await app.close();
        const triesBefore = r.received.length;

        r.behaviour = () => 200;
        app = await buildApp(setup.config);
        await app.init();
        await r.until('the delivery after the restart', () => r.received.length > triesBefore);
        const eventId = r.received[0].event.id;
        expect(r.received.every((x) => x.event.id === eventId)).toBe(true);
        // Delivered: the following polls leave it alone.
        await new Promise((resolve) => setTimeout(resolve, 600));
        expect(r.received).toHaveLength(triesBefore + 1);
        const [row] = await app.get(DataSource).query('SELECT state, attempts FROM webhook_deliveries');
        expect(row.state).toBe('delivered');
        expect(Number(row.attempts)).toBe(triesBefore + 1);
      } finally {
        await app.close();
        await r.close();
        rmSync(setup.dataDir, { recursive: true, force: true });
        if (engine === 'mysql') await dropDatabase(setup.database);
      }
    });
  });
}
