import type { IncomingMessage } from 'node:http';

/**
 * The refusal of a request that carries Authorization more than once. Node keeps only the first of
 * several, while a proxy in front may read another one: which token counts would depend on who reads it.
 */
export const SEVERAL_AUTHORIZATION_HEADERS = 'Missing bearer token: the request carries more than one Authorization header; send one';

/** How many Authorization headers the request carries, as sent (Node's `headers` keeps the first only). */
export function authorizationHeaderCount(req: Pick<IncomingMessage, 'rawHeaders'>): number {
  const raw = req.rawHeaders ?? [];
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 13 && raw[i].toLowerCase() === 'authorization') count += 1;
  return count;
}

/**
 * The token of `Authorization: Bearer <token>`: the scheme in any letter case, then one token and nothing
 * after it; null when there is none, or when the request carries the header more than once.
 */
export function bearerTokenOf(req: Pick<IncomingMessage, 'headers' | 'rawHeaders'>): string | null {
  const header = req.headers?.authorization;
  if (typeof header !== 'string' || authorizationHeaderCount(req) > 1) return null;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
