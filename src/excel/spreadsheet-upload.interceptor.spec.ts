import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { of } from 'rxjs';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { AppConfig } from '../config/app-config';
import { DISK_RESERVE_BYTES, SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';

jest.mock('node:fs/promises', () => ({ ...jest.requireActual<object>('node:fs/promises'), statfs: jest.fn() }));

const statfsMock = statfs as unknown as jest.Mock;
const MB = 1024 * 1024;

/**
 * The free-disk admission of spreadsheet uploads, with the file system's answer (statfs) made up: a
 * disk that would be left with less than the upload's limit plus DISK_RESERVE_BYTES refuses the upload
 * (503, before multer stores a byte of it), whatever the customer's upload slots; the slot it took is
 * given back. The end-to-end slot limits are in test/hostile-bodies.e2e-spec.ts.
 */
describe('SpreadsheetUploadInterceptor: free disk space', () => {
  let dataDir: string;
  let interceptor: SpreadsheetUploadInterceptor;
  /** Stands in for multer: what an admitted upload reaches. */
  let multer: { immediate: jest.Mock; job: jest.Mock };
  const statfsPaths: string[] = [];

  /** statfs as on a disk with `free` bytes available; `missing` paths do not exist (ENOENT). */
  function disk(free: number, missing: (path: string) => boolean = () => false): void {
    statfsPaths.length = 0;
    statfsMock.mockImplementation((path: string) => {
      statfsPaths.push(path);
      if (missing(path)) return Promise.reject(Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' }));
      return Promise.resolve({ bavail: free / 4096, bsize: 4096 });
    });
  }

  /** One upload's request and response; `close` ends it, as Node does once a response is done. */
  function upload(query: Record<string, string> = {}) {
    const res = new EventEmitter();
    const req = { query, headers: {}, tenant: { id: 7 } };
    const context = { switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) } as unknown as ExecutionContext;
    const next: CallHandler = { handle: () => of('stored') };
    return { res, run: () => interceptor.intercept(context, next) };
  }

  async function refusal(run: () => Promise<unknown>): Promise<ApiException> {
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    return err as ApiException;
  }

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'livegoods-upload-disk-'));
    interceptor = new SpreadsheetUploadInterceptor(AppConfig.fromEnv({ DATA_DIR: dataDir }));
    multer = { immediate: jest.fn(() => Promise.resolve(of('stored'))), job: jest.fn(() => Promise.resolve(of('stored'))) };
    const internals = interceptor as unknown as { immediate: NestInterceptor; job: NestInterceptor };
    internals.immediate = { intercept: multer.immediate };
    internals.job = { intercept: multer.job };
  });

  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a disk that would keep less than the limit plus the reserve refuses the upload with 503 and Retry-After, before multer', async () => {
    disk(20 * MB + DISK_RESERVE_BYTES - 1);
    const err = await refusal(upload().run);
    expect({ code: err.code, headers: err.headers }).toEqual({ code: ErrorCode.Unavailable, headers: { 'Retry-After': '60' } });
    expect(err.message).toMatch(/too little free disk space/);
    expect(multer.immediate).not.toHaveBeenCalled();
  });

  it('an immediate import needs its own limit free (20 MB + reserve), an import job the job limit (100 MB + reserve)', async () => {
    disk(20 * MB + DISK_RESERVE_BYTES);
    await upload().run();
    expect(multer.immediate).toHaveBeenCalledTimes(1);
    expect((await refusal(upload({ async: 'true' }).run)).code).toBe(ErrorCode.Unavailable);
    expect(multer.job).not.toHaveBeenCalled();
    disk(100 * MB + DISK_RESERVE_BYTES);
    await upload({ async: 'true' }).run();
    expect(multer.job).toHaveBeenCalledTimes(1);
  });

  it('a refused upload gives its slot back once its response closes: the customer is not locked out (429) after 4 refusals', async () => {
    disk(MB);
    for (let i = 0; i < 6; i++) {
      const { res, run } = upload();
      expect((await refusal(run)).code).toBe(ErrorCode.Unavailable);
      res.emit('close');
    }
    disk(1024 * MB);
    await upload().run();
    expect(multer.immediate).toHaveBeenCalledTimes(1);
  });

  it('the uploads folder not created yet: the disk of its nearest existing parent is asked', async () => {
    const imports = join(dataDir, 'imports');
    disk(MB, (path) => path.startsWith(imports));
    expect((await refusal(upload().run)).code).toBe(ErrorCode.Unavailable);
    expect(statfsPaths).toEqual([imports, dataDir]);
  });

  it('a file system that cannot tell (statfs failing up to the root) does not block uploads', async () => {
    disk(0, () => true);
    await upload().run();
    expect(multer.immediate).toHaveBeenCalledTimes(1);
  });
});
