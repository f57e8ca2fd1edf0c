import { redactCredentials } from './redact';

describe('redactCredentials', () => {
  it.each([
    ['https://user:secret@cdn.example.com/a.jpg', 'https://***@cdn.example.com/a.jpg'],
    ['http://token@cdn.example.com/a.jpg', 'http://***@cdn.example.com/a.jpg'],
    ['http://u:p@ss@host.example/x', 'http://***@host.example/x'],
    ['redis://:hunter2@cache:6379/0', 'redis://***@cache:6379/0'],
    ['rediss://default:pw@cache.internal', 'rediss://***@cache.internal'],
    ['HTTPS://User:Secret@Example.com', 'HTTPS://***@Example.com'],
    ['//user:pw@host/path', '//***@host/path'],
    ['http://user:pw@[::1]:8080/x', 'http://***@[::1]:8080/x'],
  ])('hides the credentials of %p', (text, expected) => {
    expect(redactCredentials(text)).toBe(expected);
  });

  it('redacts every URL of a log line and leaves the rest alone', () => {
    const line = 'media https://a:b@one.example/x.png: bad redirect location: ftp://c:d@two.example/y (user me@example.com)';
    expect(redactCredentials(line)).toBe('media https://***@one.example/x.png: bad redirect location: ftp://***@two.example/y (user me@example.com)');
  });

  it.each([
    'https://cdn.example.com/a.jpg',
    'https://cdn.example.com/path@2x.png',
    'https://cdn.example.com/a?mail=me@example.com',
    'https://cdn.example.com/a#x@y',
    'GET /v1/goods/ak/url?value=https%3A%2F%2Fshop.example.com%2Fa',
    'no url here, just me@example.com',
  ])('leaves %p as it is', (text) => {
    expect(redactCredentials(text)).toBe(text);
  });

  it('hides the values of credential query parameters', () => {
    expect(redactCredentials('GET /v1/goods/ak?token=eyJhbGci.x.y&count=1')).toBe('GET /v1/goods/ak?token=***&count=1');
    expect(redactCredentials('/a?x=1&secretKey=c2VjcmV0&Password=p4ss#f')).toBe('/a?x=1&secretKey=***&Password=***#f');
    expect(redactCredentials('/a?tokens=1&mytoken=2')).toBe('/a?tokens=1&mytoken=2');
  });
});
