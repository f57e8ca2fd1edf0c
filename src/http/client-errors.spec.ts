import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { answerClientErrors, clientErrorAnswer } from './client-errors';

function fakeSocket(overrides: Record<string, unknown> = {}) {
  const calls: string[] = [];
  const socket = {
    writable: true,
    remoteAddress: '127.0.0.1',
    end: (data: string) => calls.push(`end ${data.split('\r\n')[0]}`),
    destroy: () => calls.push('destroy'),
    ...overrides,
  };
  return { socket, calls };
}

describe('answerClientErrors', () => {
  const server = new EventEmitter();
  answerClientErrors(server as unknown as Server);
  const emit = (code: string, socket: object) => server.emit('clientError', Object.assign(new Error(code), { code }), socket);

  it('maps the parser and deadline errors to a status and an API error code', () => {
    expect(clientErrorAnswer(Object.assign(new Error(), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }))).toMatchObject({ status: 408, code: -510 });
    expect(clientErrorAnswer(Object.assign(new Error(), { code: 'HPE_HEADER_OVERFLOW' }))).toMatchObject({ status: 431, code: -413 });
    expect(clientErrorAnswer(Object.assign(new Error(), { code: 'HPE_INVALID_METHOD' }))).toMatchObject({ status: 400, code: -510 });
  });

  it('answers a writable socket, and only destroys a reset, unwritable or already answering one', () => {
    const fine = fakeSocket();
    emit('HPE_INVALID_METHOD', fine.socket);
    expect(fine.calls).toEqual(['end HTTP/1.1 400 Bad Request']);
    for (const [code, overrides] of [
      ['ECONNRESET', {}],
      ['HPE_INVALID_METHOD', { writable: false }],
      ['ERR_HTTP_REQUEST_TIMEOUT', { _httpMessage: { headersSent: true } }],
    ] as const) {
      const s = fakeSocket(overrides);
      emit(code, s.socket);
      expect(s.calls).toEqual(['destroy']);
    }
  });

  it('never throws: a socket that fails to write is destroyed', () => {
    const broken = fakeSocket({
      end: () => {
        throw new Error('gone');
      },
    });
    expect(() => emit('HPE_HEADER_OVERFLOW', broken.socket)).not.toThrow();
    expect(broken.calls).toEqual(['destroy']);
  });
});
