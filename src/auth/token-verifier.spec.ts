import { randomBytes } from 'node:crypto';
import { sign, SignOptions } from 'jsonwebtoken';
import { CLOCK_SKEW_SECONDS, TokenRejected, verifyCustomerToken } from './token-verifier';

const ACCESS_KEY = 'q3Jx0vQk1m8bT2yN5cRz7wLp';
const SECRET = randomBytes(32).toString('base64');
const KEY = Buffer.from(SECRET, 'base64');
const now = () => Math.floor(Date.now() / 1000);

function token(claims: Record<string, unknown> = {}, key: Buffer | string = KEY, options: SignOptions = {}): string {
  return sign({ accessKey: ACCESS_KEY, ...claims }, key, { algorithm: 'HS256', ...options });
}

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function rejected(fn: () => unknown): TokenRejected {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TokenRejected);
    return err as TokenRejected;
  }
  throw new Error('expected the token to be rejected');
}

describe('verifyCustomerToken', () => {
  it('accepts a valid HS256 token signed with the base64-decoded secret', () => {
    const iat = now();
    const claims = verifyCustomerToken(token({ iat, exp: iat + 3600 }), SECRET, ACCESS_KEY);
    expect(claims).toEqual({ accessKey: ACCESS_KEY, exp: iat + 3600, iat, name: undefined, sub: undefined });
  });

  it('accepts a token signed with the raw secretKey string as key', () => {
    const claims = verifyCustomerToken(token({ exp: now() + 60 }, SECRET), SECRET, ACCESS_KEY);
    expect(claims.accessKey).toBe(ACCESS_KEY);
  });

  it('refuses an expired token', () => {
    const err = rejected(() => verifyCustomerToken(token({ exp: now() - CLOCK_SKEW_SECONDS - 30 }), SECRET, ACCESS_KEY));
    expect(err.message).toMatch(/expired/i);
  });

  it('refuses an expired token signed with the raw secret too', () => {
    const err = rejected(() => verifyCustomerToken(token({ exp: now() - 600 }, SECRET), SECRET, ACCESS_KEY));
    expect(err.message).toMatch(/expired/i);
  });

  it('allows 60 s of clock skew on exp and nbf, not more', () => {
    expect(CLOCK_SKEW_SECONDS).toBe(60);
    expect(verifyCustomerToken(token({ exp: now() - 30 }), SECRET, ACCESS_KEY).accessKey).toBe(ACCESS_KEY);
    expect(verifyCustomerToken(token({ exp: now() + 600, nbf: now() + 30 }), SECRET, ACCESS_KEY).accessKey).toBe(ACCESS_KEY);
    rejected(() => verifyCustomerToken(token({ exp: now() - 90 }), SECRET, ACCESS_KEY));
    rejected(() => verifyCustomerToken(token({ exp: now() + 600, nbf: now() + 300 }), SECRET, ACCESS_KEY));
  });

  it('refuses a token signed with another key', () => {
    const other = randomBytes(32);
    const err = rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, other), SECRET, ACCESS_KEY));
    expect(err.message).toBe('Invalid token');
    // The other customer's raw string secret does not work either.
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, other.toString('base64')), SECRET, ACCESS_KEY));
  });

  it('refuses alg "none"', () => {
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ accessKey: ACCESS_KEY, exp: now() + 60 })}.`;
    rejected(() => verifyCustomerToken(unsigned, SECRET, ACCESS_KEY));
  });

  it('refuses other algorithms, even with the right key (HS512, HS384)', () => {
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, KEY, { algorithm: 'HS512' }), SECRET, ACCESS_KEY));
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, KEY, { algorithm: 'HS384' }), SECRET, ACCESS_KEY));
  });

  it('refuses a token without exp', () => {
    const err = rejected(() => verifyCustomerToken(token(), SECRET, ACCESS_KEY));
    expect(err.message).toMatch(/exp/);
  });

  it('refuses a token whose accessKey is not the one of the path', () => {
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }), SECRET, 'another-access-key-0000'));
    rejected(() => verifyCustomerToken(token({ exp: now() + 60, accessKey: 'another-access-key-0000' }), SECRET, ACCESS_KEY));
    rejected(() => verifyCustomerToken(token({ exp: now() + 60, accessKey: undefined }), SECRET, ACCESS_KEY));
  });

  it('refuses malformed tokens and a tampered payload', () => {
    rejected(() => verifyCustomerToken('not-a-jwt', SECRET, ACCESS_KEY));
    rejected(() => verifyCustomerToken('', SECRET, ACCESS_KEY));
    const [header, , signature] = token({ exp: now() + 60 }).split('.');
    const forged = `${header}.${b64url({ accessKey: ACCESS_KEY, exp: now() + 99999 })}.${signature}`;
    rejected(() => verifyCustomerToken(forged, SECRET, ACCESS_KEY));
  });

  it('returns the operator name (trimmed) and sub claims', () => {
    const claims = verifyCustomerToken(token({ exp: now() + 60, name: '  김 운영  ' }, KEY, { subject: 'op-7' }), SECRET, ACCESS_KEY);
    expect(claims.name).toBe('김 운영');
    expect(claims.sub).toBe('op-7');
  });

  it('ignores blank or non-string name/sub claims', () => {
    const claims = verifyCustomerToken(token({ exp: now() + 60, name: '   ', sub: 42 }), SECRET, ACCESS_KEY);
    expect(claims.name).toBeUndefined();
    expect(claims.sub).toBeUndefined();
  });
});
