import { Module } from '@nestjs/common';
import { CampaignsModule } from '../campaigns/campaigns.module';
import { CustomersModule } from '../customers/customers.module';
import { LiveModule } from '../live/live.module';
import { PublicCampaignsController } from './public-campaigns.controller';
import { PublicCampaignsService } from './public-campaigns.service';

@Module({
  imports: [CustomersModule, LiveModule, CampaignsModule],
  controllers: [PublicCampaignsController],
  providers: [PublicCampaignsService],
})
export class PublicCampaignsModule {}
