import type { IncomingMessage, ServerResponse } from 'node:http';
import { Global, Module, RequestMethod } from '@nestjs/common';
import type { Request } from 'express';
import { LoggerModule } from 'nestjs-pino';
import { AppConfig } from '../config/app-config';
import { accessKeyOf, routeOf, UNMATCHED_ROUTE } from '../http/route-label';
import { rootLoggerOf } from './root-logger';

/** The fields of an access-log line: never the query string, a header, a token or a body. */
export function accessLogFields(req: Request, res: ServerResponse, durationMs: number): Record<string, unknown> {
  const route = routeOf(req);
  const fields: Record<string, unknown> = { method: req.method, route, status: res.statusCode, durationMs };
  const accessKey = accessKeyOf(req);
  if (accessKey) fields.accessKey = accessKey;
  // Only for requests no route took: the path (never the query) says what was asked for.
  if (route === UNMATCHED_ROUTE) fields.path = req.path;
  return fields;
}

/**
 * Structured logs (pino through nestjs-pino, docs/decisions/0006-pino-through-nestjs-pino.md): one access
 * line per request, and every line a request causes (services, the exception filter) carries its
 * `requestId`, through nestjs-pino's AsyncLocalStorage context. The request id is the one
 * requestIdMiddleware gave the request (X-Request-Id).
 */
@Global()
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        forRoutes: [{ path: '{*splat}', method: RequestMethod.ALL }],
        pinoHttp: {
          logger: rootLoggerOf(config),
          genReqId: (req: IncomingMessage) => (req as Request & { id?: string }).id ?? '-',
          quietReqLogger: true,
          // pino-http binds every request to a child logger with `req` serialized (all headers, at once,
          // even when nothing is logged): the access line is built by hand, so that work is skipped.
          wrapSerializers: false,
          serializers: { req: () => undefined, res: () => undefined },
          quietResLogger: true,
          customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
          customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) => (err || res.statusCode >= 500 ? 'error' : 'info'),
          customSuccessMessage: () => 'request',
          customErrorMessage: () => 'request',
          customSuccessObject: (req: IncomingMessage, res: ServerResponse, val: { durationMs: number }) => accessLogFields(req as Request, res, val.durationMs),
          customErrorObject: (req: IncomingMessage, res: ServerResponse, _err: Error, val: { durationMs: number }) =>
            accessLogFields(req as Request, res, val.durationMs),
        },
      }),
    }),
  ],
})
export class LoggingModule {}
