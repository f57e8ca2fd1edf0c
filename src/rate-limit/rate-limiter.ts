import { Inject, Injectable } from '@nestjs/common';
import { getStorageToken, ThrottlerStorage } from '@nestjs/throttler';
import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics.service';
import { addressKey } from './address-key';
import { forwardedClientOf, ProxyTrust } from '../common/util/proxy-trust';

/**
 * The limits counted outside the HTTP guards: refused authentications, new viewer connections, and
 * public answers with goods built for a client (cache misses).
 */
export type RateLimitName = 'auth-failures' | 'live-connections' | 'public-builds';

/** The per-IP limit of HTTP requests (the throttler IpRateLimitGuard applies, and ipRateLimitMiddleware). */
export const IP_LIMIT = 'ip';

/**
 * Set on a request once the per-IP limit has counted it (by IpRateLimitGuard or ipRateLimitMiddleware),
 * so that no request is counted twice.
 */
export const COUNTED_PER_IP = Symbol('countedPerIp');

export interface RateLimitVerdict {
  allowed: boolean;
  /** Seconds until the caller may try again (when not allowed). */
  retryAfterSeconds: number;
}

/**
 * Counts hits against a limit per window (RATE_LIMIT_WINDOW_MS) in the throttler's storage (Redis when
 * configured), for the limits that are not a guard on a route: 401s per client IP (past the limit that IP
 * gets 429 for the rest of the window), new /live connections per client IP, and public answers with
 * goods built for a client IP.
 */
@Injectable()
export class RateLimiter {
  constructor(
    private readonly config: AppConfig,
    @Inject(getStorageToken()) private readonly storage: ThrottlerStorage,
    private readonly metrics: Metrics,
  ) {}

  get enabled(): boolean {
    return this.config.rateLimit.enabled;
  }

  /** RATE_LIMIT_PUBLIC_BUILDS in words ("30 per 10 s"), for refusals. */
  get publicBuildsLimit(): string {
    const { publicBuilds, windowMs } = this.config.rateLimit;
    return `${publicBuilds} per ${Math.round(windowMs / 1000)} s`;
  }

  async hit(name: RateLimitName, tracker: string): Promise<RateLimitVerdict> {
    if (!this.enabled) return { allowed: true, retryAfterSeconds: 0 };
    const { windowMs, authFailures, liveConnections, publicBuilds } = this.config.rateLimit;
    const limit = name === 'auth-failures' ? authFailures : name === 'live-connections' ? liveConnections : publicBuilds;
    const record = await this.storage.increment(rateLimitKey(this.config, name, tracker), windowMs, limit, windowMs, name);
    if (record.isBlocked) this.metrics.rateLimitRefusals.inc({ limit: name });
    return { allowed: !record.isBlocked, retryAfterSeconds: Math.max(1, record.timeToBlockExpire) };
  }

  /**
   * One request from `tracker` (a client IP) against the per-IP limit of HTTP requests: the same key,
   * window, limit and storage as IpRateLimitGuard (ThrottlerModule's `ip` throttler), for the requests
   * no controller answers (see ipRateLimitMiddleware). A refusal is counted in the metrics by the caller.
   */
  async hitIp(tracker: string): Promise<RateLimitVerdict> {
    if (!this.enabled) return { allowed: true, retryAfterSeconds: 0 };
    const { windowMs, ip } = this.config.rateLimit;
    const record = await this.storage.increment(rateLimitKey(this.config, IP_LIMIT, tracker), windowMs, ip, windowMs, IP_LIMIT);
    return { allowed: !record.isBlocked, retryAfterSeconds: Math.max(1, record.timeToBlockExpire) };
  }

  /** The message of a refusal by the per-IP limit. */
  ipRefusal(retryAfterSeconds: number): string {
    const { windowMs, ip } = this.config.rateLimit;
    return ipRefusal(ip, windowMs, retryAfterSeconds);
  }
}

/** The message of a refusal by the per-IP limit (the guard's and the middleware's). */
export function ipRefusal(limit: number, windowMs: number, retryAfterSeconds: number): string {
  return `Too many requests from your address (${limit} per ${Math.round(windowMs / 1000)} s); retry after ${retryAfterSeconds} s`;
}

/** One key per deployment, limit and tracker (not per route): `<REDIS_PREFIX>:rl:<limit>:<tracker>`. */
export function rateLimitKey(config: AppConfig, name: string, tracker: string): string {
  return `${config.redis.prefix}:rl:${name}:${tracker}`;
}

/**
 * The client's address as the per-address limits count it: the request's IP (behind a proxy, with
 * TRUST_PROXY, the forwarded one), an IPv6 address as its /64 (addressKey).
 */
export function clientIp(req: Pick<Request, 'ip' | 'socket'>): string {
  return addressKey(req.ip ?? req.socket?.remoteAddress ?? 'unknown');
}

/**
 * clientIp for a request Express never sees (Engine.IO answers its handshakes before Express runs): the
 * peer's address, or behind trusted proxies (TRUST_PROXY) the address the outermost of them forwarded,
 * as Express's `trust proxy` makes `req.ip`; an IPv6 address as its /64 (addressKey).
 */
export function clientIpOf(req: IncomingMessage, trust: ProxyTrust): string {
  return addressKey((req.socket ? forwardedClientOf(req, trust) : undefined) || 'unknown');
}
