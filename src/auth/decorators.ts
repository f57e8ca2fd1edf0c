import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Customer } from '../customers/entities/customer.entity';

export const IS_PUBLIC = 'livegoods:isPublic';

/** Opts a route out of the global authentication guard. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

/** Who signed the token: the optional `name` and `sub` claims. */
export interface Operator {
  name?: string;
  sub?: string;
}

export interface AuthenticatedRequest {
  customer?: Customer;
  operator?: Operator;
}

/** The authenticated tenant of this request (set by AuthGuard). */
export const CurrentCustomer = createParamDecorator((_: unknown, ctx: ExecutionContext): Customer => {
  const customer = ctx.switchToHttp().getRequest<AuthenticatedRequest>().customer;
  if (!customer) throw new Error('CurrentCustomer used on a route without authentication');
  return customer;
});

/** The operator named in the token's claims, if any. */
export const CurrentOperator = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): Operator => ctx.switchToHttp().getRequest<AuthenticatedRequest>().operator ?? {},
);
