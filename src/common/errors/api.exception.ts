import { ErrorCode } from './error-codes';

export interface FieldError {
  field: string;
  message: string;
}

/** The one exception type of the service: an API error code, a human message, optional field errors. */
export class ApiException extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiException';
  }

  static invalid(message: string, errors?: FieldError[]): ApiException {
    return new ApiException(ErrorCode.InvalidArgument, message, errors);
  }

  static unauthorized(message = 'Invalid or missing access token'): ApiException {
    return new ApiException(ErrorCode.Unauthorized, message);
  }

  static notFound(message: string): ApiException {
    return new ApiException(ErrorCode.NotFound, message);
  }

  static conflict(message: string): ApiException {
    return new ApiException(ErrorCode.Conflict, message);
  }

  static tooLarge(message: string): ApiException {
    return new ApiException(ErrorCode.TooLarge, message);
  }

  /** 429 -429: the caller should come back after `retryAfterSeconds`. */
  static rateLimited(message: string, retryAfterSeconds: number): ApiException {
    return new ApiException(ErrorCode.RateLimited, message, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }

  /** 503 -503: a dependency is unreachable or the node is shutting down; worth retrying after `retryAfterSeconds`. */
  static unavailable(message: string, retryAfterSeconds = 5): ApiException {
    return new ApiException(ErrorCode.Unavailable, message, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}
