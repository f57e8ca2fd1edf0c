import { Global, Module } from '@nestjs/common';
import { CustomersModule } from '../customers/customers.module';
import { GoodsModule } from '../goods/goods.module';
import { LiveModule } from '../live/live.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { LIVE_SOURCE } from '../live/live-source';
import { CampaignChanges } from './campaign-changes';
import { CampaignEventLog } from './campaign-event-log';
import { CampaignGoodsDeletion } from './campaign-goods-deletion';
import { CampaignGoodsUpdates } from './campaign-goods-updates';
import { CampaignLiveSource } from './campaign-live-source';
import { CampaignViews } from './campaign-views';
import { CampaignWriter } from './campaign-writer';
import { CampaignsService } from './campaigns.service';
import { ConsoleController } from './console.controller';

/**
 * Campaigns (broadcasts): the console API for campaigns themselves, their read side (views, the event
 * log), the writer every campaign change goes through, and what the viewer channel reads.
 */
@Module({
  imports: [LiveModule, CustomersModule, GoodsModule, WebhooksModule],
  controllers: [ConsoleController],
  providers: [
    CampaignChanges,
    CampaignWriter,
    CampaignsService,
    CampaignViews,
    CampaignEventLog,
    CampaignLiveSource,
    CampaignGoodsDeletion,
    CampaignGoodsUpdates,
  ],
  exports: [CampaignChanges, CampaignWriter, CampaignsService, CampaignViews, CampaignLiveSource],
})
export class CampaignsModule {}

/**
 * Provides LIVE_SOURCE to the viewer channel: LiveModule imports no domain, so the campaign domain
 * offers what it reads globally (the dependency still points from campaigns to live).
 */
@Global()
@Module({
  imports: [CampaignsModule],
  providers: [{ provide: LIVE_SOURCE, useExisting: CampaignLiveSource }],
  exports: [LIVE_SOURCE],
})
export class CampaignLiveSourceModule {}
