import { createHash, webcrypto } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { ApiException } from '../common/errors/api.exception';
import { TimeSlicer } from '../common/util/time-slicer';
import { jsonChunksInSlices } from '../http/sliced-json';

/** The request header that names an idempotent write. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
/** The response header of an answer replayed from storage (`true`). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

export const KEY_MAX_LENGTH = 255;
/** 1 to 255 printable ASCII characters (space to tilde); Node has already trimmed the header's ends. */
const KEY_SYNTAX = /^[\x20-\x7e]{1,255}$/;

/** The key of a request as sent, checked: 400 -510 when it is empty, too long or not printable ASCII. */
export function parseIdempotencyKey(value: string | string[]): string {
  // Sent twice, the header is no one key (Node would join the two with a comma).
  if (Array.isArray(value) && value.length > 1) {
    throw ApiException.invalid(`The ${IDEMPOTENCY_KEY_HEADER} header was sent ${value.length} times: send it once`, [
      { field: IDEMPOTENCY_KEY_HEADER, message: 'must be sent once' },
    ]);
  }
  const key = Array.isArray(value) ? (value[0] ?? '') : value;
  if (KEY_SYNTAX.test(key)) return key;
  const reason = key.length === 0 ? 'is empty' : key.length > KEY_MAX_LENGTH ? `is ${key.length} characters long` : 'holds a character outside printable ASCII';
  throw ApiException.invalid(`The ${IDEMPOTENCY_KEY_HEADER} header ${reason}: send 1 to ${KEY_MAX_LENGTH} printable ASCII characters`, [
    { field: IDEMPOTENCY_KEY_HEADER, message: `must be 1 to ${KEY_MAX_LENGTH} printable ASCII characters` },
  ]);
}

/** SHA-256 (hex) of a key: what is stored, so that any key fits one fixed-size, case-sensitive column. */
export function keyHashOf(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** An uploaded file as multer (memory storage) puts it on the request. */
export interface UploadedPart {
  fieldname?: string;
  originalname?: string;
  mimetype?: string;
  /** Memory storage: the bytes. */
  buffer?: Buffer;
  /** Disk storage: where the bytes are. */
  path?: string;
}

/** What of a request its fingerprint covers. */
export interface RequestParts {
  method: string;
  /** The path and query string as sent. */
  url: string;
  /** The parsed body (JSON, form or multipart text fields); undefined without one. */
  body: unknown;
  /** Uploaded files (multer's `req.file` / `req.files`), in the order they came. */
  files: UploadedPart[];
}

/** Above this many bytes a digest runs off the event loop (WebCrypto uses the thread pool). */
const INLINE_DIGEST_BYTES = 64 * 1024;

async function sha256(data: Buffer): Promise<Buffer> {
  if (data.length <= INLINE_DIGEST_BYTES) return createHash('sha256').update(data).digest();
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', data));
}

/**
 * SHA-256 (hex) of what makes two requests "the same": method, path and query as sent, the parsed
 * body (JSON text of it, so whitespace does not count but key order does) and each uploaded file's
 * field, name, type and bytes. The same key with another fingerprint is refused (422).
 */
export async function fingerprintOf(parts: RequestParts): Promise<string> {
  // The body's JSON text in time slices: a 10,000-element sync is 2.4 MB of it.
  const body = parts.body === undefined ? [] : await jsonChunksInSlices(parts.body, new TimeSlicer());
  const files = await Promise.all(
    parts.files.map(async (f) => [f.fieldname ?? '', f.originalname ?? '', f.mimetype ?? '', (await fileDigest(f)).toString('hex')]),
  );
  // Length-prefixed fields joined by newlines: no two different requests hash the same bytes.
  const fields: Buffer[][] = [[Buffer.from(parts.method.toUpperCase())], [Buffer.from(parts.url)], body, ...files.flat().map((f) => [Buffer.from(f)])];
  const bytes: Buffer[] = [];
  fields.forEach((chunks, i) => {
    const length = chunks.reduce((sum, c) => sum + c.length, 0);
    bytes.push(Buffer.from(`${i ? '\n' : ''}${length}:`), ...chunks);
  });
  return (await sha256(Buffer.concat(bytes))).toString('hex');
}

/** SHA-256 of an uploaded file's bytes, in memory (multer's memory storage) or on disk (disk storage). */
async function fileDigest(file: UploadedPart): Promise<Buffer> {
  if (file.buffer || !file.path) return sha256(file.buffer ?? Buffer.alloc(0));
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file.path)) hash.update(chunk as Buffer);
  return hash.digest();
}

/** The uploaded files of an Express request (multer: `file`, `files` as an array or per field). */
export function uploadedFilesOf(req: { file?: UploadedPart; files?: UploadedPart[] | Record<string, UploadedPart[]> }): UploadedPart[] {
  const files: UploadedPart[] = [];
  if (req.file) files.push(req.file);
  if (Array.isArray(req.files)) files.push(...req.files);
  else if (req.files) for (const list of Object.values(req.files)) files.push(...list);
  return files;
}
