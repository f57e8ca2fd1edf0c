import { codeOfHttpStatus, ErrorCode, httpStatusOf } from './error-codes';

/** The HTTP status of every `_s` code (docs/api-reference.md, Errors). */
const DOCUMENTED: Array<[ErrorCode, number, number]> = [
  [ErrorCode.InvalidArgument, -510, 400],
  [ErrorCode.Unauthorized, -102, 401],
  [ErrorCode.NotFound, -404, 404],
  [ErrorCode.CampaignNotFound, -710, 404],
  [ErrorCode.GoodsNotInCampaign, -711, 404],
  [ErrorCode.Conflict, -409, 409],
  [ErrorCode.TooLarge, -413, 413],
  [ErrorCode.UnsupportedMediaType, -415, 415],
  [ErrorCode.InvalidTransition, -422, 422],
  [ErrorCode.RateLimited, -429, 429],
  [ErrorCode.Unavailable, -503, 503],
  [ErrorCode.Internal, -500, 500],
];

describe('httpStatusOf', () => {
  it.each(DOCUMENTED)('code %p (%p) is HTTP %p', (code, value, status) => {
    expect(code).toBe(value);
    expect(httpStatusOf(code)).toBe(status);
  });

  it('the table above covers every ErrorCode', () => {
    const all = Object.values(ErrorCode).filter((v): v is ErrorCode => typeof v === 'number');
    expect(all.sort()).toEqual(DOCUMENTED.map(([code]) => code).sort());
  });
});

describe('codeOfHttpStatus', () => {
  it.each([
    [400, ErrorCode.InvalidArgument],
    [401, ErrorCode.Unauthorized],
    [403, ErrorCode.Unauthorized],
    [404, ErrorCode.NotFound],
    [405, ErrorCode.NotFound],
    [409, ErrorCode.Conflict],
    [413, ErrorCode.TooLarge],
    [415, ErrorCode.UnsupportedMediaType],
    [422, ErrorCode.InvalidTransition],
    [429, ErrorCode.RateLimited],
    [406, ErrorCode.InvalidArgument],
    [418, ErrorCode.InvalidArgument],
    [500, ErrorCode.Internal],
    [502, ErrorCode.Internal],
    [503, ErrorCode.Unavailable],
  ])('HTTP %p becomes code %p', (status, code) => {
    expect(codeOfHttpStatus(status)).toBe(code);
  });

  it('round-trips every code that owns its status', () => {
    for (const [code] of DOCUMENTED) {
      if (code === ErrorCode.CampaignNotFound || code === ErrorCode.GoodsNotInCampaign) continue;
      expect(codeOfHttpStatus(httpStatusOf(code))).toBe(code);
    }
  });
});
