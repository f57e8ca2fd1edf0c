import { INestApplication, ValidationPipe } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { BodyParserInterceptor } from './http/body-parser.interceptor';
import { validationException } from './common/errors/validation';
import { requestIdMiddleware } from './http/request-id.middleware';
import { AppConfig } from './config/app-config';
import { Lifecycle } from './lifecycle/lifecycle.service';
import { LiveIoAdapter } from './live/live-io.adapter';
import { DataSource } from 'typeorm';
import { corsMiddleware } from './http/cors';
import { compressionMiddleware } from './http/compression';
import { httpMetrics } from './metrics/http-metrics';
import { Metrics } from './metrics/metrics.service';
import { poolUseOf } from './metrics/pool-use';

/**
 * Everything the HTTP app needs besides its modules; shared by main.ts and the e2e tests so that
 * tests run exactly the app that ships.
 */
export function configureApp(app: NestExpressApplication): void {
  const config = app.get(AppConfig);
  const metrics = app.get(Metrics);
  const dataSource = app.get(DataSource);
  metrics.readPool(() => poolUseOf(dataSource));
  app.use(requestIdMiddleware);
  app.use(httpMetrics(metrics));
  // Before routing, so that preflights are answered and error responses carry the headers too.
  app.use(corsMiddleware(config.server.corsOrigins));
  app.use(compressionMiddleware());
  const lifecycle = app.get(Lifecycle);
  lifecycle.watch(app.getHttpServer());
  app.use(lifecycle.track);
  app.disable('x-powered-by');
  if (config.server.trustProxy) app.set('trust proxy', true);
  app.useGlobalFilters(new ApiExceptionFilter());
  // Bodies are read per route, after routing and authentication (see BodyParserInterceptor).
  app.useGlobalInterceptors(new BodyParserInterceptor(app.get(Reflector), config));
  app.useGlobalPipes(
    new ValidationPipe({
      transform: true,
      whitelist: true,
      forbidUnknownValues: false,
      stopAtFirstError: true,
      validateCustomDecorators: true,
      exceptionFactory: validationException,
    }),
  );
  app.useWebSocketAdapter(new LiveIoAdapter(app, config.redis));
  // Signals are handled by main.ts (Lifecycle.shutdown): requests in flight finish before the app closes.
  setupSwagger(app);
}

function setupSwagger(app: INestApplication): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('livegoods API')
      .setDescription(
        'Goods catalog, campaigns and live sales status. Authenticated routes take `Authorization: Bearer <JWT>` ' +
          'signed HS256 by the customer with its secretKey, carrying `accessKey` (equal to the path segment) and `exp` ' +
          '(at most TOKEN_MAX_TTL, 30 days by default, ahead). ' +
          'Errors are `{"_s": <code>, "_e": "<message>"}` (plus `errors[]` for validation failures).',
      )
      .setVersion('1')
      .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
      .build(),
  );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', customSiteTitle: 'livegoods API' });
}
