import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { foreground } from '../common/util/foreground';

const BULK_WORK = 'livegoods:bulkWork';

/**
 * The route does bulk work (a sync, a spreadsheet import, an export): its request does not count as
 * interactive, so the slices of other bulk work do not wait for it (ForegroundRequests), nor its own.
 */
export const BulkWork = (): MethodDecorator & ClassDecorator => SetMetadata(BULK_WORK, true);

/**
 * Refuses nothing: a global guard because a guard is where a route's metadata is first known, and it
 * costs a metadata look-up per request where a global interceptor would cost an rxjs pipeline. It takes
 * a `@BulkWork()` route's request out of the interactive ones as soon as the route is known.
 */
@Injectable()
export class BulkWorkGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    if (this.reflector.getAllAndOverride<boolean>(BULK_WORK, [context.getHandler(), context.getClass()])) {
      foreground.leave(context.switchToHttp().getRequest<Request>());
    }
    return true;
  }
}
