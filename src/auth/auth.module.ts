import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CustomersModule } from '../customers/customers.module';
import { CustomerRateLimitGuard, IpRateLimitGuard } from '../rate-limit/rate-limit.guards';
import { PassportModule } from '@nestjs/passport';
import { AuthGuard } from './auth.guard';
import { BodyParserGuard } from '../http/body-parser.guard';
import { BulkWorkGuard } from '../http/bulk-work';
import { JwtStrategy } from './jwt.strategy';

/**
 * The global guards, in this order: BulkWorkGuard (refuses nothing: it marks a bulk route's request as
 * not interactive, see ForegroundRequests), the per-IP rate limit (before any work, even for a bad token),
 * the authentication (secure by default; opt out with @Public()), the per-customer rate limit, and last the
 * reading of the request body (BodyParserGuard): no byte of a body is parsed for a refused request.
 */
@Module({
  imports: [CustomersModule, PassportModule],
  providers: [
    JwtStrategy,
    { provide: APP_GUARD, useClass: BulkWorkGuard },
    { provide: APP_GUARD, useClass: IpRateLimitGuard },
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_GUARD, useClass: CustomerRateLimitGuard },
    { provide: APP_GUARD, useClass: BodyParserGuard },
  ],
})
export class AuthModule {}
