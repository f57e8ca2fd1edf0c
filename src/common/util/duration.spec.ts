import { formatDuration, parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['3600', 3600],
    ['0', 0],
    ['90s', 90],
    ['15m', 900],
    ['12h', 43200],
    ['30d', 2592000],
    [' 2H ', 7200],
    ['1 d', 86400],
  ])('reads %p as %p seconds', (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(['', 'abc', '1w', '-5', '1.5h', 'h', '10 minutes', '1e3', '1d2h', '9999999999999'])('refuses %p', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [2592000, '30d'],
    [86400, '1d'],
    [43200, '12h'],
    [5400, '90m'],
    [61, '61s'],
    [0, '0s'],
  ])('writes %p as %p', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });
});
