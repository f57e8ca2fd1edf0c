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

/**
 * The refusal of a token whose signature no key of the path's access key verifies, and of any token sent
 * for an access key that does not exist: the two read the same, so that a 401 never tells which access
 * keys exist.
 */
export const BAD_SIGNATURE = "Invalid token: its signature does not match this access key's secret key";

/**
 * What is wrong with a token that can be told without any key: its form, its algorithm (and no `crit`
 * extension) and its claims (accessKey against the path, exp, nbf, iat); undefined when nothing is.
 * Every refusal but a bad signature (and the previous key's end) is decided here, before the customer is
 * looked up, so that the answer is the same whether or not the access key exists.
 */
export function tokenProblem(token: string, accessKey: string, maxTtlSeconds: number, now = Date.now() / 1000): string | undefined {
  const parts = token.split('.');
  const header = parts.length === 3 ? jsonObject(parts[0]) : undefined;
  const payload = header ? jsonObject(parts[1]) : undefined;
  if (!header || !payload) return 'Malformed token: a JWT is three base64url parts, header.payload.signature, the first two JSON objects';
  if (header.alg !== 'HS256') return `Token algorithm ${JSON.stringify(header.alg ?? null).slice(0, 40)} is not accepted: sign with HS256`;
  // A token that lists extensions its reader must understand (RFC 7515 §4.1.11): this service knows none.
  if (header.crit !== undefined) return 'Token header lists critical extensions (crit), which this service does not understand; sign without them';
  if (payload.accessKey === undefined) return 'Token must carry an accessKey claim';
  if (payload.accessKey !== accessKey) return "Token is for another access key: its accessKey claim differs from the path's";
  const { exp, nbf, iat } = payload;
  if (exp === undefined) return 'Token must carry an exp claim';
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return 'Token exp must be a finite number of seconds';
  if (exp - now > maxTtlSeconds + CLOCK_SKEW_SECONDS) {
    return `Token lives too long: exp may be at most ${formatDuration(maxTtlSeconds)} ahead (TOKEN_MAX_TTL)`;
  }
  if (exp + CLOCK_SKEW_SECONDS <= now) return 'Token expired';
  if (nbf !== undefined && (typeof nbf !== 'number' || !Number.isFinite(nbf))) return 'Token nbf must be a finite number of seconds';
  if (typeof nbf === 'number' && nbf - CLOCK_SKEW_SECONDS > now) return `Token not valid yet: nbf is ${new Date(nbf * 1000).toISOString()}`;
  if (iat !== undefined && (typeof iat !== 'number' || !Number.isFinite(iat))) return 'Token iat must be a finite number of seconds';
  // Issued later than now: the signer's clock is wrong (or the token was made to look fresh).
  if (typeof iat === 'number' && iat - CLOCK_SKEW_SECONDS > now) {
    return `Token issued in the future: iat is ${new Date(iat * 1000).toISOString()}, more than 60 s after the server's clock`;
  }
  return undefined;
}

/** A base64url part of a JWT read as a JSON object; undefined when it is not one. */
function jsonObject(part: string): Record<string, unknown> | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(part)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

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

/** Longest token whose verification is remembered (see verifiedToken). */
export const CACHED_TOKEN_MAX_LENGTH = 1024;

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
  // The cache holds the token and its claims: a token of up to 16 KB (the header limit) minted anew for
  // each request would make 10,000 entries 300 MB. Ordinary tokens are a few hundred bytes; longer ones
  // are verified every time instead.
  if (token.length <= CACHED_TOKEN_MAX_LENGTH) {
    if (verifiedTokens.size >= 10_000) verifiedTokens.clear();
    verifiedTokens.set(cacheKey, verified);
  }
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
      // tokenProblem has made sure the payload is a JSON object: verify answers it as one.
      const payload = verify(token, key, { algorithms: ['HS256'], clockTolerance: CLOCK_SKEW_SECONDS }) as JwtPayload;
      return { payload, key };
    } catch (err) {
      // tokenProblem has ruled out the form, the algorithm and the times (but for a second passing):
      // what is left is about the signature, which no other key changes unless it is a mismatch.
      if (err instanceof TokenExpiredError) throw new TokenRejected('Token expired');
      if (!(err instanceof JsonWebTokenError) || err.message !== 'invalid signature') throw new TokenRejected(BAD_SIGNATURE);
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
  const problem = tokenProblem(token, accessKey, maxTtlSeconds, now);
  if (problem) throw new TokenRejected(problem);
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
  if (!signed) throw new TokenRejected(BAD_SIGNATURE);
  const { payload, key } = signed;
  // tokenProblem read these claims from the same payload: exp is a finite number, accessKey the path's.
  const claims: VerifiedClaims = {
    accessKey,
    exp: payload.exp as number,
    iat: typeof payload.iat === 'number' ? payload.iat : undefined,
    name: claimText(payload.name),
    sub: claimText(payload.sub),
  };
  return { claims, key, validUntil: Math.min(claims.exp + CLOCK_SKEW_SECONDS, keyValidUntil) };
}
