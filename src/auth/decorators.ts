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

/**
 * The authenticated customer of a request, as services see it: the first argument of every tenant
 * service method.
 */
export interface Tenant {
  /** customers.id */
  id: number;
  accessKey: string;
  /** ISO 4217 code echoed on goods responses. */
  currency: string;
  /** Absolute base for links in responses (media files). */
  baseUrl: string;
  /** The operator named by the token's `name` / `sub` claims, if any. */
  operator: Operator;
}

export function tenantOf(customer: Customer, baseUrl: string, operator: Operator = {}): Tenant {
  return { id: customer.id, accessKey: customer.accessKey, currency: customer.currency, baseUrl, operator };
}

export interface AuthenticatedRequest {
  tenant?: Tenant;
}

/** The authenticated tenant of this request (set by AuthGuard). */
export const CurrentTenant = createParamDecorator((_: unknown, ctx: ExecutionContext): Tenant => {
  const tenant = ctx.switchToHttp().getRequest<AuthenticatedRequest>().tenant;
  if (!tenant) throw new Error('CurrentTenant used on a route without authentication');
  return tenant;
});
