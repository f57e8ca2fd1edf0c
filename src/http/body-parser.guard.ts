import { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { applyDecorators, CanActivate, ExecutionContext, Injectable, NestInterceptor, SetMetadata, Type, UseInterceptors } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { urlencoded } from 'express';
import type { Request, RequestHandler, Response } from 'express';
import { AppConfig } from '../config/app-config';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { formBodies } from '../common/validation/api-validation.pipe';
import { TimeSlicer } from '../common/util/time-slicer';
import { checkJsonShape, JsonShapeLimits } from './json-shape';
import { parseJsonInSlices } from './sliced-json';

export type BodySize = 'item' | 'bulk';
const BODY_SIZE = 'livegoods:bodySize';

/** The route takes a large body (POST /sync): SYNC_BODY_LIMIT instead of BODY_LIMIT, and more values. */
export const LargeBody = (): MethodDecorator & ClassDecorator => SetMetadata(BODY_SIZE, 'bulk');

const READS_MULTIPART = 'livegoods:readsMultipart';

/**
 * The route reads multipart/form-data bodies, with the interceptor given (multer's): every other route
 * refuses one with 415 (refuseUnreadBody), as it refuses text/plain, instead of answering as if nothing
 * had been sent ("name is required" for `curl -F name=…`).
 */
export const ReadsMultipart = (interceptor: Type<NestInterceptor> | NestInterceptor): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(READS_MULTIPART, true), UseInterceptors(interceptor));

/** Deepest nesting any route accepts: a goods body is flat, a sync body an array of flat objects. */
const MAX_DEPTH = 16;
/** Values (see checkJsonShape) an ordinary body may hold: a reorder of 10,000 goods ids fits. */
const ITEM_MAX_VALUES = 20_000;
/** Values per sync element, on average over the body: far more than a goods item, even echoed back with its media. */
const BULK_VALUES_PER_ITEM = 100;
/**
 * One sync element (or a sync body that is not an array) at most: values and bytes of JSON text. A goods
 * item, even echoed back with its media and a 10,000-character description written in escapes, holds
 * under a hundred values and 100 KB; one element of the whole body's size (a million keys) was parsed and
 * walked in one go, the event loop held 4-6 s.
 */
const BULK_ELEMENT = { maxValues: 1000, maxBytes: 256 * 1024 };

interface Parsers {
  form: RequestHandler;
  limit: string;
  /** `limit` in bytes. */
  limitBytes: number;
  shape: JsonShapeLimits;
}

interface HttpError {
  type?: string;
  status?: number;
  statusCode?: number;
  message?: string;
}

const NO_BODY = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/**
 * Reads JSON and form bodies per route, after routing and after the guards: a request without a valid
 * token is refused before a byte of its body is parsed, and each route gets its own size limit (small
 * for single items, SYNC_BODY_LIMIT for sync). Right after parsing, the body's nesting and number of
 * values are checked, before validation. Multipart bodies are left to the upload interceptor.
 *
 * It is the last of the global guards (see AuthModule) rather than an interceptor: a global interceptor
 * costs every request, bodies or not, Nest's interceptor chain (an rxjs pipeline and an async-resource
 * binding per call), about 30 µs of CPU per request measured on the goods list.
 */
@Injectable()
export class BodyParserGuard implements CanActivate {
  private readonly parsers: Record<BodySize, Parsers>;

