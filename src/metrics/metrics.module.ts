import { Global, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { Metrics } from './metrics.service';

/** GET /metrics and the Metrics registry every module records into. */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [Metrics],
  exports: [Metrics],
})
export class MetricsModule {}
