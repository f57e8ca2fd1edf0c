import { randomBytes } from 'node:crypto';
import { decode, JwtPayload } from 'jsonwebtoken';
import { verifyCustomerToken } from '../auth/token-verifier';
import { joinOptionValues, mintToken, parseGrace, parseTtl } from './admin';

const MAX_TTL = 30 * 86400; // TOKEN_MAX_TTL's default

describe('parseTtl', () => {
  it.each([
    ['3600', 3600],
    ['90s', 90],
    ['15m', 900],
    ['1h', 3600],
    ['7d', 604800],
    [' 2h ', 7200],
    ['30d', 30 * 86400],
  ])('reads %p as %p seconds', (text, seconds) => {
    expect(parseTtl(text, MAX_TTL)).toBe(seconds);
  });

  it.each(['', 'abc', '1w', '-5', '1.5h', 'h', '10 minutes'])('refuses %p', (text) => {
    expect(() => parseTtl(text, MAX_TTL)).toThrow(/--ttl/);
  });

  it('refuses a zero ttl, and one longer than TOKEN_MAX_TTL (which the service would refuse)', () => {
    expect(() => parseTtl('0', MAX_TTL)).toThrow(/--ttl/);
    expect(() => parseTtl('0s', MAX_TTL)).toThrow(/--ttl/);
    expect(() => parseTtl('31d', MAX_TTL)).toThrow(/--ttl must be at most TOKEN_MAX_TTL \(30d\)/);
    expect(() => parseTtl(String(MAX_TTL + 1), MAX_TTL)).toThrow(/TOKEN_MAX_TTL/);
    expect(() => parseTtl('366d', MAX_TTL)).toThrow(/TOKEN_MAX_TTL/);
    expect(parseTtl('2h', 7200)).toBe(7200);
    expect(() => parseTtl('121m', 7200)).toThrow(/TOKEN_MAX_TTL \(2h\)/);
  });
});

describe('parseGrace', () => {
  it.each([
    ['24h', 86400],
    ['0', 0],
    ['0s', 0],
    ['90m', 5400],
    ['3600', 3600],
    ['366d', 366 * 86400],
  ])('reads %p as %p seconds', (text, seconds) => {
    expect(parseGrace(text)).toBe(seconds);
  });

  it.each(['', 'soon', '-1h', '1.5h', '367d'])('refuses %p', (text) => {
    expect(() => parseGrace(text)).toThrow(/--grace/);
  });
});

describe('mintToken', () => {
  const customer = { accessKey: 'q3Jx0vQk1m8bT2yN5cRz7wLp', secretKey: randomBytes(32).toString('base64') };

  it('makes an HS256 token that verifyCustomerToken accepts, valid for the ttl', () => {
    const token = mintToken(customer, 600);
    expect(decode(token, { complete: true })?.header.alg).toBe('HS256');
    const claims = verifyCustomerToken(token, customer.secretKey, customer.accessKey, MAX_TTL);
    expect(claims.accessKey).toBe(customer.accessKey);
    expect(claims.exp - (claims.iat as number)).toBe(600);
    expect(Math.abs((claims.iat as number) - Date.now() / 1000)).toBeLessThan(5);
    expect(claims.name).toBeUndefined();
    expect(claims.sub).toBeUndefined();
  });

  it('carries the operator name and sub', () => {
    const token = mintToken(customer, 60, { name: 'Kim', sub: 'op-1' });
    const claims = verifyCustomerToken(token, customer.secretKey, customer.accessKey, MAX_TTL);
    expect(claims).toMatchObject({ name: 'Kim', sub: 'op-1' });
    expect((decode(token) as JwtPayload).accessKey).toBe(customer.accessKey);
  });

  it('is signed with the decoded secret of that customer only', () => {
    const token = mintToken(customer, 60);
    const other = randomBytes(32).toString('base64');
    expect(() => verifyCustomerToken(token, other, customer.accessKey, MAX_TTL)).toThrow();
  });
});

describe('joinOptionValues', () => {
  it('takes the word after an option as its value, even when it starts with "-" (any access key works)', () => {
    expect(joinOptionValues(['token', '--access-key', '-Ab3_x', '--ttl', '1h'])).toEqual(['token', '--access-key=-Ab3_x', '--ttl=1h']);
    expect(joinOptionValues(['customer', 'create', '--name', '--weird name--'])).toEqual(['customer', 'create', '--name=--weird name--']);
  });

  it('leaves --option=value, flags and positionals alone', () => {
    expect(joinOptionValues(['token', '--access-key=-x', '--help'])).toEqual(['token', '--access-key=-x', '--help']);
    expect(joinOptionValues(['customer', 'list'])).toEqual(['customer', 'list']);
  });
});
