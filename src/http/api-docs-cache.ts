import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { INestApplication } from '@nestjs/common';
import etag from 'etag';
import Negotiator from 'negotiator';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';

/**
 * How many base URLs the docs are kept for. With PUBLIC_BASE_URL set there is one; without it each
 * scheme and Host a client names is one (localhost, the public name, an internal address…). The bound
 * keeps Host headers made up by a client from growing memory: past it the least recently asked is dropped.
 */
export const API_DOCS_VARIANTS = 4;
/**
 * Answers built for a base URL not in the cache, at most, per API_DOCS_RENDER_WINDOW_MS on a node. Building
 * one costs about 9 ms of CPU; a client sending a new Host header with each request would otherwise have
 * every request build one. Past it, a new base URL is sent the answer of the node's own base (see handler).
 */
export const API_DOCS_RENDERS_PER_WINDOW = 32;
export const API_DOCS_RENDER_WINDOW_MS = 60_000;

/** One answer as it is sent: its bytes, its Content-Type and the (weak) ETag Express would give them. */
export interface CachedDocsAnswer {
  body: Buffer;
  type: string;
  etag: string;
  /** The body compressed, once per encoding a client asked for (built in zlib's thread pool, then kept). */
  encoded: Partial<Record<DocsEncoding, Promise<Buffer>>>;
}

type DocsEncoding = 'br' | 'gzip';

/** The same choice and settings as the compression middleware (src/http/compression.ts): br (quality 4) before gzip. */
const ENCODINGS = ['br', 'gzip', 'identity'];
const PREFERRED = ['br', 'gzip'];
const compressors: Record<DocsEncoding, (body: Buffer) => Promise<Buffer>> = {
  br: (body) => promisify(brotliCompress)(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }),
  gzip: (body) => promisify(gzip)(body),
};

/**
 * The OpenAPI document as served from `baseUrl`: its server's `origin` variable defaults to that address,
 * so that Swagger UI's "Try it out" calls the service the page came from.
 */
export function documentServedFrom(document: OpenAPIObject, baseUrl: string): OpenAPIObject {
  return {
    ...document,
    servers: (document.servers ?? []).map((server) => ({
      ...server,
      variables: { origin: { ...server.variables?.origin, default: baseUrl } },
    })),
  };
}

const caches = new WeakMap<INestApplication, ApiDocsCache>();

/** The docs cache of an app (set by configureApp), for the tests. */
export function apiDocsCacheOf(app: INestApplication): ApiDocsCache | undefined {
  return caches.get(app);
}

/**
 * The answers of the API docs that carry the whole OpenAPI document (about 325 KB: /docs-json,
 * /docs-yaml and Swagger UI's swagger-ui-init.js), built once per base URL and path by SwaggerModule's
 * own handlers and then sent from here as they are (bytes, type, ETag; a matching If-None-Match is a
 * 304), instead of being patched and serialised again for every request. At most `maxVariants` base
 * URLs are kept.
 */
export class ApiDocsCache {
  private readonly byBase = new Map<string, Map<string, CachedDocsAnswer>>();
  /** Answers built so far (one per base URL and path, again after an eviction). */
  renders = 0;
  /** Answers compressed so far (one per answer and encoding asked for). */
  compressions = 0;

  /** Renders in the current window, and when it started. */
  private windowRenders = 0;
  private windowStart = 0;

  constructor(readonly maxVariants = API_DOCS_VARIANTS) {}

  /** Whether an answer may be built for a new base URL now (counts it if so). */
  private mayRender(now = Date.now()): boolean {
    if (now - this.windowStart >= API_DOCS_RENDER_WINDOW_MS) {
      this.windowStart = now;
      this.windowRenders = 0;
    }
    if (this.windowRenders >= API_DOCS_RENDERS_PER_WINDOW) return false;
    this.windowRenders += 1;
    return true;
  }

