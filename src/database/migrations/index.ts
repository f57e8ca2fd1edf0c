import { InitialSchema1763700000000 } from './1763700000000-InitialSchema';
import { AddMedia1763800000000 } from './1763800000000-AddMedia';
import { AddCampaigns1763900000000 } from './1763900000000-AddCampaigns';
import { AddPreviousSecretKey1764000000000 } from './1764000000000-AddPreviousSecretKey';
import { AddStock1764100000000 } from './1764100000000-AddStock';
import { AddWebhooks1764200000000 } from './1764200000000-AddWebhooks';
import { AddIdempotencyKeys1764300000000 } from './1764300000000-AddIdempotencyKeys';
import { AddImportJobs1764400000000 } from './1764400000000-AddImportJobs';
import { AddImportJobSheetCount1764500000000 } from './1764500000000-AddImportJobSheetCount';
import { PackImportJobResults1764600000000 } from './1764600000000-PackImportJobResults';
import { AddImportJobStalledClaims1764700000000 } from './1764700000000-AddImportJobStalledClaims';
import { AddWebhookEndpointBreaker1764800000000 } from './1764800000000-AddWebhookEndpointBreaker';
import { RenumberCampaignGoods1764900000000 } from './1764900000000-RenumberCampaignGoods';
import { WidenCampaignEventPayload1765000000000 } from './1765000000000-WidenCampaignEventPayload';
import { AddCampaignEventPayloadBytes1765100000000 } from './1765100000000-AddCampaignEventPayloadBytes';
import { AddIdempotencyKeyAppliedAt1765200000000 } from './1765200000000-AddIdempotencyKeyAppliedAt';

/**
 * Every migration, oldest first. Migrations are frozen once released (the schema they make does not
 * change): a schema change is a new one. Each must be safe to run again after being cut anywhere, as
 * MySQL/MariaDB commit DDL statement by statement: its steps go through ./steps.ts, its data steps give
 * the same result twice (test/migrations.e2e-spec.ts cuts each before every statement).
 */
export const MIGRATIONS = [
  InitialSchema1763700000000,
  AddMedia1763800000000,
  AddCampaigns1763900000000,
  AddPreviousSecretKey1764000000000,
  AddStock1764100000000,
  AddWebhooks1764200000000,
  AddIdempotencyKeys1764300000000,
  AddImportJobs1764400000000,
  AddImportJobSheetCount1764500000000,
  PackImportJobResults1764600000000,
  AddImportJobStalledClaims1764700000000,
  AddWebhookEndpointBreaker1764800000000,
  RenumberCampaignGoods1764900000000,
  WidenCampaignEventPayload1765000000000,
  AddCampaignEventPayloadBytes1765100000000,
  AddIdempotencyKeyAppliedAt1765200000000,
];