  constructor(
    private readonly reflector: Reflector,
    config: AppConfig,
  ) {
    const build = (limit: string, maxValues: number, element?: JsonShapeLimits['element']): Parsers => ({
      // `depth` is a body-parser 2 option its typings do not list yet.
      form: urlencoded({ limit, extended: true, parameterLimit: 1000, depth: 8, verify: refuseJsonAsForm } as Parameters<typeof urlencoded>[0]),
      limit,
      limitBytes: bytesOfLimit(limit),
      shape: { maxDepth: MAX_DEPTH, maxValues, element },
    });
    this.parsers = {
      item: build(config.server.bodyLimit, ITEM_MAX_VALUES),
      bulk: build(config.server.syncBodyLimit, Math.max(ITEM_MAX_VALUES, config.limits.syncMaxItems * BULK_VALUES_PER_ITEM), BULK_ELEMENT),
    };
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    if (!NO_BODY.has(req.method) && req.body === undefined) {
      readUtf8LabelsAsUtf8(req);
      const size = this.reflector.getAllAndOverride<BodySize | undefined>(BODY_SIZE, [context.getHandler(), context.getClass()]) ?? 'item';
      const parsers = this.parsers[size];
      const res = http.getResponse<Response>();
      const charset = charsetOf(req);
      // RFC 8259: JSON between systems is UTF-8. Other charsets would also skip the checks made on the
      // raw text before parsing (nesting, number of values) and the sliced parsing of bulk bodies.
      if (charset !== undefined && /^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
        throw new ApiException(ErrorCode.UnsupportedMediaType, `JSON bodies are read as UTF-8 only, not ${charset.slice(0, 40)}`);
      }
      refuseDeclaredOverLimit(req, parsers);
      if (charset === undefined) {
        // JSON bodies are taken as bytes (decompressed) and parsed by parseJsonInSlices: strict (only objects
        // and arrays at the top, as every route expects), their nesting and size checked on the raw text
        // before parsing, numbers JSON.parse would round read as their digits, and a large array parsed a
        // group of elements at a time.
        if (req.is('application/json')) req.body = await readJsonBody(req, parsers.limitBytes, parsers.limit);
        if (Buffer.isBuffer(req.body)) {
          req.body = await parseJsonInSlices(req.body, parsers.shape, new TimeSlicer()).catch((err: HttpError) => {
            throw err instanceof ApiException ? err : refusalOf(err, parsers.limit);
          });
          return true;
        }
      }
      if (req.body === undefined) {
        await this.run(parsers.form, req, res, parsers);
        if (req.body && typeof req.body === 'object') formBodies.add(req.body as object);
      }
      if (req.body === undefined) {
        refuseUnreadBody(req, this.reflector.getAllAndOverride<boolean | undefined>(READS_MULTIPART, [context.getHandler(), context.getClass()]) === true);
      }
      checkJsonShape(req.body, parsers.shape);
    }
    return true;
  }

  /**
   * Runs one body-parser middleware. When it reads the body, the bytes are counted as they come too: a body
   * sent without a Content-Length (chunked) or compressed is refused with 413 as soon as it is over the
   * limit, a compressed one also as soon as what it decompresses to is (a bomb), and one that does not
   * decompress with 400 as soon as that fails. body-parser would answer only once the client had sent it
   * all (it reads a refused body to its end first), and one that never ends held the request until
   * REQUEST_TIMEOUT_MS; the rest is now read and thrown away for a few seconds after the answer
   * (ConnectionGuard).
   */
  private run(parser: RequestHandler, req: Request, res: Response, { limit, limitBytes }: Parsers): Promise<void> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let received = 0;
      // A body sent as it is with a Content-Length cannot pass the limit (refuseDeclaredOverLimit): not counted.
      const counted = declaredLength(req) === undefined;
      const compressed = contentEncodingOf(req) !== '';
      const cap = compressed ? compressedCap(limitBytes) : limitBytes;
      const count = (chunk: Buffer | string) => {
        received += chunk.length;
        if (received > cap) settle(overLimit(limit));
      };
      /** Removes what follows the decompression stream, if anything does. */
      let done = () => {};
      const settle = (err?: ApiException) => {
        if (settled) return;
        settled = true;
        req.off('data', count);
        done();
        if (err) reject(err);
        else resolve();
      };
      // A compressed body is read through a decompression stream the parser pipes the request into: it is
      // taken as it is piped (in the parser's synchronous start), to follow what comes out of it.
      let inflated: Readable | undefined;
      if (compressed) {
        req.pipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
          inflated = destination as unknown as Readable;
          return Readable.prototype.pipe.call(req, destination, options) as T;
        };
      }
      try {
        void parser(req, res, (err?: unknown) => settle(err ? refusalOf(err, limit) : undefined));
      } finally {
        if (compressed) delete (req as Partial<Request>).pipe;
      }
      // Only beside the parser's own reading: a listener alone would start the body flowing to nobody
      // (a multipart body the upload interceptor reads next).
      if (counted && !settled && req.listenerCount('data') > 0) req.on('data', count);
      // body-parser stops reading a compressed body as soon as what it decompresses to passes the limit,
      // or does not decompress, but answers only once the client has sent all of it (a bomb trickled in
      // would hold the request until REQUEST_TIMEOUT_MS): the same refusal, at once.
      if (inflated && !settled) {
        let out = 0;
        const stream = inflated;
        const inflatedCount = (chunk: Buffer | string) => {
          out += chunk.length;
          if (out > limitBytes) settle(overLimit(limit));
        };
        const failed = (err: HttpError) => settle(refusalOf(err, limit));
        stream.on('data', inflatedCount);
        stream.once('error', failed);
        done = () => {
          stream.off('data', inflatedCount);
          stream.off('error', failed);
        };
      }
    });
  }
}

