import { Module } from '@nestjs/common';
import { CampaignsModule } from '../campaigns/campaigns.module';
import { CustomersModule } from '../customers/customers.module';
import { GoodsModule } from '../goods/goods.module';
import { LiveModule } from '../live/live.module';
import { PublicCampaignsController } from './public-campaigns.controller';
import { PublicAnswerCache } from './public-answer-cache';
import { PublicCampaignsService } from './public-campaigns.service';

@Module({
  imports: [CustomersModule, LiveModule, CampaignsModule, GoodsModule],
  controllers: [PublicCampaignsController],
  providers: [PublicCampaignsService, PublicAnswerCache],
})
export class PublicCampaignsModule {}
