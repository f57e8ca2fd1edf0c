import { promisify } from 'node:util';
import { constants, deflate, inflate } from 'node:zlib';

const deflateAsync = promisify(deflate);
const inflateAsync = promisify(inflate);

/** Bytes of packed results per stored piece (a MySQL BLOB holds 65,535). */
export const RESULT_PART_BYTES = 60_000;

/**
 * A group of row results (each the JSON text of one result, without line breaks: JSON escapes them) as
 * stored: JSON lines, deflated on libuv's thread pool (not the main thread), cut into pieces of
 * RESULT_PART_BYTES. About a ninth of the text of typical rows: the database writes and the main thread escapes
 * that much less than with one row per result.
 */
export async function packResults(lines: string[]): Promise<Buffer[]> {
  const packed = await deflateAsync(lines.join('\n'), { level: constants.Z_BEST_SPEED });
  const parts: Buffer[] = [];
  for (let at = 0; at < packed.length; at += RESULT_PART_BYTES) parts.push(packed.subarray(at, at + RESULT_PART_BYTES));
  return parts;
}

/** The JSON lines of a group from its pieces, in order. */
export async function unpackResults(parts: Buffer[]): Promise<string[]> {
  const text = (await inflateAsync(Buffer.concat(parts))).toString('utf8');
  return text ? text.split('\n') : [];
}