/**
 * A JSON body's bytes, decompressed (gzip, deflate, br), read into one buffer as its chunks come: a
 * buffer of its Content-Length when it has one (within the route's limit: refuseDeclaredOverLimit), else
 * of the route's limit, of which only the bytes written take memory. raw-body (body-parser) kept the
 * chunks and joined them at the end in one Buffer.concat: for a 32 MB sync body that one copy, the new
 * buffer's pages touched for the first time, held the event loop 100-190 ms on a 2-core VM; a copy per
 * chunk spreads it over the reading. Refused at once, in raw-body's terms (refusalOf): past the limit
 * (413; a compressed body as soon as what it inflates to is, or as soon as it is itself past the limit
 * and a margin), a body that does not decompress (400), an unknown Content-Encoding (415), one that ends
 * early or runs past its Content-Length (400).
 */
export function readJsonBody(req: Readable & { complete?: boolean; headers: Request['headers'] }, limitBytes: number, limit: string): Promise<Buffer> {
  const encoding = contentEncodingOf(req as Request);
  const declared = declaredLength(req as Request);
  let inflate: Transform | undefined;
  if (encoding) {
    inflate = decompression(encoding);
    if (!inflate) {
      return Promise.reject(
        refusalOf({ type: 'encoding.unsupported', status: 415, message: `unsupported content encoding "${encoding.slice(0, 40)}"` }, limit),
      );
    }
  }
  const source: Readable = inflate ?? req;
  const capacity = declared ?? limitBytes;
  const cap = compressedCap(limitBytes);
  return new Promise((resolve, reject) => {
    const body = Buffer.allocUnsafe(capacity);
    let at = 0;
    let received = 0;
    const stop = () => {
      source.off('data', data);
      source.off('end', end);
      req.off('data', counted);
      req.off('error', aborted);
      req.off('close', closed);
      inflate?.off('error', undecodable);
    };
    const refuse = (err: HttpError) => {
      stop();
      if (inflate) {
        req.unpipe(inflate);
        inflate.destroy();
      }
      // The rest is read and thrown away (ConnectionGuard closes the connection if it does not end soon).
      req.resume();
      reject(refusalOf(err, limit));
    };
    const data = (chunk: Buffer) => {
      if (chunk.length > capacity - at) {
        return refuse(declared === undefined ? { type: 'entity.too.large' } : { type: 'request.size.invalid' });
      }
      chunk.copy(body, at);
      at += chunk.length;
    };
    const end = () => {
      stop();
      if (declared !== undefined && at !== declared) reject(refusalOf({ type: 'request.size.invalid' }, limit));
      else resolve(body.subarray(0, at));
    };
    const counted = (chunk: Buffer) => {
      received += chunk.length;
      if (received > cap) refuse({ type: 'entity.too.large' });
    };
    const aborted = () => refuse({ type: 'request.aborted' });
    const closed = () => {
      if (!req.complete) refuse({ type: 'request.aborted' });
    };
    // A zlib error carries no type: "could not be decoded".
    const undecodable = (err: Error) => refuse({ status: 400, message: err.message });
    source.on('data', data);
    source.once('end', end);
    req.once('error', aborted);
    req.once('close', closed);
    if (inflate) {
      req.on('data', counted);
      inflate.once('error', undecodable);
      req.pipe(inflate);
    }
  });
}

