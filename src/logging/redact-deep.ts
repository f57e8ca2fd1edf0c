import { redactCredentials } from '../common/util/redact';

const MAX_DEPTH = 6;

/**
 * A copy of a value about to be logged with redactCredentials applied to every string in it (keys of
 * plain objects, array items, nested values). Errors become `{type, message, stack}` first. Other objects
 * (class instances: requests, buffers) are left out as `[ClassName]`: a log line never dumps one.
 */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactCredentials(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[…]';
  if (value instanceof Error) {
    const out: Record<string, unknown> = { type: value.name, message: redactCredentials(value.message) };
    if (value.stack) out.stack = redactCredentials(value.stack);
    const code = (value as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') out.code = code;
    return out;
  }
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto !== Object.prototype && proto !== null) return `[${(value.constructor as { name?: string } | undefined)?.name ?? 'object'}]`;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v, depth + 1);
  return out;
}
