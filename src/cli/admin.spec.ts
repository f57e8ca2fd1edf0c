import { randomBytes } from 'node:crypto';
import { decode, JwtPayload } from 'jsonwebtoken';
import { verifyCustomerToken } from '../auth/token-verifier';
import { mintToken, parseTtl } from './admin';

describe('parseTtl', () => {
  it.each([
    ['3600', 3600],
    ['90s', 90],
    ['15m', 900],
    ['1h', 3600],
    ['7d', 604800],
    [' 2h ', 7200],
    ['366d', 366 * 86400],
  ])('reads %p as %p seconds', (text, seconds) => {
    expect(parseTtl(text)).toBe(seconds);
  });

  it.each(['', 'abc', '1w', '-5', '1.5h', 'h', '10 minutes'])('refuses %p', (text) => {
    expect(() => parseTtl(text)).toThrow(/--ttl/);
  });

  it('refuses a zero or too long ttl', () => {
    expect(() => parseTtl('0')).toThrow(/--ttl/);
    expect(() => parseTtl('0s')).toThrow(/--ttl/);
    expect(() => parseTtl('367d')).toThrow(/--ttl/);
  });
});

describe('mintToken', () => {
  const customer = { accessKey: 'q3Jx0vQk1m8bT2yN5cRz7wLp', secretKey: randomBytes(32).toString('base64') };

  it('makes an HS256 token that verifyCustomerToken accepts, valid for the ttl', () => {
    const token = mintToken(customer, 600);
    expect(decode(token, { complete: true })?.header.alg).toBe('HS256');
    const claims = verifyCustomerToken(token, customer.secretKey, customer.accessKey);
    expect(claims.accessKey).toBe(customer.accessKey);
    expect(claims.exp - (claims.iat as number)).toBe(600);
    expect(Math.abs((claims.iat as number) - Date.now() / 1000)).toBeLessThan(5);
    expect(claims.name).toBeUndefined();
    expect(claims.sub).toBeUndefined();
  });

  it('carries the operator name and sub', () => {
    const token = mintToken(customer, 60, { name: 'Kim', sub: 'op-1' });
    const claims = verifyCustomerToken(token, customer.secretKey, customer.accessKey);
    expect(claims).toMatchObject({ name: 'Kim', sub: 'op-1' });
    expect((decode(token) as JwtPayload).accessKey).toBe(customer.accessKey);
  });

  it('is signed with the decoded secret of that customer only', () => {
    const token = mintToken(customer, 60);
    const other = randomBytes(32).toString('base64');
    expect(() => verifyCustomerToken(token, other, customer.accessKey)).toThrow();
  });
});
