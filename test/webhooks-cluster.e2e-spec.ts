import { Metrics } from '../src/metrics/metrics.service';
import { describeTwoNodes, expectOk, Node, NodeCustomer } from './support/cluster-app';
import { WebhookReceiver } from './support/webhook-receiver';

/**
 * Two app nodes sharing one MariaDB database, both running the webhook dispatcher: every delivery is
 * claimed by one node at a time, so each event reaches the receiver exactly once, whichever node
 * recorded it and whichever sends it. MariaDB only (SQLite cannot be shared between processes).
 */

describeTwoNodes(
  'webhooks across two nodes sharing one database',
  __filename,
  'Webhook cluster',
  (cluster) => {
    let A: Node;
    let B: Node;
    let C: NodeCustomer;
    let r: WebhookReceiver;
    beforeAll(async () => {
      ({ A, B, C } = cluster);
      r = await WebhookReceiver.start();
    });
    afterAll(() => r.close());

    it('200 events recorded on both nodes: each delivered exactly once, and both nodes send', async () => {
      expectOk(
        await A.http
          .post(`/v1/console/${C.accessKey}/webhooks`)
          .set('Authorization', C.auth())
          .send({ url: r.url(), events: ['goods.salesStatus'] }),
      );
      const created = await A.http.post(`/v1/console/${C.accessKey}/campaigns`).set('Authorization', C.auth()).send({ title: 'Cluster' });
      expectOk(created);
      const key = created.body.campaignKey as string;
      const ids: number[] = [];
      for (let i = 0; i < 4; i += 1) {
        const item = await B.http
          .post(`/v1/goods/${C.accessKey}`)
          .set('Authorization', C.auth())
          .send({ name: `Item ${i}`, sku: `WHC-${i}`, url: `https://shop.example.com/whc/${i}` });
        expectOk(item);
        ids.push(item.body.id as number);
      }
      expectOk(await A.http.post(`/v1/console/${C.accessKey}/campaigns/${key}/goods`).set('Authorization', C.auth()).send({ goodsIds: ids }));

      const statuses = ['SOLD_OUT', 'ON_SALE'];
      const perItem = 50;
      await Promise.all(
        ids.map(async (goodsId, n) => {
          for (let i = 0; i < perItem; i += 1) {
            const node = (i + n) % 2 ? B : A;
            expectOk(
              await node.http
                .put(`/v1/goods/${C.accessKey}/campaign/${key}/salesStatus/id`)
                .set('Authorization', C.auth())
                .send({ goodsId, salesStatus: statuses[i % 2] }),
            );
          }
        }),
      );
      const expected = ids.length * perItem;
      await r.until(`${expected} deliveries`, () => new Set(r.received.map((x) => x.event.id)).size === expected, 60_000);
      // Let both dispatchers poll a few more times: nothing is sent again.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const counts = new Map<string, number>();
      for (const x of r.received) counts.set(x.event.id, (counts.get(x.event.id) ?? 0) + 1);
      expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
      expect(r.received).toHaveLength(expected);

      const delivered = async (node: Node) => {
        const metric = await node.app.get(Metrics).webhookDeliveries.get();
        return metric.values.find((v) => v.labels.outcome === 'delivered')?.value ?? 0;
      };
      const [onA, onB] = [await delivered(A), await delivered(B)];
      expect(onA + onB).toBe(expected);
      expect(onA).toBeGreaterThan(0);
      expect(onB).toBeGreaterThan(0);
    });
  },
  { WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true', WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '100' },
);
