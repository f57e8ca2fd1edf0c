import { randomUUID } from 'node:crypto';
import { maxHeaderSize, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { Logger } from '@nestjs/common';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { REQUEST_ID_HEADER } from './request-id.middleware';

const logger = new Logger('ClientErrors');

export interface ClientErrorAnswer {
  status: number;
  reason: string;
  code: ErrorCode;
  message: string;
}

/** What a request Node could not read is answered (docs/api-reference.md, Errors). */
export function clientErrorAnswer(err: Error & { code?: string }): ClientErrorAnswer {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        reason: 'Request Timeout',
        code: ErrorCode.InvalidArgument,
        message: 'Request timeout: the request did not arrive in time (headers within HEADERS_TIMEOUT_MS, the whole request within REQUEST_TIMEOUT_MS)',
      };
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        reason: 'Request Header Fields Too Large',
        code: ErrorCode.TooLarge,
        message: `The request line and headers are over ${maxHeaderSize} bytes`,
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, reason: 'Payload Too Large', code: ErrorCode.TooLarge, message: 'A chunk extension of the body is too large' };
    default:
      return { status: 400, reason: 'Bad Request', code: ErrorCode.InvalidArgument, message: 'Bad request: not a well-formed HTTP/1.1 request' };
  }
}

/**
 * The raw HTTP answer, written on the socket, for a request no HTTP response object answers (one Node could
 * not read, a refused WebSocket upgrade): the one error shape, a request id, `headers`, then the
 * connection closes.
 */
export function clientErrorResponse(answer: ClientErrorAnswer, requestId: string, headers: Record<string, string> = {}): string {
  return rawJsonResponse(answer.status, answer.reason, JSON.stringify({ _s: answer.code, _e: answer.message }), requestId, headers);
}

/** A raw HTTP answer carrying the JSON `body` (see clientErrorResponse), for bodies of another shape. */
export function rawJsonResponse(status: number, reason: string, body: string, requestId: string, headers: Record<string, string> = {}): string {
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return (
    `HTTP/1.1 ${status} ${reason}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `${REQUEST_ID_HEADER}: ${requestId}\r\n` +
    extra.join('') +
    'Cache-Control: no-store\r\n' +
    'Connection: close\r\n' +
    '\r\n' +
    body
  );
}

/**
 * The answer Node's HTTP server has in progress on this socket (its `_httpMessage`: set when a request
 * starts, cleared once its answer has been sent), if any.
 */
export function answerInProgress(socket: Socket): { headersSent?: boolean } | undefined {
  return (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage ?? undefined;
}

/**
 * Answers what Node's HTTP parser or its deadlines refuse (a malformed request 400, a request line or
 * headers over the size limit 431, headers or a request not arriving in time 408) in the error shape of
 * every other answer, with an `X-Request-Id`, instead of Node's bare status line. Written only while the
 * connection can take it and no answer of the request has started (as Node does); the connection is
 * closed afterwards in every case. Never throws: this runs in the socket's error path.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: Error & { code?: string }, socket: Socket) => {
    try {
      if (err.code !== 'ECONNRESET' && socket.writable && !answerInProgress(socket)?.headersSent) {
        const answer = clientErrorAnswer(err);
        const requestId = randomUUID();
        logger.debug(`request ${requestId} from ${socket.remoteAddress ?? 'unknown'}: ${answer.status} (${err.code ?? err.message})`);
        socket.end(clientErrorResponse(answer, requestId));
        // A peer that does not read must not keep the connection: closed soon in any case.
        setTimeout(() => socket.destroy(), 1000).unref();
        return;
      }
    } catch {
      // Nothing to do: the connection is closed below.
    }
    socket.destroy();
  });
}

/**
 * Node answers an HTTP/1.1 request without a Host header itself, with a bare 400 (no body, no request id),
 * and keeps only its first 1,000 headers (maxHeadersCount counts names and values), so that a Host or an
 * Authorization after them was lost the same way. The server is told to let both through: every header
 * within the size limit (maxHeaderSize; past it 431) is kept, and a missing Host is refused by requireHost
 * in the error shape of every other answer.
 */
export function letHeadersThrough(server: Server): void {
  server.maxHeadersCount = 0;
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
}

/**
 * What is wrong with a request's Host header (RFC 9112, 3.2: an HTTP/1.1 request without one, and any
 * request with more than one, is answered 400), or undefined. Node keeps the first of several.
 */
export function hostProblem(req: IncomingMessage): string | undefined {
  if ((req.headersDistinct.host?.length ?? 0) > 1) return 'Bad request: the request carries more than one Host header';
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && !req.headers.host) return 'Bad request: an HTTP/1.1 request must carry a Host header';
  return undefined;
}

/** Express middleware: a request whose Host header is missing or repeated (hostProblem) is 400 `-510`. */
export function requireHost(req: IncomingMessage, _res: unknown, next: (err?: unknown) => void): void {
  const problem = hostProblem(req);
  next(problem ? ApiException.invalid(problem) : undefined);
}
