import { timingSafeEqual } from 'node:crypto';
import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { Public } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { PublicRoute } from '../http/api-docs.decorators';
import { authorizationHeaderCount, bearerTokenOf, SEVERAL_AUTHORIZATION_HEADERS } from '../http/bearer-token';
import { AppConfig } from '../config/app-config';
import { IP_THROTTLER } from '../rate-limit/rate-limit.guards';
import { Metrics } from '../metrics/metrics.service';

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

@ApiTags('Health')
@Public()
// No customer token: with METRICS_TOKEN set, a token of its own (401 without it), told in the description.
@PublicRoute(401)
// Prometheus scrapes often from one address: never refused by the rate limits, like /health.
@SkipThrottle({ [IP_THROTTLER]: true })
@Controller('metrics')
export class PrometheusController {
  constructor(
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Prometheus metrics (text exposition format), read-only',
    description:
      'Open by default. With METRICS_TOKEN set, needs `Authorization: Bearer <METRICS_TOKEN>` (not a customer token), and answers 401 -102 ' +
      'without it. Never rate limited; nothing in it can be reset. See docs/monitoring.md.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Every metric of this node', schema: { type: 'string' } })
  async scrape(@Req() req: Request, @Res() res: Response): Promise<void> {
    const token = this.config.server.metricsToken;
    if (token) {
      if (authorizationHeaderCount(req) > 1) throw ApiException.unauthorized(SEVERAL_AUTHORIZATION_HEADERS);
      const given = bearerTokenOf(req);
      if (given === null || !sameToken(given, token)) {
        throw ApiException.unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
      }
    }
    const { contentType, body } = await this.metrics.exposition();
    res.setHeader('Cache-Control', 'no-store');
    // Exactly prom-client's content type (Express would add a charset parameter before the version).
    res.status(200).setHeader('Content-Type', contentType);
    res.end(body);
  }
}
