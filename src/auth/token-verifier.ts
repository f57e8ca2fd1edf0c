import { createSecretKey, KeyObject } from 'node:crypto';
import { JsonWebTokenError, JwtPayload, TokenExpiredError, verify } from 'jsonwebtoken';
import { formatDuration } from '../common/util/duration';

export const CLOCK_SKEW_SECONDS = 60;

export interface VerifiedClaims {
  accessKey: string;
  exp: number;
  iat?: number;
  name?: string;
  sub?: string;
}

/**
 * The keys a customer's tokens may be signed with: the secret key, and after a rotation the previous
 * one until `previousKeyValidUntil` (the customers row carries these columns).
 */
export interface SigningKeys {
  secretKey: string;
  previousSecretKey?: string | null;
  previousKeyValidUntil?: Date | null;
}

export class TokenRejected extends Error {}

const keyCache = new Map<string, KeyObject[]>();

/** A token that verified before: its claims, the key that signed it, and until when (epoch s) it stays valid. */
export interface VerifiedToken {
  claims: VerifiedClaims;
  key: KeyObject;
  validUntil: number;
}

const verifiedTokens = new Map<string, VerifiedToken>();

/**
 * The two accepted HMAC keys of a secretKey, as KeyObjects (given raw bytes, jsonwebtoken would first
 * try, expensively, to parse them as a public key on every call).
 */
function hmacKeys(secretKey: string): KeyObject[] {
  let keys = keyCache.get(secretKey);
  if (!keys) {
    keys = [createSecretKey(Buffer.from(secretKey, 'base64')), createSecretKey(Buffer.from(secretKey, 'utf8'))];
    if (keyCache.size >= 10_000) keyCache.clear();
    keyCache.set(secretKey, keys);
  }
  return keys;
}

/**
 * Verifies a customer-signed JWT: HS256 only, `exp` required, finite and at most `maxTtlSeconds`
 * (TOKEN_MAX_TTL) ahead, 60 s of clock skew. The HMAC key is the base64-decoded secretKey; the raw
 * secretKey string is accepted as key too. After a rotation, the previous secret key (both forms)
 * verifies too until `previousKeyValidUntil`.
 */
export function verifyCustomerToken(token: string, keys: SigningKeys | string, accessKey: string, maxTtlSeconds: number): VerifiedClaims {
  return verifiedToken(token, keys, accessKey, maxTtlSeconds).claims;
}

/**
 * A token that passed every rule of verifyCustomerToken: its claims, and the HMAC key (one of the
 * customer's accepted keys) that signed it, which a JWT library verifying the token again needs (see
 * JwtStrategy). Cached like verifyCustomerToken.
 */
export function verifiedToken(token: string, keys: SigningKeys | string, accessKey: string, maxTtlSeconds: number): VerifiedToken {
  const signing: SigningKeys = typeof keys === 'string' ? { secretKey: keys } : keys;
  const now = Date.now() / 1000;
  const cacheKey = verifiedCacheKey(token, signing, accessKey);
  const known = previouslyVerified(cacheKey, maxTtlSeconds, now);
  if (known) return known;
  const verified = verifyUncached(token, signing, accessKey, maxTtlSeconds, now);
  if (verifiedTokens.size >= 10_000) verifiedTokens.clear();
  verifiedTokens.set(cacheKey, verified);
  return verified;
}

/**
 * The token, if it passed every rule before for these very keys and this path and is still valid;
 * undefined otherwise (then it must be verified). Clients send the same token many times.
 */
export function alreadyVerified(token: string, keys: SigningKeys, accessKey: string, maxTtlSeconds: number): VerifiedToken | undefined {
  return previouslyVerified(verifiedCacheKey(token, keys, accessKey), maxTtlSeconds, Date.now() / 1000);
}

function verifiedCacheKey(token: string, keys: SigningKeys, accessKey: string): string {
  return [keys.secretKey, keys.previousSecretKey ?? '', keys.previousKeyValidUntil?.getTime() ?? '', accessKey, token].join('\n');
}

/** A cached verification, unless it outlived the token's exp (+ skew) or, for the previous key, that key's end. */
function previouslyVerified(cacheKey: string, maxTtlSeconds: number, now: number): VerifiedToken | undefined {
  const known = verifiedTokens.get(cacheKey);
  if (!known) return undefined;
  if (known.validUntil > now && known.claims.exp - now <= maxTtlSeconds + CLOCK_SKEW_SECONDS) return known;
  verifiedTokens.delete(cacheKey);
  return undefined;
}

/** The payload and the key when one of the keys signed the token; undefined when none did. */
function verifyWith(token: string, keys: KeyObject[]): { payload: JwtPayload; key: KeyObject } | undefined {
  for (const key of keys) {
    try {
      const decoded = verify(token, key, { algorithms: ['HS256'], clockTolerance: CLOCK_SKEW_SECONDS });
      if (typeof decoded === 'string') throw new TokenRejected('Token payload must be a JSON object');
      return { payload: decoded, key };
    } catch (err) {
      if (err instanceof TokenRejected) throw err;
      // jsonwebtoken checks the signature first: "expired" means this key signed it.
      if (err instanceof TokenExpiredError) throw new TokenRejected('Token expired');
      // Malformed, another algorithm, not yet valid (nbf): no other key changes that.
      if (!(err instanceof JsonWebTokenError) || err.message !== 'invalid signature') throw new TokenRejected('Invalid token');
    }
  }
  return undefined;
}

/**
 * An optional text claim (name, sub: they become adminName/adminId): trimmed, at most 255 characters
 * (code points, so a surrogate pair is never cut), and ignored when blank, not a string or not
 * well-formed Unicode (the database would store U+FFFD for a lone surrogate).
 */
function claimText(value: unknown): string | undefined {
  if (typeof value !== 'string' || !value.isWellFormed()) return undefined;
  const text = value.trim();
  return text ? [...text].slice(0, 255).join('') : undefined;
}

function verifyUncached(token: string, keys: SigningKeys, accessKey: string, maxTtlSeconds: number, now: number): VerifiedToken {
  let signed = verifyWith(token, hmacKeys(keys.secretKey));
  let keyValidUntil = Infinity;
  if (!signed && keys.previousSecretKey) {
    const previousUntil = (keys.previousKeyValidUntil?.getTime() ?? 0) / 1000;
    signed = verifyWith(token, hmacKeys(keys.previousSecretKey));
    if (signed && previousUntil <= now) {
      throw new TokenRejected(
        `Token signed with the previous secret key, which was replaced (not accepted since ${new Date(previousUntil * 1000).toISOString()})`,
      );
    }
    keyValidUntil = previousUntil;
  }
  if (!signed) throw new TokenRejected('Invalid token');
  const { payload, key } = signed;
  if (payload.exp === undefined) throw new TokenRejected('Token must carry an exp claim');
  if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp)) throw new TokenRejected('Token exp must be a finite number of seconds');
  if (payload.exp - now > maxTtlSeconds + CLOCK_SKEW_SECONDS) {
    throw new TokenRejected(`Token lives too long: exp may be at most ${formatDuration(maxTtlSeconds)} ahead (TOKEN_MAX_TTL)`);
  }
  if (payload.accessKey !== accessKey) throw new TokenRejected('Invalid token');
  const claims: VerifiedClaims = {
    accessKey,
    exp: payload.exp,
    iat: typeof payload.iat === 'number' ? payload.iat : undefined,
    name: claimText(payload.name),
    sub: claimText(payload.sub),
  };
  return { claims, key, validUntil: Math.min(payload.exp + CLOCK_SKEW_SECONDS, keyValidUntil) };
}
