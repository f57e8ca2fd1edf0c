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

  it.each(['https://cdn.example.com/a.jpg', 'https://cdn.example.com/path@2x.png', 'https://cdn.example.com/a#x@y', 'no url here, just me@example.com'])(
    'leaves %p as it is',
    (text) => {
      expect(redactCredentials(text)).toBe(text);
    },
  );

  it('hides the value of every query parameter: a credential may travel under any name', () => {
    expect(redactCredentials('GET /v1/goods/ak?token=eyJhbGci.x.y&count=1')).toBe('GET /v1/goods/ak?token=***&count=***');
    expect(redactCredentials('/a?x=1&secretKey=c2VjcmV0&Password=p4ss#f')).toBe('/a?x=***&secretKey=***&Password=***#f');
    // Presigned S3 and GCS URLs, a CloudFront signed URL, an Azure SAS and function key, a Google API key.
    const presigned =
      'media https://b.s3.amazonaws.com/a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2026&X-Amz-Security-Token=FwoGZX&X-Amz-Signature=abc123: not an image';
    expect(redactCredentials(presigned)).toBe(
      'media https://b.s3.amazonaws.com/a.jpg?X-Amz-Algorithm=***&X-Amz-Credential=***&X-Amz-Security-Token=***&X-Amz-Signature=***: not an image',
    );
    for (const [text, expected] of [
      [
        'https://storage.googleapis.com/b/a.png?X-Goog-Credential=sa%40p&X-Goog-Signature=9f',
        'https://storage.googleapis.com/b/a.png?X-Goog-Credential=***&X-Goog-Signature=***',
      ],
      ['https://d1.cloudfront.net/a.png?Policy=eyJ&Key-Pair-Id=K2&Signature=x~y', 'https://d1.cloudfront.net/a.png?Policy=***&Key-Pair-Id=***&Signature=***'],
      ['https://acct.blob.core.windows.net/c/a.png?sv=2022&se=2026-12-01&sig=abc%3D', 'https://acct.blob.core.windows.net/c/a.png?sv=***&se=***&sig=***'],
      ['https://f.azurewebsites.net/api/img?code=s3cr3t', 'https://f.azurewebsites.net/api/img?code=***'],
      ['https://maps.example.com/img?key=AIzaSy&session=abc', 'https://maps.example.com/img?key=***&session=***'],
      ['https://cdn.example.com/a?mail=me@example.com', 'https://cdn.example.com/a?mail=***'],
    ])
      expect(redactCredentials(text)).toBe(expected);
    // A colon inside a value goes with it.
    expect(redactCredentials('/a?se=2026-12-01T00:00:00Z&t=a:b:c')).toBe('/a?se=***&t=***');
    // An empty name, a fragment's parameters, and a query that is a value alone go too.
    expect(redactCredentials('http://h/e.png?a[b]=S1&=SECRET_E2: 404')).toBe('http://h/e.png?a[b]=***&=***: 404');
    expect(redactCredentials('http://h/h.png?token=S#frag=SECRET_H2&z=1')).toBe('http://h/h.png?token=***#frag=***&z=***');
    expect(redactCredentials('media http://h/f.png?SECRET_F1: not found')).toBe('media http://h/f.png?***: not found');
    expect(redactCredentials('http://h/f.png?AIzaSy_k-1/x+y%3D&v=2')).toBe('http://h/f.png?***&v=***');
    // A question mark in words, and names without a value after the first, are left.
    expect(redactCredentials('(is that DATA_DIR shared with another database?) ok? yes')).toBe('(is that DATA_DIR shared with another database?) ok? yes');
    expect(redactCredentials('/a?x=1&flag&b= c? d')).toBe('/a?x=***&flag&b= c? d');
  });
});
