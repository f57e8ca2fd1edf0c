import { Module } from '@nestjs/common';
import { CustomersModule } from '../customers/customers.module';
import { CampaignViews } from './campaign-views';
import { LiveEventLog } from './live-event-log';
import { LiveGateway } from './live.gateway';
import { LiveNotifier } from './live-notifier';
import { ViewerCounter } from './viewer-counter';

/** The /live viewer channel, the event log behind it, and the notifier services publish through. */
@Module({
  imports: [CustomersModule],
  providers: [LiveGateway, LiveNotifier, LiveEventLog, ViewerCounter, CampaignViews],
  exports: [LiveNotifier, LiveEventLog, ViewerCounter, CampaignViews],
})
export class LiveModule {}
