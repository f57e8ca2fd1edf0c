import { CampaignChat } from './campaigns/entities/campaign-chat.entity';
import { CampaignEvent } from './campaigns/entities/campaign-event.entity';
import { CampaignGoods } from './campaigns/entities/campaign-goods.entity';
import { Campaign } from './campaigns/entities/campaign.entity';
import { Customer } from './customers/entities/customer.entity';
import { ImportJobResult } from './excel/entities/import-job-result.entity';
import { ImportJob } from './excel/entities/import-job.entity';
import { Goods } from './goods/entities/goods.entity';
import { IdempotencyKey, IdempotencyKeyPart } from './idempotency/entities/idempotency-key.entity';
import { Media } from './media/entities/media.entity';
import { WebhookDelivery } from './webhooks/entities/webhook-delivery.entity';
import { WebhookEndpoint } from './webhooks/entities/webhook-endpoint.entity';

/**
 * Every entity of the application: handed to the data source by the composition root (AppModule, the
 * admin CLI, ormconfig.ts, tests), so that the database layer depends on no domain.
 */
export const ENTITIES = [
  Customer,
  Goods,
  Media,
  Campaign,
  CampaignGoods,
  CampaignChat,
  CampaignEvent,
  IdempotencyKey,
  IdempotencyKeyPart,
  ImportJob,
  ImportJobResult,
  WebhookEndpoint,
  WebhookDelivery,
];
