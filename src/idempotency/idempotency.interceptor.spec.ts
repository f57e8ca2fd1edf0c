import { isFinalStatus, storedHeadersOf } from './idempotency.interceptor';

describe('isFinalStatus', () => {
  it.each([200, 201, 204, 400, 404, 409, 413, 415, 422])('%p is stored', (status) => {
    expect(isFinalStatus(status)).toBe(true);
  });

  it.each([401, 403, 408, 425, 429, 500, 502, 503, 504])('%p is not stored (the key is released)', (status) => {
    expect(isFinalStatus(status)).toBe(false);
  });
});

describe('storedHeadersOf', () => {
  it("keeps the answer's own headers and drops those of the exchange", () => {
    const res = {
      getHeaders: () => ({
        'content-type': 'application/json; charset=utf-8',
        location: '/v1/goods/ak/1',
        'x-ignored-columns': 'Color',
        etag: 'W/"1"',
        'content-length': 10,
        'content-encoding': 'gzip',
        'x-request-id': 'r1',
        date: 'now',
        vary: 'Accept-Encoding',
        'access-control-allow-origin': 'https://shop.example',
        'set-cookie': ['a=b'],
        connection: 'close',
      }),
    };
    expect(storedHeadersOf(res)).toEqual({
      'content-type': 'application/json; charset=utf-8',
      location: '/v1/goods/ak/1',
      'x-ignored-columns': 'Color',
      etag: 'W/"1"',
    });
  });
});
