import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, LookupFunction } from 'node:net';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AddressPolicy } from '../media/address-policy';

/** What one try gave: the receiver's status code (null when none came), how long it took, why it failed. */
export interface SendOutcome {
  statusCode: number | null;
  durationMs: number;
  /** null when delivered (2xx). */
  error: string | null;
}

/** Bytes of a receiver's answer read (and dropped) before the connection is closed instead. */
const MAX_ANSWER_BYTES = 64 * 1024;
/**
 * Longest wait for the rest of an answer once its status came (capped by WEBHOOK_TIMEOUT_MS): a receiver
 * that trickles its body would otherwise hold a socket of the node's shared pool for the whole timeout.
 */
const ANSWER_DRAIN_MS = 1000;

class RefusedTarget extends Error {}

/**
 * A kept-alive connection reset just as it was reused: almost always the receiver had closed it (its idle
 * timeout and our reuse crossed) and nothing reached its application, so the request is sent once more at
 * once, on a new connection, instead of waiting for the retry schedule. Which one it was cannot be told
 * from here (the request is in the kernel's buffer either way): a receiver that read the request and then
 * reset the connection gets it twice in one try, which at-least-once delivery (the event id) allows.
 */
class StaleConnection extends Error {}

/** Resolves a host name to all its addresses (dns.lookup with `all: true`). */
export type ResolveAll = (hostname: string, family: number, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolver: ResolveAll = (hostname, family, callback) => dnsLookup(hostname, { all: true, family }, callback);

/**
 * Why `rawUrl` may not be a webhook target under these rules, or null when it may: an absolute https URL
 * (http only where private hosts are allowed), no credentials, and, when its host is an IP address, an
 * address the policy allows. Host names are checked when they are resolved, at every send (see lookupFor).
 */
export function targetRefusal(rawUrl: string, policy: AddressPolicy, allowHttp: boolean): string | null {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return 'url must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    return allowHttp ? 'url must be an http or https URL' : 'url must be an https URL';
  }
  if (url.username || url.password) return 'url may not carry credentials';
  // A fully qualified name may end with a dot (`localhost.` is localhost).
  let host = url.hostname.replace(/^\[|\]$/g, '');
  while (host.endsWith('.')) host = host.slice(0, -1);
  if (isIP(host)) {
    const why = policy.refusal(host, host);
    if (why) return `url may not point at ${why.replace(/^\S+ is /, '')}`;
  } else if (!allowHttp && (host === 'localhost' || host.endsWith('.localhost'))) {
    return 'url may not point at a loopback address';
  }
  return null;
}

/**
 * POSTs one delivery: one deadline covers resolving, connecting and the answer's head; every address the
 * host resolves to is checked against the address policy right before connecting (so a DNS answer that
 * changed since registration cannot lead to a private address), the connection uses exactly the checked
 * address; redirects are not followed (a 3xx is a failed try). Connections are kept alive per node.
 */
@Injectable()
export class WebhookSender implements OnApplicationShutdown {
  readonly policy: AddressPolicy;
  readonly allowHttp: boolean;
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64, maxTotalSockets: 256 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64, maxTotalSockets: 256 });
  /** The resolver (the system's; a spec replaces it to play a DNS answer that changed). */
  protected resolveAll: ResolveAll = systemResolver;

  constructor(private readonly config: AppConfig) {
    this.policy = new AddressPolicy(config.webhooks.allowPrivateHosts, config.webhooks.allowedHosts);
    this.allowHttp = config.webhooks.allowPrivateHosts;
  }

  refusal(rawUrl: string): string | null {
    return targetRefusal(rawUrl, this.policy, this.allowHttp);
  }

  async send(rawUrl: string, headers: Record<string, string>, body: string): Promise<SendOutcome> {
    const started = Date.now();
    const took = () => Date.now() - started;
    const refused = this.refusal(rawUrl);
    if (refused) return { statusCode: null, durationMs: took(), error: `refused: ${refused}` };
    try {
      const url = new URL(rawUrl);
      const deadline = Date.now() + this.config.webhooks.timeoutMs;
      const statusCode = await this.post(url, headers, body, deadline).catch((err: Error) => {
        if (err instanceof StaleConnection) return this.post(url, headers, body, deadline);
        throw err;
      });
      const ok = statusCode >= 200 && statusCode < 300;
      const error = ok ? null : statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode} (redirects are not followed)` : `HTTP ${statusCode}`;
      return { statusCode, durationMs: took(), error };
    } catch (err) {
      const message = err instanceof RefusedTarget ? `refused: ${err.message}` : (err as Error).message;
      return { statusCode: null, durationMs: took(), error: message.slice(0, 500) };
    }
  }

  onApplicationShutdown(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private lookupFor(hostname: string): LookupFunction {
    return (host, options, callback) => {
      this.resolveAll(host, options.family === 'IPv6' ? 6 : options.family === 'IPv4' ? 4 : (options.family ?? 0), (err, addresses) => {
        if (err) return callback(new Error(`cannot resolve ${hostname}: ${err.code ?? err.message}`), '', 0);
        if (!addresses.length) return callback(new Error(`${hostname} has no address`), '', 0);
        for (const a of addresses) {
          const why = this.policy.refusal(a.address, hostname);
          if (why) return callback(new RefusedTarget(`${hostname} resolves to ${why.replace(/^\S+ is /, '')} (${a.address})`), '', 0);
        }
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        return callback(null, addresses[0].address, addresses[0].family);
      });
    };
  }

  private post(url: URL, headers: Record<string, string>, body: string, deadline: number): Promise<number> {
    const timeoutMs = this.config.webhooks.timeoutMs;
    const remainingMs = Math.max(1, deadline - Date.now());
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    const secure = url.protocol === 'https:';
    return new Promise<number>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, status?: number) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          req.destroy();
          reject(err);
        } else resolve(status as number);
      };
      const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), remainingMs);
      const payload = Buffer.from(body, 'utf8');
      const options: http.RequestOptions = {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        lookup: isIP(hostname) ? undefined : this.lookupFor(hostname),
        headers: {
          ...headers,
          'content-type': 'application/json; charset=utf-8',
          'content-length': String(payload.length),
          'user-agent': 'livegoods-webhooks/1.0',
        },
      };
      const req = (secure ? https : http).request(url, options);
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof RefusedTarget) return finish(err);
        if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return finish(new StaleConnection(err.message));
        finish(new Error(`send failed: ${err.message}`));
      });
      req.on('response', (res) => {
        // The status decides; the answer's body is read and dropped (so the connection can be kept), for
        // at most ANSWER_DRAIN_MS and MAX_ANSWER_BYTES, then the connection is closed instead.
        finish(null, res.statusCode ?? 0);
        const drain = setTimeout(() => res.destroy(), Math.min(timeoutMs, ANSWER_DRAIN_MS));
        drain.unref();
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_ANSWER_BYTES) res.destroy();
        });
        res.on('error', () => undefined);
        res.on('close', () => clearTimeout(drain));
      });
      req.end(payload);
    });
  }
}
