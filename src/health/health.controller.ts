import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { SkipThrottle } from '@nestjs/throttler';
import { Public } from '../auth/decorators';
import { PublicRoute } from '../http/api-docs.decorators';
import { IP_THROTTLER } from '../rate-limit/rate-limit.guards';
import { HealthService, ProcessMetrics, ReadinessReport } from './health.service';

class HealthResponse {
  @ApiProperty({ enum: ['ok'], example: 'ok', description: 'Always ok while the process runs' }) status: string;
}

class LoopDelayResponse {
  @ApiProperty({ example: 0.9, description: 'Median, ms' }) p50: number;
  @ApiProperty({ example: 12.3, description: '99th percentile, ms' }) p99: number;
  @ApiProperty({ example: 20.1, description: 'Largest, ms' }) max: number;
}

class MetricsResponse {
  @ApiProperty({ example: 3600, description: 'Seconds since the process started' }) uptimeSeconds: number;
  @ApiProperty({ example: 180.5, description: 'Resident set size, MB' }) rssMb: number;
  @ApiProperty({ example: 60.2, description: 'V8 heap in use, MB' }) heapUsedMb: number;
  @ApiProperty({ type: LoopDelayResponse, description: 'Event-loop delay since the process started, ms' }) eventLoopDelayMs: LoopDelayResponse;
}

class ReadinessResponse {
  @ApiProperty({
    example: 'ok',
    enum: ['ok', 'error'],
    description: 'ok when every check is up (with READY_REQUIRES_REDIS=false, when every check but redis is up)',
  })
  status: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string', enum: ['up', 'down'] },
    example: { database: 'up', redis: 'up' },
    description: 'Each dependency (database; redis when configured): up or down. Why one is down is logged, not answered.',
  })
  checks: Record<string, 'up' | 'down'>;
}

@ApiTags('Health')
@Public()
@PublicRoute()
// Load balancers and monitors probe often from one address: never refuse them.
@SkipThrottle({ [IP_THROTTLER]: true })
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({ summary: 'Liveness: the process is up', description: 'Answers `{"status": "ok"}` while the process runs; touches no dependency.' })
  @ApiOkResponse({ type: HealthResponse })
  live(): HealthResponse {
    return { status: 'ok' };
  }

  @Get('metrics')
  @ApiOperation({
    summary: 'Process metrics, read-only: memory and event-loop delay percentiles since the process started',
    description: 'Uptime, resident and heap memory, and the event-loop delay percentiles since the process started.',
  })
  @ApiOkResponse({ type: MetricsResponse })
  metrics(): ProcessMetrics {
    return this.health.metrics();
  }

  @Get('ready')
  @ApiOperation({
    summary: 'Readiness: the database (and Redis when configured) answer',
    description:
      'HTTP 200 with status ok while every check is up; 503 with status error when one is down, or with `{"node": "down"}` ' +
      'while the node shuts down. With READY_REQUIRES_REDIS=false a redis check that is down is only reported (200). ' +
      'Why a check is down is logged, never answered.',
  })
  @ApiOkResponse({ type: ReadinessResponse, description: 'Every check is up' })
  @ApiServiceUnavailableResponse({ type: ReadinessResponse, description: 'A check is down, or the node is shutting down' })
  async ready(@Res({ passthrough: true }) res: Response): Promise<ReadinessReport> {
    const report = await this.health.readiness();
    if (report.status !== 'ok') res.status(503);
    return report;
  }
}
