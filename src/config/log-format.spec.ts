import { pinoLevelOf, resolveLogFormat } from './log-format';

describe('resolveLogFormat', () => {
  it('keeps json and text as set, whatever stdout is', () => {
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('text', false)).toBe('text');
  });

  it('auto: text on a terminal, JSON otherwise', () => {
    expect(resolveLogFormat('auto', true)).toBe('text');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat(undefined, false)).toBe('json');
  });

  it('maps LOG_LEVEL to pino levels', () => {
    expect(['error', 'warn', 'log', 'debug', 'verbose'].map((l) => pinoLevelOf(l as never))).toEqual(['error', 'warn', 'info', 'debug', 'trace']);
  });
});
