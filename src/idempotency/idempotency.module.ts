import { CallHandler, ExecutionContext, Module, NestInterceptor, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost, ModulesContainer } from '@nestjs/core';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { coverWriteRoutes } from './idempotency-routes';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';

/** The interceptor of each app in this process, by its Express app (tests run several apps in one process). */
const interceptorOfApp = new WeakMap<object, IdempotencyInterceptor>();

/**
 * What the routes hold (one object for the whole process, since route metadata belongs to the classes):
 * hands each request to the idempotency interceptor of the app that received it.
 */
const ROUTE_INTERCEPTOR: NestInterceptor = {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> | Promise<Observable<unknown>> {
    const app = context.switchToHttp().getRequest<Request>().app as object | undefined;
    const interceptor = app && interceptorOfApp.get(app);
    return interceptor ? interceptor.intercept(context, next) : next.handle();
  },
};

/**
 * Idempotency-Key on every authenticated write (docs/api-reference.md, Idempotency keys): the keys in the
 * database (IdempotencyService, with the periodic sweep), and the interceptor that every such route gets,
 * found when the app is built (see coverWriteRoutes): no route needs to ask for it, and a route without
 * a write method or marked @Public() never pays for it.
 */
@Module({
  providers: [IdempotencyService, IdempotencyInterceptor],
})
export class IdempotencyModule implements OnModuleInit {
  constructor(
    modules: ModulesContainer,
    private readonly adapterHost: HttpAdapterHost,
    private readonly interceptor: IdempotencyInterceptor,
  ) {
    // Now, while the app is built: Nest reads the routes' interceptors when it registers them, before
    // any onModuleInit.
    coverWriteRoutes(modules, ROUTE_INTERCEPTOR);
  }

  onModuleInit(): void {
    const app = this.adapterHost.httpAdapter?.getInstance<object>();
    if (app) interceptorOfApp.set(app, this.interceptor);
  }
}
