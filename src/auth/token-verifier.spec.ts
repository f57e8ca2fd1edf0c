import { createHmac, randomBytes } from 'node:crypto';
import { sign, SignOptions } from 'jsonwebtoken';
import { alreadyVerified, BAD_SIGNATURE, CACHED_TOKEN_MAX_LENGTH, CLOCK_SKEW_SECONDS, TokenRejected, verifyCustomerToken } from './token-verifier';

const ACCESS_KEY = 'q3Jx0vQk1m8bT2yN5cRz7wLp';
const SECRET = randomBytes(32).toString('base64');
const KEY = Buffer.from(SECRET, 'base64');
const now = () => Math.floor(Date.now() / 1000);
const MAX_TTL = 30 * 86400; // TOKEN_MAX_TTL's default

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
    const claims = verifyCustomerToken(token({ iat, exp: iat + 3600 }), SECRET, ACCESS_KEY, MAX_TTL);
    expect(claims).toEqual({ accessKey: ACCESS_KEY, exp: iat + 3600, iat, name: undefined, sub: undefined });
  });

  it('accepts a token signed with the raw secretKey string as key', () => {
    const claims = verifyCustomerToken(token({ exp: now() + 60 }, SECRET), SECRET, ACCESS_KEY, MAX_TTL);
    expect(claims.accessKey).toBe(ACCESS_KEY);
  });

  it('refuses an expired token', () => {
    const err = rejected(() => verifyCustomerToken(token({ exp: now() - CLOCK_SKEW_SECONDS - 30 }), SECRET, ACCESS_KEY, MAX_TTL));
    expect(err.message).toMatch(/expired/i);
  });

  it('refuses an expired token signed with the raw secret too', () => {
    const err = rejected(() => verifyCustomerToken(token({ exp: now() - 600 }, SECRET), SECRET, ACCESS_KEY, MAX_TTL));
    expect(err.message).toMatch(/expired/i);
  });

  it('allows 60 s of clock skew on exp and nbf, not more', () => {
    expect(CLOCK_SKEW_SECONDS).toBe(60);
    expect(verifyCustomerToken(token({ exp: now() - 30 }), SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
    expect(verifyCustomerToken(token({ exp: now() + 600, nbf: now() + 30 }), SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
    rejected(() => verifyCustomerToken(token({ exp: now() - 90 }), SECRET, ACCESS_KEY, MAX_TTL));
    rejected(() => verifyCustomerToken(token({ exp: now() + 600, nbf: now() + 300 }), SECRET, ACCESS_KEY, MAX_TTL));
  });

  it('refuses an iat more than 60 s ahead or not a number, and a crit header; a past iat is fine', () => {
    expect(verifyCustomerToken(token({ exp: now() + 600, iat: now() + 30 }), SECRET, ACCESS_KEY, MAX_TTL).iat).toBeGreaterThan(now());
    expect(verifyCustomerToken(token({ exp: now() + 600, iat: now() - 86_400 }), SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
    expect(rejected(() => verifyCustomerToken(token({ exp: now() + 600, iat: now() + 300 }), SECRET, ACCESS_KEY, MAX_TTL)).message).toMatch(
      /^Token issued in the future: iat is \d{4}-.*more than 60 s after the server's clock$/,
    );
    // jsonwebtoken signs no iat of another type: signed by hand.
    const header = b64url({ alg: 'HS256', typ: 'JWT' });
    const payload = b64url({ accessKey: ACCESS_KEY, exp: now() + 600, iat: '1' });
    const textIat = `${header}.${payload}.${createHmac('sha256', KEY).update(`${header}.${payload}`).digest('base64url')}`;
    expect(rejected(() => verifyCustomerToken(textIat, SECRET, ACCESS_KEY, MAX_TTL)).message).toBe('Token iat must be a finite number of seconds');
    const crit = token({ exp: now() + 600 }, KEY, { header: { alg: 'HS256', crit: ['exp'] } });
    expect(rejected(() => verifyCustomerToken(crit, SECRET, ACCESS_KEY, MAX_TTL)).message).toMatch(/^Token header lists critical extensions \(crit\)/);
  });

  it('refuses a token signed with another key', () => {
    const other = randomBytes(32);
    const err = rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, other), SECRET, ACCESS_KEY, MAX_TTL));
    expect(err.message).toBe(BAD_SIGNATURE);
    // The other customer's raw string secret does not work either.
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, other.toString('base64')), SECRET, ACCESS_KEY, MAX_TTL));
  });

  it('refuses alg "none"', () => {
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ accessKey: ACCESS_KEY, exp: now() + 60 })}.`;
    rejected(() => verifyCustomerToken(unsigned, SECRET, ACCESS_KEY, MAX_TTL));
  });

  it('refuses other algorithms, even with the right key (HS512, HS384)', () => {
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, KEY, { algorithm: 'HS512' }), SECRET, ACCESS_KEY, MAX_TTL));
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, KEY, { algorithm: 'HS384' }), SECRET, ACCESS_KEY, MAX_TTL));
  });

  it('refuses a token without exp', () => {
    const err = rejected(() => verifyCustomerToken(token(), SECRET, ACCESS_KEY, MAX_TTL));
    expect(err.message).toMatch(/exp/);
  });

  it('refuses a token whose accessKey is not the one of the path', () => {
    rejected(() => verifyCustomerToken(token({ exp: now() + 60 }), SECRET, 'another-access-key-0000', MAX_TTL));
    rejected(() => verifyCustomerToken(token({ exp: now() + 60, accessKey: 'another-access-key-0000' }), SECRET, ACCESS_KEY, MAX_TTL));
    rejected(() => verifyCustomerToken(token({ exp: now() + 60, accessKey: undefined }), SECRET, ACCESS_KEY, MAX_TTL));
  });

  it('refuses malformed tokens and a tampered payload', () => {
    rejected(() => verifyCustomerToken('not-a-jwt', SECRET, ACCESS_KEY, MAX_TTL));
    rejected(() => verifyCustomerToken('', SECRET, ACCESS_KEY, MAX_TTL));
    const [header, , signature] = token({ exp: now() + 60 }).split('.');
    const forged = `${header}.${b64url({ accessKey: ACCESS_KEY, exp: now() + 99999 })}.${signature}`;
    rejected(() => verifyCustomerToken(forged, SECRET, ACCESS_KEY, MAX_TTL));
  });

  it('returns the operator name (trimmed) and sub claims', () => {
    const claims = verifyCustomerToken(token({ exp: now() + 60, name: '  김 운영  ' }, KEY, { subject: 'op-7' }), SECRET, ACCESS_KEY, MAX_TTL);
    expect(claims.name).toBe('김 운영');
    expect(claims.sub).toBe('op-7');
  });

  it('ignores name/sub claims that are not well-formed Unicode; cuts long ones at 255 characters, never inside a pair', () => {
    const lone = verifyCustomerToken(token({ exp: now() + 60, name: 'Kim \ud800', sub: '\udfff' }), SECRET, ACCESS_KEY, MAX_TTL);
    expect(lone.name).toBeUndefined();
    expect(lone.sub).toBeUndefined();
    const long = verifyCustomerToken(token({ exp: now() + 60, name: `a${'😀'.repeat(300)}` }), SECRET, ACCESS_KEY, MAX_TTL);
    expect([...(long.name as string)]).toHaveLength(255);
    expect(long.name?.isWellFormed()).toBe(true);
  });

  it('ignores blank or non-string name/sub claims', () => {
    const claims = verifyCustomerToken(token({ exp: now() + 60, name: '   ', sub: 42 }), SECRET, ACCESS_KEY, MAX_TTL);
    expect(claims.name).toBeUndefined();
    expect(claims.sub).toBeUndefined();
  });

  describe('TOKEN_MAX_TTL', () => {
    it('accepts exp up to TOKEN_MAX_TTL (+ 60 s skew) ahead', () => {
      expect(verifyCustomerToken(token({ exp: now() + MAX_TTL }), SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(token({ exp: now() + MAX_TTL + 50 }), SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(token({ exp: now() + 3600 }), SECRET, ACCESS_KEY, 3600).accessKey).toBe(ACCESS_KEY);
    });

    it('refuses exp further ahead than TOKEN_MAX_TTL + skew, with a message saying so', () => {
      const err = rejected(() => verifyCustomerToken(token({ exp: now() + MAX_TTL + 120 }), SECRET, ACCESS_KEY, MAX_TTL));
      expect(err.message).toBe('Token lives too long: exp may be at most 30d ahead (TOKEN_MAX_TTL)');
      expect(rejected(() => verifyCustomerToken(token({ exp: now() + 7200 }), SECRET, ACCESS_KEY, 3600)).message).toMatch(/1h ahead/);
      rejected(() => verifyCustomerToken(token({ exp: now() + 366 * 86400 }), SECRET, ACCESS_KEY, MAX_TTL));
      // Signed with the raw secret string too.
      rejected(() => verifyCustomerToken(token({ exp: now() + 10 * 365 * 86400 }, SECRET), SECRET, ACCESS_KEY, MAX_TTL));
    });

    it('refuses exp = 1e308 (a token that would live forever)', () => {
      const err = rejected(() => verifyCustomerToken(token({ exp: 1e308 }), SECRET, ACCESS_KEY, MAX_TTL));
      expect(err.message).toMatch(/TOKEN_MAX_TTL/);
    });

    it('refuses exp = Infinity (JSON 1e999), which is not a finite number', () => {
      const header = b64url({ alg: 'HS256', typ: 'JWT' });
      const payload = Buffer.from(`{"accessKey":"${ACCESS_KEY}","exp":1e999}`).toString('base64url');
      const signature = createHmac('sha256', KEY).update(`${header}.${payload}`).digest('base64url');
      const err = rejected(() => verifyCustomerToken(`${header}.${payload}.${signature}`, SECRET, ACCESS_KEY, MAX_TTL));
      expect(err.message).toBe('Token exp must be a finite number of seconds');
    });

    it('the verified-token cache does not keep a token valid under a shorter TOKEN_MAX_TTL', () => {
      const t = token({ exp: now() + 7200 });
      expect(verifyCustomerToken(t, SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(t, SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY); // cached
      rejected(() => verifyCustomerToken(t, SECRET, ACCESS_KEY, 3600));
    });

    it(`remembers ordinary tokens, not ones over ${CACHED_TOKEN_MAX_LENGTH} characters (which would fill memory if minted anew each time)`, () => {
      const keys = { secretKey: SECRET };
      const short = token({ exp: now() + 600 });
      expect(short.length).toBeLessThanOrEqual(CACHED_TOKEN_MAX_LENGTH);
      verifyCustomerToken(short, keys, ACCESS_KEY, MAX_TTL);
      expect(alreadyVerified(short, keys, ACCESS_KEY, MAX_TTL)?.claims.accessKey).toBe(ACCESS_KEY);
      const long = token({ exp: now() + 600, pad: 'x'.repeat(2000) });
      expect(verifyCustomerToken(long, keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(alreadyVerified(long, keys, ACCESS_KEY, MAX_TTL)).toBeUndefined();
    });

    it('the verified-token cache does not keep a token valid past its exp (+ skew)', () => {
      const t = token({ exp: now() + 5 });
      expect(verifyCustomerToken(t, SECRET, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      const realNow = Date.now;
      try {
        Date.now = () => realNow() + (5 + CLOCK_SKEW_SECONDS + 2) * 1000;
        expect(rejected(() => verifyCustomerToken(t, SECRET, ACCESS_KEY, MAX_TTL)).message).toMatch(/expired/i);
      } finally {
        Date.now = realNow;
      }
    });
  });

  describe('after a secret-key rotation', () => {
    const OLD = randomBytes(32).toString('base64');
    const NEW = randomBytes(32).toString('base64');
    const oldKey = Buffer.from(OLD, 'base64');
    const rotated = (validForSeconds: number) => ({
      secretKey: NEW,
      previousSecretKey: OLD,
      previousKeyValidUntil: new Date(Date.now() + validForSeconds * 1000),
    });

    it('accepts tokens of the new key, and of the previous key (both forms) until previousKeyValidUntil', () => {
      const keys = rotated(3600);
      expect(verifyCustomerToken(token({ exp: now() + 60 }, Buffer.from(NEW, 'base64')), keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(token({ exp: now() + 60 }, NEW), keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(token({ exp: now() + 60 }, oldKey), keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(token({ exp: now() + 60 }, OLD), keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
    });

    it('refuses tokens of the previous key once previousKeyValidUntil has passed (both forms), saying why', () => {
      const keys = rotated(-1);
      const err = rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, oldKey), keys, ACCESS_KEY, MAX_TTL));
      expect(err.message).toMatch(/previous secret key.*not accepted since/);
      rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, OLD), keys, ACCESS_KEY, MAX_TTL));
      expect(verifyCustomerToken(token({ exp: now() + 60 }, NEW), keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      // A previous key without an end is not accepted at all.
      rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, oldKey), { ...keys, previousKeyValidUntil: null }, ACCESS_KEY, MAX_TTL));
    });

    it('the previous key is a key like the other: expiry, TOKEN_MAX_TTL and the accessKey claim still apply', () => {
      const keys = rotated(3600);
      expect(rejected(() => verifyCustomerToken(token({ exp: now() - 600 }, oldKey), keys, ACCESS_KEY, MAX_TTL)).message).toMatch(/expired/i);
      expect(rejected(() => verifyCustomerToken(token({ exp: now() + 40 * 86400 }, oldKey), keys, ACCESS_KEY, MAX_TTL)).message).toMatch(/TOKEN_MAX_TTL/);
      rejected(() => verifyCustomerToken(token({ exp: now() + 60, accessKey: 'another-access-key-0000' }, oldKey), keys, ACCESS_KEY, MAX_TTL));
      rejected(() => verifyCustomerToken(token({ exp: now() + 60 }, randomBytes(32)), keys, ACCESS_KEY, MAX_TTL));
    });

    it('the verified-token cache does not keep a previous-key token valid past previousKeyValidUntil', () => {
      const keys = rotated(30);
      const t = token({ exp: now() + 3600 }, oldKey);
      expect(verifyCustomerToken(t, keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      expect(verifyCustomerToken(t, keys, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY); // cached
      const realNow = Date.now;
      try {
        Date.now = () => realNow() + 31_000;
        expect(rejected(() => verifyCustomerToken(t, keys, ACCESS_KEY, MAX_TTL)).message).toMatch(/previous secret key/);
      } finally {
        Date.now = realNow;
      }
    });

    it('a token cached under the old key is verified again once the key changed (grace 0: refused at once)', () => {
      const t = token({ exp: now() + 3600 }, oldKey);
      expect(verifyCustomerToken(t, OLD, ACCESS_KEY, MAX_TTL).accessKey).toBe(ACCESS_KEY);
      rejected(() => verifyCustomerToken(t, { secretKey: NEW, previousSecretKey: null, previousKeyValidUntil: null }, ACCESS_KEY, MAX_TTL));
    });
  });
});
