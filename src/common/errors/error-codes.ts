/** The `_s` codes of the API's errors (docs/api-reference.md, Errors). */
export enum ErrorCode {
  InvalidArgument = -510,
  Unauthorized = -102,
  NotFound = -404,
  CampaignNotFound = -710,
  GoodsNotInCampaign = -711,
  Conflict = -409,
  TooLarge = -413,
  UnsupportedMediaType = -415,
  InvalidTransition = -422,
  RateLimited = -429,
  Unavailable = -503,
  Internal = -500,
}

/** Maps every code to its HTTP status; the switch is exhaustive (the compiler checks it). */
export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.InvalidArgument:
      return 400;
    case ErrorCode.Unauthorized:
      return 401;
    case ErrorCode.NotFound:
    case ErrorCode.CampaignNotFound:
    case ErrorCode.GoodsNotInCampaign:
      return 404;
    case ErrorCode.Conflict:
      return 409;
    case ErrorCode.TooLarge:
      return 413;
    case ErrorCode.UnsupportedMediaType:
      return 415;
    case ErrorCode.InvalidTransition:
      return 422;
    case ErrorCode.RateLimited:
      return 429;
    case ErrorCode.Unavailable:
      return 503;
    case ErrorCode.Internal:
      return 500;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

/** The code for an HTTP status raised outside our own exceptions (router, body parser, pipes). */
export function codeOfHttpStatus(status: number): ErrorCode {
  switch (status) {
    case 401:
    case 403:
      return ErrorCode.Unauthorized;
    case 404:
    case 405:
      return ErrorCode.NotFound;
    case 409:
      return ErrorCode.Conflict;
    case 413:
      return ErrorCode.TooLarge;
    case 415:
      return ErrorCode.UnsupportedMediaType;
    case 422:
      return ErrorCode.InvalidTransition;
    case 429:
      return ErrorCode.RateLimited;
    case 503:
      return ErrorCode.Unavailable;
    default:
      return status >= 400 && status < 500 ? ErrorCode.InvalidArgument : ErrorCode.Internal;
  }
}