  /** The base URLs kept now. */
  get variants(): number {
    return this.byBase.size;
  }

  get(baseUrl: string, path: string): CachedDocsAnswer | undefined {
    const answers = this.byBase.get(baseUrl);
    const answer = answers?.get(path);
    if (answers && answer) {
      // The most recently used base URL goes last: the first one is the one to drop.
      this.byBase.delete(baseUrl);
      this.byBase.set(baseUrl, answers);
    }
    return answer;
  }

  set(baseUrl: string, path: string, text: string, type: string): CachedDocsAnswer {
    const body = Buffer.from(text);
    // What res.send gives a string: its type with the charset it encodes it in.
    const answer = { body, type: /;\s*charset=/i.test(type) ? type : `${type}; charset=utf-8`, etag: etag(body, { weak: true }), encoded: {} };
    let answers = this.byBase.get(baseUrl);
    if (!answers) {
      while (this.byBase.size >= this.maxVariants) this.byBase.delete(this.byBase.keys().next().value as string);
      answers = new Map();
      this.byBase.set(baseUrl, answers);
    }
    answers.set(path, answer);
    this.renders += 1;
    return answer;
  }

  /**
   * A route handler for `path`, to be registered before SwaggerModule's own: answers from the cache, or
   * lets SwaggerModule's handler build the answer and keeps what it sends.
   */
  handler(path: string, baseUrlOf: (req: Request) => string, ownBase: string) {
    return (req: Request, res: Response, next: NextFunction): void => {
      let baseUrl = baseUrlOf(req);
      let cached = this.get(baseUrl, path);
      if (!cached && baseUrl !== ownBase && !this.mayRender()) {
        // Too many new base URLs lately: the answer names the node's own base (PUBLIC_BASE_URL, or
        // localhost and PORT), which Swagger UI lets the reader change, rather than being built again.
        baseUrl = ownBase;
        cached = this.get(baseUrl, path);
        (req as Request & { docsBaseUrl?: string }).docsBaseUrl = ownBase;
      }
      if (cached) {
        this.send(req, res, cached, next);
        return;
      }
      const original = res.send;
      res.send = ((body?: unknown): Response => {
        res.send = original;
        if (typeof body !== 'string' || res.statusCode !== 200) return original.call(res, body);
        return this.send(req, res, this.set(baseUrl, path, body, String(res.getHeader('Content-Type') ?? 'text/plain')), next);
      }) as Response['send'];
      next();
    };
  }

  /**
   * Sends a kept answer: compressed (br or gzip, as the client prefers) from the bytes compressed for an
   * earlier client when there are some, so that the 325 KB document is not compressed again for every
   * request; the compression middleware leaves an answer that already has a Content-Encoding alone.
   */
  private send(req: Request, res: Response, answer: CachedDocsAnswer, next: NextFunction): Response {
    res.setHeader('Content-Type', answer.type);
    res.setHeader('ETag', answer.etag);
    res.vary('Accept-Encoding');
    const method =
      req.headers['accept-encoding'] && req.method !== 'HEAD' && !req.fresh ? new Negotiator(req).encoding(ENCODINGS, { preferred: PREFERRED }) : null;
    if (method !== 'br' && method !== 'gzip') return res.send(answer.body);
    let encoded = answer.encoded[method];
    if (!encoded) {
      encoded = compressors[method](answer.body);
      this.compressions += 1;
      answer.encoded[method] = encoded;
      // A failed compression is not kept: the next client tries again.
      encoded.catch(() => delete answer.encoded[method]);
    }
    encoded.then(
      (bytes) => {
        res.setHeader('Content-Encoding', method);
        res.send(bytes);
      },
      (error: unknown) => next(error),
    );
    return res;
  }
}

/** Keeps `cache` as the docs cache of `app` (apiDocsCacheOf). */
export function registerApiDocsCache(app: INestApplication, cache: ApiDocsCache): void {
  caches.set(app, cache);
}
