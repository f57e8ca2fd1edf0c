import { createSecretKey, KeyObject } from 'node:crypto';
import { JsonWebTokenError, JwtPayload, TokenExpiredError, verify } from 'jsonwebtoken';

export const CLOCK_SKEW_SECONDS = 60;

export interface VerifiedClaims {
  accessKey: string;
  exp: number;
  iat?: number;
  name?: string;
  sub?: string;
}

export class TokenRejected extends Error {}

const keyCache = new Map<string, KeyObject[]>();
const verifiedTokens = new Map<string, VerifiedClaims>();

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
 * Verifies a customer-signed JWT: HS256 only, `exp` required, 60 s of clock skew. The HMAC key is the
 * base64-decoded secretKey; the raw secretKey string is accepted as key too (CONTRACT §1).
 */
export function verifyCustomerToken(token: string, secretKey: string, accessKey: string): VerifiedClaims {
  // Clients send the same token many times; one that verified before needs only its expiry checked.
  const cacheKey = `${secretKey}\n${accessKey}\n${token}`;
  const known = verifiedTokens.get(cacheKey);
  if (known) {
    if (known.exp + CLOCK_SKEW_SECONDS > Date.now() / 1000) return known;
    verifiedTokens.delete(cacheKey);
  }
  const claims = verifyUncached(token, secretKey, accessKey);
  if (verifiedTokens.size >= 10_000) verifiedTokens.clear();
  verifiedTokens.set(cacheKey, claims);
  return claims;
}

function verifyUncached(token: string, secretKey: string, accessKey: string): VerifiedClaims {
  const keys = hmacKeys(secretKey);
  let payload: JwtPayload | undefined;
  let lastError: unknown;
  for (const key of keys) {
    try {
      const decoded = verify(token, key, { algorithms: ['HS256'], clockTolerance: CLOCK_SKEW_SECONDS });
      if (typeof decoded === 'string') throw new TokenRejected('Token payload must be a JSON object');
      payload = decoded;
      break;
    } catch (err) {
      lastError = err;
      if (err instanceof TokenExpiredError) throw new TokenRejected('Token expired');
      if (err instanceof JsonWebTokenError && err.message !== 'invalid signature') break;
    }
  }
  if (!payload) {
    if (lastError instanceof TokenRejected) throw lastError;
    throw new TokenRejected('Invalid token');
  }
  if (typeof payload.exp !== 'number') throw new TokenRejected('Token must carry an exp claim');
  if (payload.accessKey !== accessKey) throw new TokenRejected('Invalid token');
  return {
    accessKey: payload.accessKey,
    exp: payload.exp,
    iat: typeof payload.iat === 'number' ? payload.iat : undefined,
    name: typeof payload.name === 'string' && payload.name.trim() ? payload.name.trim().slice(0, 255) : undefined,
    sub: typeof payload.sub === 'string' && payload.sub ? payload.sub.slice(0, 255) : undefined,
  };
}
