import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiException } from '../common/errors/api.exception';
import { CustomersService } from '../customers/customers.service';
import { baseUrlOf } from '../common/http/base-url';
import { AppConfig } from '../config/app-config';
import { AuthenticatedRequest, IS_PUBLIC, tenantOf } from './decorators';
import { TokenRejected, verifyCustomerToken } from './token-verifier';

/**
 * Global guard: every route needs `Authorization: Bearer <JWT>` signed by the customer whose accessKey
 * is in the path, unless marked @Public(). Every refusal is the same 401 -102 shape, and an unknown
 * accessKey reads exactly like a bad signature.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly customers: CustomersService,
    private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;

    const req = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
    const accessKey = req.params?.accessKey;
    if (typeof accessKey !== 'string' || !accessKey) throw ApiException.unauthorized();
    const header = req.header('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw ApiException.unauthorized('Missing bearer token (Authorization: Bearer <JWT>)');

    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) throw ApiException.unauthorized('Invalid token');
    try {
      const claims = verifyCustomerToken(match[1], customer.secretKey, accessKey);
      req.tenant = tenantOf(customer, baseUrlOf(req, this.config), { name: claims.name, sub: claims.sub });
      return true;
    } catch (err) {
      if (err instanceof TokenRejected) throw ApiException.unauthorized(err.message);
      throw err;
    }
  }
}
