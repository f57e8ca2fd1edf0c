import { ArgumentsHost, Logger } from '@nestjs/common';
import { ApiExceptionFilter } from './api-exception.filter';

function hostFor(originalUrl: string) {
  const res = {
    headersSent: false,
    status: jest.fn().mockReturnThis(),
    json: jest.fn().mockReturnThis(),
    setHeader: jest.fn(),
    end: jest.fn(),
  };
  const req = { id: 'req-1', method: 'PUT', originalUrl };
  const host = { switchToHttp: () => ({ getResponse: () => res, getRequest: () => req }) } as unknown as ArgumentsHost;
  return { host, res };
}

describe('ApiExceptionFilter: unexpected errors', () => {
  let error: jest.SpyInstance;
  beforeEach(() => {
    error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => error.mockRestore());

  it('logs the request and the error without URL credentials (also percent-encoded in the query), answers -500 without internals', () => {
    const { host, res } = hostFor('/v1/goods/ak/url?value=https%3A%2F%2Fshop%3Apa55word%40cdn.example.com%2Fa');
    new ApiExceptionFilter().catch(new Error("Duplicate entry 'http://user:db-secret@x.example/a' for key 'UQ'"), host);
    expect(res.status).toHaveBeenCalledWith(500);
    expect(res.json).toHaveBeenCalledWith({ _s: -500, _e: 'Internal error (request id req-1)' });
    const line = String(error.mock.calls[0][0]);
    expect(line).toContain('request req-1 PUT /v1/goods/ak/url?value=***: Error: Duplicate entry');
    expect(line).toContain('http://***@x.example/a');
    expect(line).not.toMatch(/pa55word|db-secret/);
  });

  it('logs a request URL that does not percent-decode as it came', () => {
    const { host } = hostFor('/v1/goods/ak?x=%E0%A4%A');
    new ApiExceptionFilter().catch(new Error('boom'), host);
    expect(String(error.mock.calls[0][0])).toContain('/v1/goods/ak?x=***: Error: boom');
  });
});
