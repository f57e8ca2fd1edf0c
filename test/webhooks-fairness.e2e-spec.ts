import { WebhookDelivery } from '../src/webhooks/entities/webhook-delivery.entity';
import { WebhookEndpoint } from '../src/webhooks/entities/webhook-endpoint.entity';
import { BREAKER_THRESHOLD } from '../src/webhooks/webhook-breaker';
import { MAX_WEBHOOKS_PER_CUSTOMER } from '../src/webhooks/webhooks.service';
import { expectOk, liveHarness } from './support/live-harness';
import { describeEngines, TestCustomer } from './support/test-app';
import { useWebhookReceivers } from './support/webhook-receiver';

/**
 * Webhooks of one customer cannot hold up another's (docs/webhooks.md, Fairness): claims are shared
 * round-robin over customers and endpoints, an endpoint and a customer hold only some of a node's send
 * slots, and an endpoint that keeps failing is paused (its circuit breaker) without losing a delivery.
 */
describeEngines(
  'webhook fairness between customers',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const receiver = useWebhookReceivers();

    const subscribe = async (c: TestCustomer, url: string) => {
      const res = await ctx()
        .http.post(`/v1/console/${c.accessKey}/webhooks`)
        .set('Authorization', c.auth())
        .send({ url, events: ['goods.salesStatus'] });
      expectOk(res);
      return res.body as { webhookId: number };
    };
    const salesStatus = (c: TestCustomer, key: string, goodsId: unknown, status: string) =>
      ctx().http.put(`/v1/goods/${c.accessKey}/campaign/${key}/salesStatus/id`).set('Authorization', c.auth()).send({ goodsId, salesStatus: status });

    it("a customer whose receivers hang, with a backlog of hundreds of deliveries, does not delay another's", async () => {
      const hanging = await receiver();
      hanging.behaviour = () => 'hang';
      const healthy = await receiver();
      const a = await ctx().createCustomer();
      const b = await ctx().createCustomer();
      for (let i = 0; i < MAX_WEBHOOKS_PER_CUSTOMER; i += 1) await subscribe(a, hanging.url(`/hook/${i}`));
      await subscribe(b, healthy.url());
      const campA = await live.liveCampaign(a, 1);
      const campB = await live.liveCampaign(b, 1);

      // 15 changes of A: 300 deliveries to receivers that never answer (each try holds its slot for
      // WEBHOOK_TIMEOUT_MS), all due before B's.
      for (let i = 0; i < 15; i += 1) expectOk(await salesStatus(a, campA.key, campA.goods[0].id, i % 2 ? 'ON_SALE' : 'SOLD_OUT'));
      await hanging.until('A holding send slots', () => hanging.hanging >= 1);
      expectOk(await salesStatus(b, campB.key, campB.goods[0].id, 'SOLD_OUT'));

      // Sent oldest first for the whole node, B's delivery would wait for A's 300 tries, 16 at a time,
      // 20 s each: minutes. The deadline only has to tell "promptly" from that.
      await healthy.until("B's delivery", () => healthy.received.length === 1, 15_000);
      expect(healthy.received[0].event.type).toBe('goods.salesStatus');
      // A's receivers hold at most the customer's share of the node's slots (WEBHOOK_CUSTOMER_CONCURRENCY).
      expect(hanging.hanging).toBeLessThanOrEqual(4);
      // A's deliveries are still there, to be tried on their schedule.
      const left = await ctx()
        .dataSource.getRepository(WebhookDelivery)
        .count({ where: { customerId: a.id } });
      expect(left).toBe(15 * MAX_WEBHOOKS_PER_CUSTOMER);
    });

    it('a backlog of thousands of due deliveries is read through the endpoint index: claimed oldest first, another customer still served', async () => {
      const slow = await receiver();
      const healthy = await receiver();
      const a = await ctx().createCustomer();
      const b = await ctx().createCustomer();
      await subscribe(a, slow.url());
      await subscribe(b, healthy.url());
      const campA = await live.liveCampaign(a, 1);
      const campB = await live.liveCampaign(b, 1);
      expectOk(await salesStatus(a, campA.key, campA.goods[0].id, 'SOLD_OUT'));
      await slow.until("A's first delivery", () => slow.received.length === 1, 15_000);
      const deliveries = ctx().dataSource.getRepository(WebhookDelivery);
      const model = await deliveries.findOneOrFail({ where: { customerId: a.id } });
      // More due rows than the first read counts one by one (2,000), each its own event, oldest first by index.
      const backlog = 2500;
      const start = Date.now() - 3_600_000;
      const rows = Array.from({ length: backlog }, (_, i) => {
        const event = { ...(JSON.parse(model.body) as Record<string, unknown>), id: `backlog-${i}` };
        return {
          customerId: model.customerId,
          endpointId: model.endpointId,
          eventId: `backlog-${i}`,
          eventType: model.eventType,
          body: JSON.stringify(event),
          state: 'pending' as const,
          attempts: 0,
          nextAttemptAt: new Date(start + i * 1000),
          createdAt: new Date(),
        };
      });
      // In one transaction: the dispatcher finds none of it or all of it due.
      await ctx().dataSource.transaction(async (em) => {
        for (let i = 0; i < rows.length; i += 400) await em.insert(WebhookDelivery, rows.slice(i, i + 400));
      });
      expectOk(await salesStatus(b, campB.key, campB.goods[0].id, 'SOLD_OUT'));
      await healthy.until("B's delivery", () => healthy.received.length === 1, 15_000);
      await slow.until('some of the backlog', () => slow.received.filter((r) => String(r.event.id).startsWith('backlog-')).length >= 20, 30_000);
      // Claimed oldest first: the first 20 of the backlog received are among its oldest 40 (two sends at a
      // time, eight claimed at a time, may reorder neighbours).
      const firstIds = slow.received
        .map((r) => String(r.event.id))
        .filter((id) => id.startsWith('backlog-'))
        .slice(0, 20)
        .map((id) => Number(id.slice('backlog-'.length)));
      expect(Math.max(...firstIds)).toBeLessThan(40);
    });

    it('pauses an endpoint that keeps failing, then delivers every event once it answers again', async () => {
      const r = await receiver();
      let failing = true;
      const delivered = new Set<string>();
      r.behaviour = (event) => {
        if (failing) return 503;
        delivered.add(event.id);
        return 200;
      };
      const c = await ctx().createCustomer();
      const { webhookId } = await subscribe(c, r.url());
      const { key, goods } = await live.liveCampaign(c, 1);
      const events = 8;
      for (let i = 0; i < events; i += 1) expectOk(await salesStatus(c, key, goods[0].id, i % 2 ? 'ON_SALE' : 'SOLD_OUT'));

      const endpoints = ctx().dataSource.getRepository(WebhookEndpoint);
      let endpoint: WebhookEndpoint | null = null;
      for (let i = 0; i < 500 && !endpoint?.pausedUntil; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        endpoint = await endpoints.findOne({ where: { id: webhookId } });
      }
      expect(endpoint?.failureStreak).toBeGreaterThanOrEqual(BREAKER_THRESHOLD);
      expect(endpoint?.pausedUntil).not.toBeNull();
      // Its pending deliveries were moved to the pause's end (only a try that was in flight when it opened,
      // WEBHOOK_ENDPOINT_CONCURRENCY at most, may have failed since and be due earlier).
      const until = (endpoint?.pausedUntil as Date).getTime();
      const pending = await ctx()
        .dataSource.getRepository(WebhookDelivery)
        .find({ where: { endpointId: webhookId, state: 'pending' } });
      expect(pending.filter((d) => d.nextAttemptAt.getTime() < until).length).toBeLessThanOrEqual(2);

      failing = false;
      await r.until('every event delivered', () => delivered.size === events, 30_000);
      const states = async () =>
        (
          await ctx()
            .dataSource.getRepository(WebhookDelivery)
            .find({ where: { endpointId: webhookId } })
        ).map((d) => d.state);
      for (let i = 0; i < 100 && (await states()).some((s) => s !== 'delivered'); i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await states()).toEqual(Array.from({ length: events }, () => 'delivered'));
      endpoint = await endpoints.findOne({ where: { id: webhookId } });
      expect(endpoint?.failureStreak).toBe(0);
      expect(endpoint?.pausedUntil).toBeNull();
    });
  },
  {
    WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true',
    WEBHOOK_POLL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '20000',
    WEBHOOK_RETRY_BASE_MS: '100',
    WEBHOOK_RETRY_MAX_DELAY_MS: '400',
  },
);
