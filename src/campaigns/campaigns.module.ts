import { Module } from '@nestjs/common';
import { LiveModule } from '../live/live.module';
import { CampaignStore } from './campaign-store';
import { CampaignsService } from './campaigns.service';
import { ConsoleController } from './console.controller';
import { SalesStatusController } from './sales-status.controller';
import { SalesStatusService } from './sales-status.service';

/** Campaigns: the console API and the sales-status operations of the interface. */
@Module({
  imports: [LiveModule],
  controllers: [ConsoleController, SalesStatusController],
  providers: [CampaignStore, CampaignsService, SalesStatusService],
  exports: [CampaignStore],
})
export class CampaignsModule {}
