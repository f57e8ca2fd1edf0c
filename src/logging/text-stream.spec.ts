import * as fs from 'node:fs';
import { textStream } from './text-stream';

jest.mock('node:fs', () => ({ ...jest.requireActual('node:fs'), writeSync: jest.fn() }));

describe('textStream', () => {
  const written = () => (fs.writeSync as unknown as jest.Mock).mock.calls.map((c) => String(c[1])).join('');
  beforeEach(() => (fs.writeSync as unknown as jest.Mock).mockClear());

  it('renders a pino line for a person: time, level, context, message, fields; no colour off a terminal', () => {
    const line = { level: 'info', time: '2026-03-01T12:00:00.000Z', pid: 1, context: 'Bootstrap', requestId: 'r-1', status: 200, path: '/a b', msg: 'request' };
    textStream(1, false).write(`${JSON.stringify(line)}\n`);
    expect(written()).toBe('2026-03-01T12:00:00.000Z INFO  [Bootstrap] request requestId=r-1 status=200 path="/a b"\n');
  });

  it('colours the level on a terminal and puts a stack below', () => {
    const line = { level: 'error', time: '2026-03-01T12:00:00.000Z', msg: 'boom', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' } };
    textStream(1, true).write(JSON.stringify(line));
    expect(written()).toBe('2026-03-01T12:00:00.000Z \u001b[31mERROR\u001b[0m boom\nError: boom\n    at x\n');
  });
});
