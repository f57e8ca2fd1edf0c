import { createHash } from 'node:crypto';
import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import http, { IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, LookupFunction } from 'node:net';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AddressPolicy } from './address-policy';
import { MediaError } from './media.errors';

export interface FetchedImage {
  bytes: Buffer;
  /** sha256 hex of the bytes. */
  checksum: string;
  contentType: string | null;
}

const MAX_REDIRECTS = 3;

type Hop = { redirect: URL } | { image: FetchedImage };

/**
 * Downloads an image for the media pipeline, safely: http and https only; every address a host name
 * resolves to is checked against the AddressPolicy before connecting (the connection then uses exactly
 * the checked address, so a second DNS answer cannot sneak past), and again after each redirect (at most
 * 3); one deadline covers connecting and reading; the byte cap is enforced while streaming.
 */
@Injectable()
export class ImageFetcher {
  private readonly policy: AddressPolicy;

  constructor(private readonly config: AppConfig) {
    this.policy = new AddressPolicy(config.media.allowPrivateHosts, config.media.allowedHosts);
  }

  async fetch(rawUrl: string): Promise<FetchedImage> {
    let url = this.parse(rawUrl);
    const deadline = Date.now() + this.config.media.fetchTimeoutMs;
    for (let hops = 0; ; hops += 1) {
      const hop = await this.request(url, deadline);
      if ('image' in hop) return hop.image;
      if (hops >= MAX_REDIRECTS) throw new MediaError(`more than ${MAX_REDIRECTS} redirects`);
      url = this.parse(hop.redirect.toString());
    }
  }

  private parse(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new MediaError(`not a valid URL: ${raw}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new MediaError(`only http and https URLs are fetched (got ${url.protocol.replace(/:$/, '')})`);
    }
    return url;
  }

  /** DNS resolution that refuses disallowed addresses, handed to http.request as its `lookup`. */
  private lookupFor(hostname: string): LookupFunction {
    return (host, options, callback) => {
      dnsLookup(host, { all: true, family: options.family ?? 0 }, (err, addresses: LookupAddress[]) => {
        if (err) return callback(new MediaError(`cannot resolve ${hostname}: ${err.code ?? err.message}`), '', 0);
        if (!addresses.length) return callback(new MediaError(`${hostname} has no address`), '', 0);
        for (const a of addresses) {
          const why = this.policy.refusal(a.address, hostname);
          if (why) return callback(new MediaError(`refused to fetch from ${hostname}: ${why}`), '', 0);
        }
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        return callback(null, addresses[0].address, addresses[0].family);
      });
    };
  }

  private request(url: URL, deadline: number): Promise<Hop> {
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(hostname)) {
      const why = this.policy.refusal(hostname, hostname);
      if (why) return Promise.reject(new MediaError(`refused to fetch from ${hostname}: ${why}`));
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) return Promise.reject(this.timeoutError());
    const client = url.protocol === 'https:' ? https : http;
    const maxBytes = this.config.media.maxBytes;

    return new Promise<Hop>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, hop?: Hop) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          req.destroy();
          reject(err instanceof MediaError ? err : new MediaError(`fetch failed: ${err.message}`));
        } else {
          resolve(hop as Hop);
        }
      };
      const timer = setTimeout(() => finish(this.timeoutError()), remaining);

      const req = client.request(url, {
        method: 'GET',
        lookup: this.lookupFor(hostname),
        agent: false,
        headers: { accept: 'image/*,*/*;q=0.5', 'user-agent': 'livegoods-media/1.0' },
      });
      req.on('error', (err) => finish(err));
      req.on('response', (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400 && res.headers.location) {
          res.resume();
          let target: URL;
          try {
            target = new URL(res.headers.location, url);
          } catch {
            return finish(new MediaError(`bad redirect location: ${res.headers.location}`));
          }
          return finish(null, { redirect: target });
        }
        if (status < 200 || status >= 300) {
          res.resume();
          return finish(new MediaError(`the image server answered HTTP ${status}`));
        }
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) {
          finish(new MediaError(`image is ${declared} bytes; the limit is ${maxBytes}`));
          return void res.destroy();
        }
        const hash = createHash('sha256');
        const chunks: Buffer[] = [];
        let total = 0;
        res.on('data', (chunk: Buffer) => {
          total += chunk.length;
          if (total > maxBytes) {
            // Settle first: destroying the response fires 'aborted', whose message would win otherwise.
            finish(new MediaError(`image is over the ${maxBytes}-byte limit`));
            return void res.destroy();
          }
          hash.update(chunk);
          chunks.push(chunk);
        });
        res.on('error', (err) => finish(err));
        res.on('aborted', () => finish(new MediaError('the image server closed the connection early')));
        res.on('end', () => {
          if (!res.complete) return finish(new MediaError('the image server closed the connection early'));
          const contentType = typeof res.headers['content-type'] === 'string' ? res.headers['content-type'] : null;
          finish(null, { image: { bytes: Buffer.concat(chunks, total), checksum: hash.digest('hex'), contentType } });
        });
      });
      req.end();
    });
  }

  private timeoutError(): MediaError {
    return new MediaError(`no complete answer within ${this.config.media.fetchTimeoutMs} ms`);
  }
}