/**
 * The most bytes a compressed body may take on the wire for a limit on what it decompresses to: it may be a
 * little larger than that (deflate stores what does not compress, at most about 0.1% more); past this
 * margin it is over the limit whatever it holds.
 */
function compressedCap(limitBytes: number): number {
  return limitBytes + Math.ceil(limitBytes / 1000) + 1024;
}

/** The decompression stream of a Content-Encoding body-parser reads; undefined for any other. */
function decompression(encoding: string): Transform | undefined {
  switch (encoding) {
    case 'gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/** BODY_LIMIT and SYNC_BODY_LIMIT as the settings take them (512kb, 1mb, 100b), in bytes as body-parser counts them. */
export function bytesOfLimit(limit: string): number {
  const m = /^(\d+)(b|kb|mb)$/i.exec(limit);
  if (!m) throw new Error(`not a body limit: ${limit}`);
  return Number(m[1]) * { b: 1, kb: 1024, mb: 1024 * 1024 }[m[2].toLowerCase() as 'b' | 'kb' | 'mb'];
}

/**
 * A body whose Content-Length alone is over the route's limit is refused before a byte of it is read, so the
 * client has its 413 at once instead of after sending it all (body-parser would read it to its end first).
 * Node still reads and discards what the client goes on sending, to keep the connection for its next
 * request, for UNREAD_BODY_LINGER_MS at most (ConnectionGuard). Only for bodies sent as they are: a compressed body's limit is on its decompressed size.
 * Multipart bodies are the upload interceptor's.
 */
function refuseDeclaredOverLimit(req: Request, parsers: Parsers): void {
  const declared = declaredLength(req);
  if (declared === undefined || declared <= parsers.limitBytes) return;
  if (/^multipart\//i.test(req.headers['content-type'] ?? '')) return;
  throw overLimit(parsers.limit);
}

/** The request's Content-Encoding in lower case; '' for a body sent as it is (none, or `identity`). */
function contentEncodingOf(req: Request): string {
  const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  return encoding === 'identity' ? '' : encoding;
}

/** The Content-Length of a body sent without a Content-Encoding, if it has one. */
export function declaredLength(req: Request): number | undefined {
  if (contentEncodingOf(req) !== '') return undefined;
  const length = req.headers['content-length'];
  return length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : undefined;
}

/**
 * A body that neither parser read and no upload handler will (anything but multipart on a route that reads
 * it): 415, rather than a route answering as if nothing had been sent ("name is required" for a JSON body
 * sent as text/plain, as fetch() labels a string body, or for a multipart form sent to a JSON route).
 */
function refuseUnreadBody(req: Request, readsMultipart: boolean): void {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (!hasBody || (readsMultipart && type === 'multipart/form-data')) return;
  const what = type ? `A body of type ${type.slice(0, 100)}` : 'A body without a Content-Type';
  throw new ApiException(ErrorCode.UnsupportedMediaType, `${what} is not read: send JSON as application/json (or a form as application/x-www-form-urlencoded)`);
}

/**
 * A form body that is JSON text: what `curl -d '{"name":…}'` sends without `-H 'Content-Type:
 * application/json'` (curl labels it a form). Read as a form it would be one field named after the whole
 * text, and the route would answer "name is required"; it is refused with 415 saying what to send instead.
 */
function refuseJsonAsForm(_req: unknown, _res: unknown, buf: Buffer): void {
  for (const byte of buf) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    if (byte === 0x7b || byte === 0x5b) throw Object.assign(new Error('JSON sent as a form'), { type: 'entity.json.as.form', status: 415 });
    return;
  }
}

/** A Content-Type's charset parameter: what comes before its label (an opening quote too), and the label. */
const CHARSET_PARAM = /(;\s*charset\s*=\s*"?)([^";\s]*)/i;

/** The WHATWG Encoding standard's other labels of UTF-8 (`charset=utf8` is what some clients write). */
const UTF8_LABELS = new Set(['utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8']);

/**
 * A Content-Type whose charset names UTF-8 by another of its labels is read as `charset=utf-8` (the one
 * label body-parser and the JSON check know): the body is UTF-8 all the same.
 */
function readUtf8LabelsAsUtf8(req: Request): void {
  const type = req.headers['content-type'];
  if (!type) return;
  const read = type.replace(CHARSET_PARAM, (all: string, param: string, label: string) => (UTF8_LABELS.has(label.toLowerCase()) ? `${param}utf-8` : all));
  if (read !== type) req.headers['content-type'] = read;
}

/** The Content-Type's charset in lower case; undefined when it names none or utf-8 (what JSON is). */
function charsetOf(req: Request): string | undefined {
  const charset = CHARSET_PARAM.exec(req.headers['content-type'] ?? '')?.[2]?.toLowerCase();
  return charset === 'utf-8' ? undefined : charset;
}

/** 413 for a body over the route's limit (BODY_LIMIT or SYNC_BODY_LIMIT, as the setting is written). */
function overLimit(limit: string): ApiException {
  return ApiException.tooLarge(`The request body is over the ${limit} limit of this route`);
}

/** A body-parser (or zlib) error as the API's error codes tell it; never a 500. */
export function refusalOf(err: HttpError, limit: string): ApiException {
  switch (err.type) {
    case 'entity.too.large':
      return overLimit(limit);
    case 'entity.parse.failed':
      return ApiException.invalid('Malformed JSON body', [{ field: 'body', message: 'must be valid JSON (an object or an array)' }]);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiException(ErrorCode.UnsupportedMediaType, err.message ?? 'Unsupported body encoding');
    case 'entity.json.as.form':
      return new ApiException(
        ErrorCode.UnsupportedMediaType,
        'The body is JSON but labelled a form (application/x-www-form-urlencoded, as curl -d labels it): send it with Content-Type: application/json',
      );
    case 'request.aborted':
      return ApiException.invalid('The request body ended early');
    case 'request.size.invalid':
      return ApiException.invalid('The request body does not match its Content-Length');
    case 'parameters.too.many':
      return ApiException.tooLarge('The form body has too many fields');
    case 'querystring.parse.rangeError':
      return ApiException.invalid('The form body is nested too deeply');
    case 'entity.too.deep':
      return ApiException.invalid(err.message ?? 'The request body is nested too deeply', [{ field: 'body', message: 'is nested too deeply' }]);
    case 'entity.too.many.values':
    case 'entity.element.too.large':
      return ApiException.tooLarge(err.message ?? 'The request body holds too many values');
    case 'entity.number.too.long':
      return ApiException.invalid(err.message ?? 'The request body holds a number too long', [{ field: 'body', message: 'holds a number too long' }]);
    default: {
      const status = err.status ?? err.statusCode ?? 400;
      // zlib errors (a gzip, deflate or brotli body that does not decompress) carry no type.
      if (status === 400 && !err.type) return ApiException.invalid('The request body could not be decoded (check its Content-Encoding)');
      return ApiException.invalid(`The request body cannot be read${err.message ? ` (${err.message})` : ''}`);
    }
  }
}
