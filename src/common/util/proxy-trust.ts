import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

/** Whether the address at `hop` of a request's chain (0: the peer, 1: the last X-Forwarded-For entry, …) is a proxy to trust. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/**
 * TRUST_PROXY as read: off, how many proxies stand in front (`true` is one), or the proxies' addresses,
 * CIDR ranges and the names proxy-addr knows (`loopback`, `linklocal`, `uniquelocal`).
 */
export type ProxyTrustSetting = false | number | string[];

/**
 * The trust function of a setting, as Express's `trust proxy` takes it. A number trusts that many hops
 * from the peer: the client is the entry the outermost trusted proxy appended, so what a client writes
 * into X-Forwarded-For itself (the entries before it) is never taken for its address.
 */
export function compileProxyTrust(setting: ProxyTrustSetting): ProxyTrust {
  if (setting === false) return () => false;
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return proxyaddr.compile(setting);
}

/** The client's address as Express's `req.ip` gives it with the same trust: for requests Express never sees (Engine.IO's). */
export function forwardedClientOf(req: IncomingMessage, trust: ProxyTrust): string {
  return proxyaddr(req, trust);
}

/** Behind a trusted peer, the first X-Forwarded-Proto value (as Express's `req.protocol`); else undefined. */
export function forwardedProtoOf(req: IncomingMessage, trust: ProxyTrust): string | undefined {
  const peer = req.socket?.remoteAddress;
  if (!peer || !trust(peer, 0)) return undefined;
  const header = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',')[0].trim();
  return first || undefined;
}

/** Reads TRUST_PROXY: the boolean spellings, a whole number of proxies (1 to 10), or a comma-separated list; undefined when it is none of them. */
export function parseProxyTrust(value: string): ProxyTrustSetting | undefined {
  const v = value.trim().toLowerCase();
  if (['false', '0', 'no', 'off', ''].includes(v)) return false;
  if (['true', 'yes', 'on'].includes(v)) return 1;
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    return hops >= 1 && hops <= 10 ? hops : undefined;
  }
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  try {
    proxyaddr.compile(entries);
    return entries;
  } catch {
    return undefined;
  }
}
