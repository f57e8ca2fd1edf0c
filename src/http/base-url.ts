import type { Request } from 'express';
import { HOST_NAME_PATTERN } from '../common/util/host-name';
import { AppConfig } from '../config/app-config';

/** Bases taken from requests (their Host) that a node admits per minute; past it, a new one gets the node's own base. */
export const NEW_BASES_PER_MINUTE = 32;
/** Bases taken from requests that a node keeps admitted: the most recently used. */
export const KEPT_BASES = 256;
const WINDOW_MS = 60_000;

/**
 * The bases taken from requests that a node has admitted. Without PUBLIC_BASE_URL, links in answers
 * (media, thumbnails) name the scheme and Host the client used, so every cache of built answers (the
 * public campaign answers, the viewers' shared snapshots, the API docs) holds one copy per base: a
 * client sending a new Host with every request would have each answer built again, and its reads and
 * encoding are what those caches are there to spare. A base seen lately is used as it is; at most
 * NEW_BASES_PER_MINUTE new ones are admitted a minute, and a request with yet another Host gets the
 * node's own base (ownBaseUrl) instead: correct links for the node, only not under the name the client
 * used. Setting PUBLIC_BASE_URL, as production should, leaves the Host out altogether.
 */
export class AdmittedBases {
  /** Admitted bases, least recently used first. */
  private readonly kept = new Map<string, true>();
  private windowStart = Number.NEGATIVE_INFINITY;
  private windowNew = 0;

  admit(base: string, now = Date.now()): boolean {
    if (this.kept.has(base)) {
      this.kept.delete(base);
      this.kept.set(base, true);
      return true;
    }
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.windowNew = 0;
    }
    if (this.windowNew >= NEW_BASES_PER_MINUTE) return false;
    this.windowNew += 1;
    this.kept.set(base, true);
    if (this.kept.size > KEPT_BASES) this.kept.delete(this.kept.keys().next().value as string);
    return true;
  }
}

/** Each app's admitted bases, by its configuration (one per app, so that apps in one process stay apart). */
const admitted = new WeakMap<AppConfig, AdmittedBases>();

function admittedOf(config: AppConfig): AdmittedBases {
  let bases = admitted.get(config);
  if (!bases) admitted.set(config, (bases = new AdmittedBases()));
  return bases;
}

/** A Host header that may name a base: a DNS name or IPv4 address, or an IPv6 address in brackets, then an optional port. */
const HOST_HEADER = new RegExp(`^(?:${HOST_NAME_PATTERN}|\\[[0-9a-f:.]+\\])(?::\\d{1,5})?$`, 'i');

/** The origin of PUBLIC_BASE_URL (validated at start as an http(s) address), or undefined without it. */
export function publicOrigin(config: AppConfig): string | undefined {
  return config.server.publicBaseUrl ? new URL(config.server.publicBaseUrl).origin : undefined;
}

/** The node's own base: PUBLIC_BASE_URL, else localhost and PORT. */
export function ownBaseUrl(config: AppConfig): string {
  return config.server.publicBaseUrl || `http://localhost:${config.server.port}`;
}

/**
 * Absolute base for links in answers: PUBLIC_BASE_URL, else `proto://host` when admitted (see
 * AdmittedBases), else the node's own. A Host naming the port the connection really came in on
 * (`localPort`) counts as its host name alone: a node listens on one port, so that adds no variants,
 * and a client reaching the node directly (each test's own server, a port of a development machine) is
 * named as it asked.
 */
export function requestBaseUrl(config: AppConfig, proto: string, host: string | undefined, localPort?: number): string {
  if (config.server.publicBaseUrl) return config.server.publicBaseUrl;
  // Only a Host that is a host name or an IP address with an optional port, and only http or https (a
  // trusted proxy's X-Forwarded-Proto), become links: `Host: "><script>` never reaches an answer.
  if (!host || !HOST_HEADER.test(host) || (proto !== 'http' && proto !== 'https')) return ownBaseUrl(config);
  const base = `${proto}://${host.toLowerCase()}`;
  const suffix = localPort ? `:${localPort}` : undefined;
  const admission = suffix && base.endsWith(suffix) ? base.slice(0, -suffix.length) : base;
  return admittedOf(config).admit(admission) ? base : ownBaseUrl(config);
}

/** Absolute base for links in an HTTP answer (requestBaseUrl with the request's scheme, Host and local port). */
export function baseUrlOf(req: Request, config: AppConfig): string {
  return requestBaseUrl(config, req.protocol, req.get('host'), req.socket?.localPort);
}
