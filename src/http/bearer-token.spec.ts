import { authorizationHeaderCount, bearerTokenOf } from './bearer-token';

const req = (...raw: string[]) => {
  const headers: Record<string, string> = {};
  for (let i = raw.length - 2; i >= 0; i -= 2) headers[raw[i].toLowerCase()] = raw[i + 1]; // Node keeps the first
  return { rawHeaders: raw, headers };
};

describe('bearerTokenOf', () => {
  it('reads the token after the scheme, in any letter case, with blanks around it', () => {
    expect(bearerTokenOf(req('Authorization', 'Bearer a.b.c'))).toBe('a.b.c');
    expect(bearerTokenOf(req('authorization', '  bEaReR   a.b.c  '))).toBe('a.b.c');
  });

  it('no header, another scheme, no token or more than the token: none', () => {
    expect(bearerTokenOf(req('Host', 'x'))).toBeNull();
    expect(bearerTokenOf(req('Authorization', 'Basic a.b.c'))).toBeNull();
    expect(bearerTokenOf(req('Authorization', 'Bearer '))).toBeNull();
    expect(bearerTokenOf(req('Authorization', 'Bearer a.b.c more'))).toBeNull();
  });

  it('the header more than once, in any letter case: none, even when both carry the same token', () => {
    const twice = req('Authorization', 'Bearer a.b.c', 'AUTHORIZATION', 'Bearer a.b.c');
    expect(authorizationHeaderCount(twice)).toBe(2);
    expect(bearerTokenOf(twice)).toBeNull();
    expect(authorizationHeaderCount(req('Authorization', 'x', 'Authorization-Extra', 'y', 'X-Authorization', 'z'))).toBe(1);
  });
});
