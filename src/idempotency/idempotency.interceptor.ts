import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Observable, tap } from 'rxjs';
import { runWithCommitMark } from '../common/util/commit-marks';
import type { AuthenticatedRequest } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { AppConfig } from '../config/app-config';
import { PreparedResponse } from '../http/prepared-response';
import { fingerprintOf, IDEMPOTENCY_KEY_HEADER, keyHashOf, parseIdempotencyKey, REPLAYED_HEADER, UploadedPart, uploadedFilesOf } from './idempotency-request';
import { Hold, IdempotencyService } from './idempotency.service';

type UploadRequest = Request & AuthenticatedRequest & { file?: UploadedPart; files?: UploadedPart[] | Record<string, UploadedPart[]> };

const DECODERS: Record<string, (data: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  br: promisify(brotliDecompress),
  deflate: promisify(inflate),
};

/** Seconds a client is told to wait before retrying a key that is in use. */
const RETRY_AFTER_SECONDS = 1;

/** Headers that belong to one exchange, not to the answer: never stored nor replayed. */
const NOT_STORED = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-encoding',
  'vary',
  'x-request-id',
  'set-cookie',
]);

/**
 * Statuses that are not final answers: the key is released and a retry runs the request again. 5xx
 * (503: the database was away; nothing was committed), and the 4xx that say "not now" rather than
 * "never" (401, 403, 408, 425, 429). Every other answer (2xx, and 4xx: the request itself is wrong)
 * is stored.
 */
export function isFinalStatus(status: number): boolean {
  if (status >= 500) return false;
  return ![401, 403, 408, 425, 429].includes(status);
}

/** The headers of an answer worth replaying (Content-Type, Location, Content-Disposition, the route's own). */
export function storedHeadersOf(res: Pick<Response, 'getHeaders'>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.getHeaders())) {
    if (value === undefined || NOT_STORED.has(name) || name.startsWith('access-control-')) continue;
    out[name] = Array.isArray(value) ? value : String(value);
  }
  return out;
}

