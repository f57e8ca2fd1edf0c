import { Module } from '@nestjs/common';
import { LiveGateway } from './live.gateway';
import { LiveNotifier } from './live-notifier';
import { ViewerCounter } from './viewer-counter';

/**
 * The /live viewer channel: the gateway, the notifier services publish through (and its fan-out), and
 * the viewer counts. It only delivers: what viewers are sent comes from the LIVE_SOURCE provider (the
 * campaign domain), so this module imports no domain.
 */
@Module({
  providers: [LiveGateway, LiveNotifier, ViewerCounter],
  exports: [LiveNotifier, ViewerCounter],
})
export class LiveModule {}
