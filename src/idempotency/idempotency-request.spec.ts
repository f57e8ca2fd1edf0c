import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { fingerprintOf, keyHashOf, parseIdempotencyKey, RequestParts, uploadedFilesOf } from './idempotency-request';

describe('parseIdempotencyKey', () => {
  it.each(['a', 'x'.repeat(255), '3f2b8c1e-4b7a-4d0e-9a51-6c2f0e8d7b14', 'order 42 / retry', '~!@#$%^&*()_+{}|:"<>?'])('accepts %p', (key) => {
    expect(parseIdempotencyKey(key)).toBe(key);
  });

  it.each([
    ['empty', ''],
    ['over 255 characters', 'x'.repeat(256)],
    ['non-ASCII', 'café'],
    ['a control character', 'a\tb'],
    ['DEL', 'a\x7fb'],
    ['sent twice', ['a', 'b']],
  ])('refuses %s with 400 -510 naming the header', (_, key) => {
    let error: unknown;
    try {
      parseIdempotencyKey(key);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ApiException);
    expect((error as ApiException).code).toBe(ErrorCode.InvalidArgument);
    expect((error as ApiException).errors).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
  });

  it('reads a header sent once as given in a list (Node hands headers over as lists of their lines)', () => {
    expect(parseIdempotencyKey(['a, b'])).toBe('a, b');
  });
});

describe('keyHashOf', () => {
  it('is 64 hex digits and case-sensitive', () => {
    expect(keyHashOf('Key')).toMatch(/^[0-9a-f]{64}$/);
    expect(keyHashOf('Key')).not.toBe(keyHashOf('key'));
    expect(keyHashOf('Key')).toBe(keyHashOf('Key'));
  });
});

describe('fingerprintOf', () => {
  const base: RequestParts = { method: 'POST', url: '/v1/goods/ak', body: { sku: 'A', name: 'N' }, files: [] };

  it('is stable for the same request, method case aside', async () => {
    expect(await fingerprintOf(base)).toBe(await fingerprintOf({ ...base, method: 'post', body: { sku: 'A', name: 'N' } }));
    expect(await fingerprintOf(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each<[string, Partial<RequestParts>]>([
    ['method', { method: 'PUT' }],
    ['path', { url: '/v1/goods/ak/sku' }],
    ['query', { url: '/v1/goods/ak?refreshMedia=true' }],
    ['body value', { body: { sku: 'A', name: 'M' } }],
    ['no body', { body: undefined }],
    ['a file', { files: [{ fieldname: 'file', originalname: 'a.csv', mimetype: 'text/csv', buffer: Buffer.from('x') }] }],
  ])('changes with the %s', async (_, change) => {
    expect(await fingerprintOf({ ...base, ...change })).not.toBe(await fingerprintOf(base));
  });

  it('is the SHA-256 of the length-prefixed fields with the body as its JSON text, whatever the body size', async () => {
    // What keys stored before the body was serialised in slices were checked against.
    const expected = (parts: RequestParts) => {
      const fields = [parts.method.toUpperCase(), parts.url, parts.body === undefined ? '' : JSON.stringify(parts.body)];
      return createHash('sha256')
        .update(fields.map((f) => `${Buffer.byteLength(f)}:${f}`).join('\n'))
        .digest('hex');
    };
    const sync = Array.from({ length: 3000 }, (_, i) => ({ sku: `SKU-${i}`, name: `무선 이어폰 ${i} "😀"`, price: i / 3, tags: [i, null] }));
    for (const body of [undefined, {}, [], null, 'text', { sku: 'A', skip: undefined, list: [1, [2]] }, sync, { results: sync, n: 1 }]) {
      const parts: RequestParts = { method: 'post', url: '/v1/goods/ak/sync', body, files: [] };
      expect(await fingerprintOf(parts)).toBe(expected(parts));
    }
  });

  it('fields cannot run into each other (length-prefixed)', async () => {
    const a = await fingerprintOf({ method: 'POST', url: '/a', body: 'b', files: [] });
    const b = await fingerprintOf({ method: 'POST', url: '/a"', body: '', files: [] });
    expect(a).not.toBe(b);
  });

  it("covers an uploaded file's bytes, name and type; large files are hashed off the event loop alike", async () => {
    const big = Buffer.alloc(300 * 1024, 7);
    const file = { fieldname: 'file', originalname: 'goods.xlsx', mimetype: 'application/octet-stream', buffer: big };
    const one = await fingerprintOf({ ...base, body: {}, files: [file] });
    expect(await fingerprintOf({ ...base, body: {}, files: [{ ...file, buffer: Buffer.from(big) }] })).toBe(one);
    const changed = Buffer.from(big);
    changed[changed.length - 1] = 8;
    expect(await fingerprintOf({ ...base, body: {}, files: [{ ...file, buffer: changed }] })).not.toBe(one);
    expect(await fingerprintOf({ ...base, body: {}, files: [{ ...file, originalname: 'goods.csv' }] })).not.toBe(one);
    expect(await fingerprintOf({ ...base, body: {}, files: [{ ...file, mimetype: 'text/csv' }] })).not.toBe(one);
  });

  it('hashes a file on disk (multer disk storage) like the same bytes in memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idem-spec-'));
    try {
      const bytes = Buffer.alloc(200 * 1024, 3);
      writeFileSync(join(dir, 'upload'), bytes);
      const meta = { fieldname: 'file', originalname: 'goods.csv', mimetype: 'text/csv' };
      const onDisk = await fingerprintOf({ ...base, files: [{ ...meta, path: join(dir, 'upload') }] });
      expect(onDisk).toBe(await fingerprintOf({ ...base, files: [{ ...meta, buffer: bytes }] }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('uploadedFilesOf', () => {
  it('reads multer single, array and per-field uploads', () => {
    const a = { fieldname: 'file' };
    const b = { fieldname: 'more' };
    expect(uploadedFilesOf({})).toEqual([]);
    expect(uploadedFilesOf({ file: a })).toEqual([a]);
    expect(uploadedFilesOf({ files: [a, b] })).toEqual([a, b]);
    expect(uploadedFilesOf({ file: a, files: { more: [b] } })).toEqual([a, b]);
  });
});
