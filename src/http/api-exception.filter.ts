import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDatabaseUnavailable } from '../database/database-errors';
import { redactCredentials } from '../common/util/redact';
import { ApiException, FieldError } from '../common/errors/api.exception';
import { codeOfHttpStatus, ErrorCode, httpStatusOf } from '../common/errors/error-codes';
import { PreparedResponse } from './prepared-response';

export interface ErrorBody {
  _s: number;
  _e: string;
  errors?: FieldError[];
}

interface BodyParserError {
  type?: string;
  status?: number;
  expose?: boolean;
  message?: string;
}

/** A request URL as a person reads it (percent-decoded where it decodes), for the log. */
function decodedForLog(url: string): string {
  try {
    return decodeURIComponent(url);
  } catch {
    return url;
  }
}

/**
 * The one exception filter: every error leaves as `{_s, _e[, errors]}` with the HTTP status of its code.
 * Unexpected errors are logged with the request id and answered without internals. A PreparedResponse
 * (a replayed answer) is sent as it is.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request & { id?: string }>();
    if (exception instanceof PreparedResponse && !res.headersSent) {
      exception.send(res);
      return;
    }
    const { status, body, headers } = this.toResponse(exception, req);
    if (res.headersSent) {
      res.end();
      return;
    }
    // Never kept by a cache: a route's own caching header (the public answers' max-age, set before its
    // handler ran) is for its answers, not for a 400 or a 503 that a proxy would otherwise serve on.
    res.setHeader('Cache-Control', 'no-store');
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(status).json(body);
  }

  private toResponse(exception: unknown, req: Request & { id?: string }): { status: number; body: ErrorBody; headers: Record<string, string> } {
    if (exception instanceof ApiException) {
      const body: ErrorBody = { _s: exception.code, _e: exception.message };
      if (exception.errors?.length) body.errors = exception.errors;
      return { status: httpStatusOf(exception.code), body, headers: exception.headers ?? {} };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = codeOfHttpStatus(status);
      if (code === ErrorCode.Internal) return this.internal(exception, req);
      return { status: httpStatusOf(code), body: { _s: code, _e: this.messageOf(exception, status) }, headers: {} };
    }
    if (isDatabaseUnavailable(exception)) {
      // Not a bug: the database is away, slow or busy right now. Nothing was committed; the client may retry.
      this.logger.warn(`request ${req.id ?? '-'} ${req.method} ${req.path}: database unavailable: ${(exception as Error).message}`);
      const unavailable = ApiException.unavailable('The database is unavailable right now; try again shortly', 5);
      return { status: 503, body: { _s: unavailable.code, _e: unavailable.message }, headers: unavailable.headers ?? {} };
    }
    const parserError = exception as BodyParserError;
    if (parserError && typeof parserError.type === 'string' && typeof parserError.status === 'number') {
      return this.fromBodyParser(parserError, req, exception);
    }
    // The client closed the connection before its body had all come (a dropped upload: multer's "Request
    // aborted" or "Request closed"): its doing, not a fault of the server to log; nobody reads this answer.
    if (!req.readableEnded && (req.destroyed || req.socket?.destroyed)) {
      return this.toResponse(ApiException.invalid('The request body ended early: the client closed the connection'), req);
    }
    return this.internal(exception, req);
  }

  private fromBodyParser(err: BodyParserError, req: Request & { id?: string }, raw: unknown) {
    switch (err.type) {
      case 'entity.parse.failed':
        return this.simple(ErrorCode.InvalidArgument, 'Malformed JSON body');
      case 'entity.too.large':
        return this.simple(ErrorCode.TooLarge, 'Request body is over the size limit');
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return this.simple(ErrorCode.UnsupportedMediaType, err.message ?? 'Unsupported body encoding');
      default: {
        const code = codeOfHttpStatus(err.status ?? 500);
        return code === ErrorCode.Internal ? this.internal(raw, req) : this.simple(code, err.message ?? 'Bad request');
      }
    }
  }

  private simple(code: ErrorCode, message: string) {
    return { status: httpStatusOf(code), body: { _s: code, _e: message }, headers: {} };
  }

  private internal(exception: unknown, req: Request & { id?: string }) {
    const detail = exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
    // The request URL may carry a URL with credentials in its query (percent-encoded), and driver
    // messages may quote a stored value: the line is decoded and redacted before it is logged.
    this.logger.error(redactCredentials(`request ${req.id ?? '-'} ${req.method} ${decodedForLog(req.originalUrl)}: ${detail}`));
    return this.simple(ErrorCode.Internal, `Internal error (request id ${req.id ?? 'unknown'})`);
  }

  private messageOf(exception: HttpException, status: number): string {
    if (status === 404 && /^Cannot (GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)/.test(exception.message)) {
      // The method and path only: the query string may carry what should not be echoed (a token).
      const route = exception.message.replace(/^Cannot /, '');
      const query = route.indexOf('?');
      return `No route for ${(query < 0 ? route : route.slice(0, query)).slice(0, 300)}`;
    }
    const response = exception.getResponse();
    if (typeof response === 'string') return response;
    const message = (response as { message?: unknown }).message;
    if (Array.isArray(message)) return message.join('; ');
    return typeof message === 'string' ? message : exception.message;
  }
}
