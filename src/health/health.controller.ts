import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/decorators';
import { HealthService, ReadinessReport } from './health.service';

class HealthResponse {
  @ApiProperty({ example: 'ok' }) status: string;
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
