import { Module } from '@nestjs/common';
import { CampaignsModule } from '../campaigns/campaigns.module';
import { CampaignGoodsController } from './campaign-goods.controller';
import { CampaignGoodsService } from './campaign-goods.service';
import { SalesStatusController } from './sales-status.controller';
import { SalesStatusService } from './sales-status.service';

/** CampaignGoods: the goods of a campaign (console routes) and the three sales-status operations. */
@Module({
  imports: [CampaignsModule],
  controllers: [CampaignGoodsController, SalesStatusController],
  providers: [CampaignGoodsService, SalesStatusService],
})
export class CampaignGoodsModule {}
