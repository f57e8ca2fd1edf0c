import { WebhookDelivery } from '../entities/webhook-delivery.entity';
import { toDeliveryResponse } from './webhook-response.dto';

describe('toDeliveryResponse', () => {
  const delivery = (state: WebhookDelivery['state']): WebhookDelivery =>
    Object.assign(new WebhookDelivery(), {
      id: 7,
      endpointId: 3,
      eventId: 'evt_1',
      eventType: 'goods.salesStatus',
      body: '{"type":"goods.salesStatus"}',
      state,
      attempts: 1,
      nextAttemptAt: new Date(1_800_000_060_000),
      createdAt: new Date(1_800_000_000_000),
    });

  it('shows when the next try is due while pending, and when the lease ends while sending (a node that died mid-send is retried then)', () => {
    expect(toDeliveryResponse(delivery('pending')).nextAttemptAt).toBe(1_800_000_060_000);
    expect(toDeliveryResponse(delivery('sending')).nextAttemptAt).toBe(1_800_000_060_000);
    expect(toDeliveryResponse(delivery('delivered')).nextAttemptAt).toBeNull();
    expect(toDeliveryResponse(delivery('failed')).nextAttemptAt).toBeNull();
  });
});
