import { Module } from '@nestjs/common';
import { CampaignsModule } from '../campaigns/campaigns.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { CampaignGoodsController } from './campaign-goods.controller';
import { CampaignGoodsService } from './campaign-goods.service';
import { SalesStatusController } from './sales-status.controller';
import { SalesStatusService } from './sales-status.service';
import { StockController } from './stock.controller';
import { StockService } from './stock.service';

/** CampaignGoods: the goods of a campaign (console routes), the three sales-status operations and the stock operations. */
@Module({
  imports: [CampaignsModule, WebhooksModule],
  controllers: [CampaignGoodsController, SalesStatusController, StockController],
  providers: [CampaignGoodsService, SalesStatusService, StockService],
})
export class CampaignGoodsModule {}