/**
 * Idempotency-Key on an authenticated write (see IdempotencyModule for which routes run it, and
 * docs/api-reference.md, Idempotency keys): runs after the guards (rate limits, authentication, body
 * parsing) and after the route's own interceptors (an upload is read), right before the handler.
 *
 * Without the header, or without a tenant, it does nothing. With it: the key is checked (400), the
 * request fingerprinted, and the key taken in the database: a stored answer is replayed (with
 * `Idempotent-Replayed: true`), a key of another request is 422, a key in use 409 with Retry-After.
 * A request that takes the key runs; its answer is captured as it is written (before compression) and
 * stored before the last byte is sent, or the key is released when the answer is not final.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly service: IdempotencyService,
    private readonly config: AppConfig,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const req = http.getRequest<UploadRequest>();
    const raw = req.headersDistinct['idempotency-key'];
    if (raw === undefined || !req.tenant) return next.handle();
    const key = parseIdempotencyKey(raw);
    const fingerprint = await fingerprintOf({ method: req.method, url: req.originalUrl, body: req.body as unknown, files: uploadedFilesOf(req) });
    const claim = await this.service.claim(req.tenant, keyHashOf(key), fingerprint);
    switch (claim.kind) {
      case 'mismatch':
        throw new ApiException(
          ErrorCode.InvalidTransition,
          `This ${IDEMPOTENCY_KEY_HEADER} was used for a different request (method, path, query or body); send a new key for a new request`,
        );
      case 'running':
        throw new ApiException(ErrorCode.Conflict, `A request with this ${IDEMPOTENCY_KEY_HEADER} is still running; retry after it ends`, undefined, {
          'Retry-After': String(RETRY_AFTER_SECONDS),
        });
      case 'replay': {
        const { statusCode, headers, body } = claim.answer;
        if (body === null) {
          throw ApiException.conflict(
            `The request with this ${IDEMPOTENCY_KEY_HEADER} was applied (HTTP ${statusCode}) but its answer was too large to keep; it is not applied again`,
          );
        }
        throw new PreparedResponse(statusCode, { ...headers, [REPLAYED_HEADER]: 'true' }, body);
      }
      case 'applied':
        throw ApiException.conflict(
          `The request with this ${IDEMPOTENCY_KEY_HEADER} was applied, but its node stopped before its answer was kept; it is not applied again: read the current state instead`,
        );
      case 'run': {
        const res = http.getResponse<Response>();
        // The handler runs (from its subscription on) with the key's commit mark: its first write
        // transaction marks the key applied in the same commit, so that a retry after this node dies
        // between that commit and storing the answer is not applied a second time. The mark ends with
        // the answer: work the request started and that goes on after it is not the request's write, nor
        // is storing or releasing the key (the claim and its lease renewals come before the mark).
        const mark = this.service.commitMark(claim.hold);
        const capture = this.capture(res, claim.hold, () => (mark.pending = false));
        const handled = new Observable<unknown>((subscriber) => runWithCommitMark(mark, () => next.handle().subscribe(subscriber)));
        // An error after the head went out (a stream that broke) ends a partial answer: not stored.
        return handled.pipe(tap({ error: () => res.headersSent && capture.spoil() }));
      }
      default: {
        const unreachable: never = claim;
        return unreachable;
      }
    }
  }

  /**
   * Follows what the route writes (up to IDEMPOTENCY_MAX_RESPONSE_BYTES; streamed answers too) and,
   * when it ends its answer, stores it or releases the key before its last bytes and its end go out.
   */
  private capture(res: Response, hold: Hold, answered: () => void): { spoil(): void } {
    const max = this.config.idempotency.maxResponseBytes;
    let chunks: Buffer[] | null = [];
    let size = 0;
    let ended = false;
    let spoiled = false;
    // How the bytes seen here are encoded: a small body comes already compressed (its Content-Encoding
    // set before it is written, see compressionMiddleware); a larger one is compressed after this point,
    // by the `compression` middleware, which sets the header as the first bytes pass: these are plain.
    const seen: { encoding?: string } = {};
    const take = (chunk: unknown, charset: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || !chunks) return;
      seen.encoding ??= String(res.getHeader('Content-Encoding') ?? 'identity').toLowerCase();
      const bytes =
        typeof chunk === 'string' ? Buffer.from(chunk, typeof charset === 'string' ? (charset as BufferEncoding) : 'utf8') : Buffer.from(chunk as Uint8Array);
      size += bytes.length;
      if (size > max) chunks = null;
      else chunks.push(bytes);
    };
    // Bound to this response (whatever compression or others set there before); put back when it ends.
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    // The latest write is held back until the next one or the end: a streamed answer (StreamableFile)
    // writes its whole body before calling end(), and with a Content-Length the client has the answer
    // once the last byte arrives; it must not arrive before the answer is stored, or a retry sent at
    // once would find the key still running (409) instead of replaying it.
    let held: unknown[] | null = null;
    res.write = function (chunk: unknown, ...rest: unknown[]): boolean {
      if (ended) return false;
      take(chunk, rest[0]);
      const previous = held;
      held = [chunk, ...rest];
      return previous ? write(...previous) : true;
    } as Response['write'];
    res.end = ((chunk?: unknown, encoding?: unknown, cb?: unknown): Response => {
      if (ended) return res;
      ended = true;
      take(chunk, encoding);
      answered();
      const body = chunks ? Buffer.concat(chunks) : null;
      chunks = null;
      const send = (): void => {
        res.write = write as Response['write'];
        res.end = end as Response['end'];
        if (held) write(...held);
        held = null;
        end(chunk, encoding, cb);
      };
      // A body shorter or longer than its Content-Length is a broken answer, not a final one.
      const declared = Number(res.getHeader('Content-Length') ?? NaN);
      const whole = !spoiled && !(body && Number.isFinite(declared) && declared !== size);
      void this.settle(res, hold, body, seen.encoding ?? 'identity', whole).then(send, send);
      return res;
    }) as Response['end'];
    return {
      spoil: () => {
        spoiled = true;
      },
    };
  }

  /**
   * The body as the route meant it, from the bytes captured in `encoding` (see capture): small answers
   * come compressed, and a replay is compressed, or not, for the client that asks again. null when it
   * does not decode within IDEMPOTENCY_MAX_RESPONSE_BYTES.
   */
  private async decoded(encoding: string, body: Buffer | null): Promise<Buffer | null> {
    if (!body || encoding === 'identity') return body;
    const decode = DECODERS[encoding];
    if (!decode) return null;
    try {
      return await decode(body, { maxOutputLength: this.config.idempotency.maxResponseBytes });
    } catch {
      return null;
    }
  }

  /** Stores a final answer, or releases the key; a failure is logged (the lease then lapses on its own). */
  private async settle(res: Response, hold: Hold, body: Buffer | null, encoding: string, whole: boolean): Promise<void> {
    try {
      if (whole && isFinalStatus(res.statusCode)) await this.service.store(hold, res.statusCode, storedHeadersOf(res), await this.decoded(encoding, body));
      else await this.service.release(hold);
    } catch (err) {
      this.logger.warn(
        `could not record the answer of an idempotent request (a key to release is tried again every 2 s; a final answer's key frees after IDEMPOTENCY_LEASE): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
}
