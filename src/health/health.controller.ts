import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiQuery, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/decorators';
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
  @ApiProperty({ example: { database: 'up' }, description: 'Each dependency: up, or the reason it is down' })
  checks: Record<string, string>;
}

@ApiTags('Health')
@Public()
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
  @ApiOperation({
    summary: 'Process metrics: memory and event-loop delay percentiles (reset=true starts a new measuring window)',
  })
  @ApiQuery({ name: 'reset', required: false, type: Boolean })
  @ApiOkResponse({ type: MetricsResponse })
  metrics(@Query('reset') reset?: string): ProcessMetrics {
    return this.health.metrics(reset === 'true' || reset === '1');
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
