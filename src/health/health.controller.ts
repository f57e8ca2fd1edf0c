import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { SkipThrottle } from '@nestjs/throttler';
import { Public } from '../auth/decorators';
import { IP_THROTTLER } from '../rate-limit/rate-limit.guards';
import { HealthService, ProcessMetrics, ReadinessReport } from './health.service';

class HealthResponse {
  @ApiProperty({ example: 'ok' }) status: string;
}

class LoopDelayResponse {
  @ApiProperty({ example: 0.9 }) p50: number;
  @ApiProperty({ example: 12.3 }) p99: number;
  @ApiProperty({ example: 20.1 }) max: number;
}

class MetricsResponse {
  @ApiProperty({ example: 3600 }) uptimeSeconds: number;
  @ApiProperty({ example: 180.5 }) rssMb: number;
  @ApiProperty({ example: 60.2 }) heapUsedMb: number;
  @ApiProperty({ type: LoopDelayResponse }) eventLoopDelayMs: LoopDelayResponse;
}

class ReadinessResponse {
  @ApiProperty({ example: 'ok', enum: ['ok', 'error'] }) status: string;
  @ApiProperty({
    example: { database: 'up', redis: 'up' },
    description: 'Each dependency (database; redis when configured): up or down. Why one is down is logged, not answered.',
  })
  checks: Record<string, 'up' | 'down'>;
}

@ApiTags('Health')
@Public()
// Load balancers and monitors probe often from one address: never refuse them.
@SkipThrottle({ [IP_THROTTLER]: true })
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({ summary: 'Liveness: the process is up' })
  @ApiOkResponse({ type: HealthResponse })
  live(): HealthResponse {
    return { status: 'ok' };
  }

  @Get('metrics')
  @ApiOperation({ summary: 'Process metrics, read-only: memory and event-loop delay percentiles since the process started' })
  @ApiOkResponse({ type: MetricsResponse })
  metrics(): ProcessMetrics {
    return this.health.metrics();
  }

  @Get('ready')
  @ApiOperation({ summary: 'Readiness: the database (and Redis when configured) answer' })
  @ApiOkResponse({ type: ReadinessResponse })
  @ApiServiceUnavailableResponse({ type: ReadinessResponse })
  async ready(@Res({ passthrough: true }) res: Response): Promise<ReadinessReport> {
    const report = await this.health.readiness();
    if (report.status !== 'ok') res.status(503);
    return report;
  }
}
