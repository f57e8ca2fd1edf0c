import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics.service';

/** The Metrics registry every module records into (GET /metrics is served by the health module). */
@Global()
@Module({
  providers: [Metrics],
  exports: [Metrics],
})
export class MetricsModule {}
