import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { HealthService } from './health.service';
import { PrometheusController } from './prometheus.controller';

/** Liveness, readiness and the JSON metrics under /health; the Prometheus exposition at /metrics. */
@Module({ controllers: [HealthController, PrometheusController], providers: [HealthService] })
export class HealthModule {}
