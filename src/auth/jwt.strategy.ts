import { randomBytes } from 'node:crypto';
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import passport from 'passport';
import type { Request } from 'express';
import { Strategy } from 'passport-jwt';
import { AppConfig } from '../config/app-config';
import type { Customer } from '../customers/entities/customer.entity';
import { CustomersService } from '../customers/customers.service';
import { baseUrlOf } from '../http/base-url';
import { bearerTokenOf } from '../http/bearer-token';
import { Tenant, tenantOf } from './decorators';
import { alreadyVerified, BAD_SIGNATURE, CLOCK_SKEW_SECONDS, TokenRejected, VerifiedClaims, verifiedToken } from './token-verifier';

export const CUSTOMER_JWT = 'customer-jwt';
let instances = 0;

/** The customer whose key signed the token and the token's claims, kept on the request for validate(). */
const VERIFIED = Symbol('livegoods:verified');
/** A secret key of the form customers get, known to nobody: what a token for an unknown access key is checked against. */
const DECOY_KEY = randomBytes(32).toString('base64');
type StrategyRequest = Request & { [VERIFIED]?: { customer: Customer; claims: VerifiedClaims } };

/**
 * Passport's JWT strategy for customer-signed tokens. The key depends on the path: `secretOrKeyProvider`
 * finds the customer by the path's accessKey and applies every rule of the customers' tokens (HS256
 * only, `exp` required and at most TOKEN_MAX_TTL ahead, 60 s of clock skew, the `accessKey` claim equal
 * to the path, the current or — during a rotation's grace period — the previous secret key, base64 or
 * raw); it hands passport-jwt the key that signed the token, and passport-jwt verifies it again with the
 * same options. `validate()` turns the verified token into the request's Tenant. A refusal carries the
 * reason, which the guard answers as 401 -102.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, CUSTOMER_JWT) implements OnModuleDestroy {
  /**
   * Passport keeps one strategy per name for the whole process, and the last one registered under a
   * name wins: each app's strategy is also registered under a name of its own, which its AuthGuard uses,
   * so that several apps in one process (a test running two nodes and a node of another deployment)
   * each check tokens against their own database. (Passport copies a named strategy per request;
   * handing it the instance itself would share one set of callbacks between concurrent requests.)
   */
  readonly passportName = `${CUSTOMER_JWT}#${++instances}`;

  constructor(
    private readonly customers: CustomersService,
    private readonly config: AppConfig,
  ) {
    super({
      // Not passport-jwt's own extractor, which would take the first word after the scheme and ignore the rest.
      jwtFromRequest: bearerTokenOf,
      algorithms: ['HS256'],
      jsonWebTokenOptions: { clockTolerance: CLOCK_SKEW_SECONDS },
      passReqToCallback: true,
      // jsonwebtoken takes the KeyObject (its typings here say string or Buffer).
      secretOrKeyProvider: (req: StrategyRequest, rawJwt: string, done: (err: unknown, key?: string | Buffer) => void) => {
        this.keyFor(req, rawJwt).then(
          (key) => done(null, key as unknown as Buffer),
          (err: unknown) => done(err),
        );
      },
    });
    passport.use(this.passportName, this);
  }

  onModuleDestroy(): void {
    passport.unuse(this.passportName);
  }

  /**
   * The request's Tenant when its token is one this node verified before (through passport) for the
   * path's customer, with the same keys, and that is still valid; undefined when passport must verify
   * it. Passport's per-request work (its middleware, a second decoding and HMAC of the token by
   * passport-jwt) costs about 60 µs of CPU, a sixth of the cheapest list request; clients send the same
   * token many times.
   */
  async knownTenant(req: Request): Promise<Tenant | undefined> {
    const token = bearerTokenOf(req);
    const accessKey = req.params?.accessKey;
    if (!token || typeof accessKey !== 'string' || !accessKey) return undefined;
    const customer = await this.customers.findByAccessKey(accessKey);
    const verified = customer && alreadyVerified(token, customer, accessKey, this.config.auth.tokenMaxTtlSeconds);
    return verified ? this.tenantFor(req, customer, verified.claims) : undefined;
  }

  private async keyFor(req: StrategyRequest, token: string) {
    const accessKey = req.params?.accessKey;
    if (typeof accessKey !== 'string' || !accessKey) throw new TokenRejected('Invalid token');
    const customer = await this.customers.findByAccessKey(accessKey);
    // An unknown access key reads exactly as it would for a customer: what tokenProblem finds, else a bad
    // signature. It also takes as long: the token is checked against a key nobody has, as a customer's
    // would be against its own (without that, a 401 for a real access key came 0.3 ms later).
    if (!customer) {
      verifiedToken(token, DECOY_KEY, accessKey, this.config.auth.tokenMaxTtlSeconds);
      throw new TokenRejected(BAD_SIGNATURE);
    }
    const { key, claims } = verifiedToken(token, customer, accessKey, this.config.auth.tokenMaxTtlSeconds);
    req[VERIFIED] = { customer, claims };
    return key;
  }

  validate(req: StrategyRequest): Tenant {
    const { customer, claims } = req[VERIFIED] as { customer: Customer; claims: VerifiedClaims };
    return this.tenantFor(req, customer, claims);
  }

  private tenantFor(req: Request, customer: Customer, claims: VerifiedClaims): Tenant {
    return tenantOf(customer, baseUrlOf(req, this.config), { name: claims.name, sub: claims.sub });
  }
}
