import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The headers of every delivery (docs/webhooks.md, Verifying a delivery). */
export const SIGNATURE_HEADER = 'Livegoods-Signature';
export const EVENT_ID_HEADER = 'Livegoods-Event-Id';
export const EVENT_TYPE_HEADER = 'Livegoods-Event-Type';
export const DELIVERY_ID_HEADER = 'Livegoods-Delivery-Id';

/** Default replay tolerance of verifySignature: a signature older (or newer) than this is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** A new signing secret: `whsec_` + 32 random bytes in base64url (the whole string is the HMAC key). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** HMAC-SHA256 of `${timestamp}.${body}` with the secret (its UTF-8 bytes), hex. */
export function signatureOf(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

/** The Livegoods-Signature header value: `t=<unix seconds>,v1=<hex HMAC>`. */
export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${signatureOf(secret, timestamp, body)}`;
}

/**
 * What a receiver does (the same code as the snippet in docs/webhooks.md): parses the header, checks the
 * timestamp is within `toleranceSeconds` of `nowSeconds`, and compares every v1 signature in constant time.
 */
export function verifySignature(
  secret: string,
  header: string | undefined,
  body: string,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  if (!header) return false;
  let timestamp = NaN;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') timestamp = Number(value);
    else if (key === 'v1') signatures.push(value);
  }
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signatureOf(secret, timestamp, body), 'hex');
  return signatures.some((s) => {
    const given = Buffer.from(s, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
