import { ExecutionContext, Injectable, OnModuleInit } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IAuthModuleOptions, AuthGuard as PassportAuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { authorizationHeaderCount, SEVERAL_AUTHORIZATION_HEADERS } from '../http/bearer-token';
import { clientIp, RateLimiter } from '../rate-limit/rate-limiter';
import { AuthenticatedRequest, IS_PUBLIC, Tenant } from './decorators';
import { CUSTOMER_JWT, JwtStrategy } from './jwt.strategy';
import { TokenRejected } from './token-verifier';

/**
 * Global guard: every route needs `Authorization: Bearer <JWT>` signed by the customer whose accessKey
 * is in the path (passport, JwtStrategy), unless marked @Public(). Every refusal is the same 401 -102
 * shape with the reason, an unknown accessKey reads exactly like a bad signature, and refusals count
 * against the client IP's limit of refused authentications (429 past it).
 */
@Injectable()
export class AuthGuard extends PassportAuthGuard() implements OnModuleInit {
  constructor(
    private readonly reflector: Reflector,
    private readonly limiter: RateLimiter,
    private readonly strategy: JwtStrategy,
  ) {
    super({ defaultStrategy: CUSTOMER_JWT });
  }

  /** This app's own strategy (see JwtStrategy.passportName), not whichever app registered the name last. */
  onModuleInit(): void {
    const self = this as unknown as { options: IAuthModuleOptions };
    self.options = { ...self.options, defaultStrategy: this.strategy.passportName };
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    // A token verified before through passport (see JwtStrategy.knownTenant) is not verified again.
    const req = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    try {
      if (authorizationHeaderCount(req) > 1) throw ApiException.unauthorized(SEVERAL_AUTHORIZATION_HEADERS);
      const known = await this.strategy.knownTenant(req);
      if (known) {
        req.tenant = known;
        return true;
      }
      return (await super.canActivate(context)) as boolean;
    } catch (err) {
      if (err instanceof ApiException && err.code === ErrorCode.Unauthorized) {
        const verdict = await this.limiter.hit('auth-failures', clientIp(req));
        if (!verdict.allowed)
          throw ApiException.rateLimited(
            `Too many refused authentications from your address; retry after ${verdict.retryAfterSeconds} s`,
            verdict.retryAfterSeconds,
          );
      }
      throw err;
    }
  }

  /** Passport's outcome in the service's words; the tenant goes where @CurrentTenant() reads it. */
  override handleRequest<T = Tenant>(err: unknown, user: unknown, info: unknown, context: ExecutionContext): T {
    if (err && !(err instanceof TokenRejected)) throw err instanceof Error ? err : new Error('authentication failed');
    if (!user) throw ApiException.unauthorized(refusalOf(err ?? info));
    context.switchToHttp().getRequest<AuthenticatedRequest>().tenant = user as Tenant;
    return user as T;
  }
}

/** Why a token was refused, as the 401 says it. */
function refusalOf(reason: unknown): string {
  if (reason instanceof TokenRejected) return reason.message;
  const message = reason instanceof Error ? reason.message : '';
  if (message === 'No auth token') return 'Missing bearer token (Authorization: Bearer <JWT>)';
  if (/expired/i.test(message)) return 'Token expired';
  return 'Invalid token';
}
