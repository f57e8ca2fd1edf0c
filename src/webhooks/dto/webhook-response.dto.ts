import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DELIVERY_STATES, DeliveryState, WebhookDelivery } from '../entities/webhook-delivery.entity';
import { WebhookEndpoint } from '../entities/webhook-endpoint.entity';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '../webhook-event-types';

const EPOCH_MS = { type: 'integer', format: 'int64', example: 1764000000000 } as const;

export class WebhookResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 12 }) webhookId: number;
  @ApiProperty({ example: 'https://shop.example.com/hooks/livegoods' }) url: string;
  @ApiProperty({ type: [String], enum: WEBHOOK_EVENT_TYPES, example: ['goods.salesStatus'] }) events: WebhookEventType[];
  @ApiProperty({ example: true }) active: boolean;
  @ApiProperty({ type: String, nullable: true, example: 'Order system' }) description: string | null;
  @ApiProperty({ ...EPOCH_MS, description: 'epoch ms' }) createdAt: number;
  @ApiProperty({ ...EPOCH_MS, description: 'epoch ms' }) updatedAt: number;
}

/** The answer of create and secret rotation: the only time the signing secret is shown. */
export class WebhookWithSecretResponse extends WebhookResponse {
  @ApiPropertyOptional({
    example: 'whsec_3Hk9nQ0fXq2Yb7LmR4tVw8Zc1Jd5Gs6Ae0PuNoKiTyE',
    description: 'The signing secret (HMAC-SHA256 key: the whole string, as UTF-8). Shown only in this answer: store it now.',
  })
  secret: string;
}

export class WebhookListResponse {
  @ApiProperty({ type: [WebhookResponse] }) results: WebhookResponse[];
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Number of all endpoints' }) totalCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

export class WebhookDeliveryResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 3051 }) deliveryId: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 12 }) webhookId: number;
  @ApiProperty({ example: 'evt_5f0c6e2b8d1a4c7e9b3f2a1d0e6c8b7a', description: 'The event id (Livegoods-Event-Id); a replay keeps it' }) eventId: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, example: 'goods.salesStatus' }) eventType: string;
  @ApiProperty({
    enum: DELIVERY_STATES,
    example: 'delivered',
    description: 'pending: waiting for its next try; sending: a node is sending it; delivered: answered 2xx; failed: given up after the retry window',
  })
  state: DeliveryState;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Tries made so far' }) attempts: number;
  @ApiProperty({ type: 'integer', format: 'int32', nullable: true, example: 200, description: "The receiver's status code on the last try (null: none came)" })
  statusCode: number | null;
  @ApiProperty({ type: 'integer', format: 'int32', nullable: true, example: 42, description: 'How long the last try took, ms' }) durationMs: number | null;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Why the last try failed' }) error: string | null;
  @ApiProperty({
    ...EPOCH_MS,
    nullable: true,
    description:
      "When the next try is due (pending), or when the sending node's lease ends (sending: if that node dies mid-send, another tries it then); null once delivered or failed; epoch ms",
  })
  nextAttemptAt: number | null;
  @ApiProperty({ ...EPOCH_MS, nullable: true, description: 'When the last try started, epoch ms' }) lastAttemptAt: number | null;
  @ApiProperty({ ...EPOCH_MS, description: 'When the event was recorded, epoch ms' }) createdAt: number;
  @ApiProperty({ ...EPOCH_MS, nullable: true, description: 'When it was delivered or given up, epoch ms' }) finishedAt: number | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { id: 'evt_5f0c6e2b8d1a4c7e9b3f2a1d0e6c8b7a', type: 'goods.salesStatus', createdAt: 1764000000000, data: {} },
    description: 'The body sent, as JSON',
  })
  payload: Record<string, unknown>;
}

export class WebhookDeliveryListResponse {
  @ApiProperty({ type: [WebhookDeliveryResponse] }) results: WebhookDeliveryResponse[];
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Number of all matches, not only this page' }) totalCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

export function toWebhookResponse(e: WebhookEndpoint): WebhookResponse {
  return {
    webhookId: e.id,
    url: e.url,
    events: e.events.split(',').filter(Boolean) as WebhookEventType[],
    active: !!e.active,
    description: e.description ?? null,
    createdAt: e.createdAt.getTime(),
    updatedAt: e.updatedAt.getTime(),
  };
}

export function toWebhookWithSecret(e: WebhookEndpoint): WebhookWithSecretResponse {
  return { ...toWebhookResponse(e), secret: e.secret };
}

export function toDeliveryResponse(d: WebhookDelivery): WebhookDeliveryResponse {
  return {
    deliveryId: d.id,
    webhookId: d.endpointId,
    eventId: d.eventId,
    eventType: d.eventType,
    state: d.state,
    attempts: d.attempts,
    statusCode: d.lastStatusCode ?? null,
    durationMs: d.lastDurationMs ?? null,
    error: d.lastError ?? null,
    nextAttemptAt: d.state === 'pending' || d.state === 'sending' ? d.nextAttemptAt.getTime() : null,
    lastAttemptAt: d.lastAttemptAt?.getTime() ?? null,
    createdAt: d.createdAt.getTime(),
    finishedAt: d.finishedAt?.getTime() ?? null,
    payload: JSON.parse(d.body) as Record<string, unknown>,
  };
}
