import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor, PayloadTooLargeException } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { diskStorage } from 'multer';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { declaredLength } from '../http/body-parser.guard';
import { overJobBytesMessage, overSyncBytesMessage, queryFlag, UploadLimits, uploadLimitsOf } from './upload-limits';

export const UPLOAD_FIELD = 'file';

/** Most bytes a text field of the upload form may have (the form has none the service reads). */
const FIELD_MAX_BYTES = 16 * 1024;
const MAX_FIELDS = 16;
const MAX_PARTS = 32;
/** busboy's limit on one part's headers. */
const PART_HEADERS_MAX_BYTES = 16 * 1024;
/**
 * More than a multipart body can hold besides its file: every field at its limit, every part's headers at
 * theirs, and the boundaries (at most 70 characters each). A body declared longer than the file limit plus
 * this cannot hold a file within the limit.
 */
/** Spreadsheet uploads one customer may be sending to (or have waiting on) this node at once. */
export const UPLOADS_PER_CUSTOMER = 4;
/** Spreadsheet uploads this node takes at once, from every customer together. */
export const UPLOADS_PER_NODE = 32;
/** Disk space left free besides an upload's own limit: an upload is not started when less would remain. */
export const DISK_RESERVE_BYTES = 256 * 1024 * 1024;

export const MULTIPART_OVERHEAD_BYTES = MAX_FIELDS * FIELD_MAX_BYTES + MAX_PARTS * (PART_HEADERS_MAX_BYTES + 80) + 80;

/**
 * FileInterceptor('file') with the configured limits, its refusals told with the API's error codes: over
 * the size limit is 413 -413, a malformed multipart body or a wrong part is 400 -510. The file streams to
 * disk under DATA_DIR/imports (multer disk storage: an upload costs no memory whatever its size);
 * ExcelService reads a small one in memory and removes it, a job keeps it until it ends. Multer removes
 * the partial file of a refused upload.
 *
 * The size limit depends on the query, which is known before the body is read: without `async=true` the
 * file is imported at once and may be at most UPLOAD_MAX_BYTES (20 MB), so a larger one is refused (413,
 * saying that async=true takes it) after at most that much has been stored; with `async=true` it becomes
 * an import job and may be up to IMPORT_JOB_MAX_BYTES (100 MB). A body whose Content-Length alone is over
 * the limit (with MULTIPART_OVERHEAD_BYTES for the rest of the form) is refused before a byte of it is read;
 * one that turns out too large as it streams (no Content-Length, or fields that took the room) is refused
 * once multer has read (and discarded) the rest of it, so that the client is not cut off while it sends.
 */
@Injectable()
export class SpreadsheetUploadInterceptor implements NestInterceptor {
  private readonly immediate: NestInterceptor;
  private readonly job: NestInterceptor;
  private readonly limits: UploadLimits;
  private readonly jobMaxBytes: number;
  private readonly uploadsDir: string;
  /** Uploads under way on this node, per customer id (see admit). */
  private readonly uploading = new Map<number, number>();
  private uploadingTotal = 0;

  constructor(config: AppConfig) {
    this.limits = uploadLimitsOf(config);
    const dir = config.importJobs.dir;
    this.uploadsDir = dir;
    const upload = (maxBytes: number): NestInterceptor => {
      const Upload = FileInterceptor(UPLOAD_FIELD, {
        storage: diskStorage({
          destination: (_req, _file, done) => {
            try {
              mkdirSync(dir, { recursive: true });
              done(null, dir);
            } catch (err) {
              done(err as Error, dir);
            }
          },
          filename: (_req, _file, done) => done(null, `${randomUUID()}.upload`),
        }),
        limits: { fileSize: maxBytes, files: 1, fields: MAX_FIELDS, fieldSize: FIELD_MAX_BYTES, parts: MAX_PARTS },
        // File names as browsers send them (UTF-8), not Latin-1.
        defParamCharset: 'utf8',
      });
      return new Upload();
    };
    this.jobMaxBytes = Math.max(this.limits.syncMaxBytes, this.limits.jobMaxBytes);
    this.immediate = upload(this.limits.syncMaxBytes);
    this.job = upload(this.jobMaxBytes);
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const req = context.switchToHttp().getRequest<Request>();
    const query = req.query ?? {};
    const asJob = queryFlag(query.async);
    const maxBytes = asJob ? this.jobMaxBytes : this.limits.syncMaxBytes;
    const declared = declaredLength(req);
    if (declared !== undefined && declared > maxBytes + MULTIPART_OVERHEAD_BYTES) {
      throw this.refusal(new PayloadTooLargeException(), asJob, queryFlag(query.dryRun));
    }
    await this.admit((req as unknown as AuthenticatedRequest).tenant?.id ?? 0, context.switchToHttp().getResponse<Response>(), maxBytes);
    try {
      return (await (asJob ? this.job : this.immediate).intercept(context, next)) as Observable<unknown>;
    } catch (err) {
      throw this.refusal(err, asJob, queryFlag(query.dryRun));
    }
  }

  /**
   * An upload streams to disk as it arrives, and the import-job cap is checked only once it has arrived, so
   * without a bound one customer could hold many slow uploads of 100 MB open at once and fill the disk.
   * It takes a slot until its request has ended (answered or dropped; the file of a refused or finished
   * immediate import is removed by then): at most UPLOADS_PER_CUSTOMER per customer (429) and
   * UPLOADS_PER_NODE in all (503), and none starts when the disk holding DATA_DIR/imports would have less
   * than its limit plus DISK_RESERVE_BYTES free (503).
   */
  private async admit(customerId: number, res: Response, maxBytes: number): Promise<void> {
    const mine = this.uploading.get(customerId) ?? 0;
    if (mine >= UPLOADS_PER_CUSTOMER) {
      throw ApiException.rateLimited(
        `This customer already has ${mine} spreadsheet uploads under way on this server (at most ${UPLOADS_PER_CUSTOMER}); send this one when one has ended`,
        5,
      );
    }
    if (this.uploadingTotal >= UPLOADS_PER_NODE)
      throw ApiException.unavailable('The server is receiving as many spreadsheet uploads as it takes at once; try again shortly');
    // Counted before the disk check's await, so that uploads arriving meanwhile see this one.
    this.uploading.set(customerId, mine + 1);
    this.uploadingTotal += 1;
    res.once('close', () => {
      this.uploadingTotal -= 1;
      const left = (this.uploading.get(customerId) ?? 1) - 1;
      if (left > 0) this.uploading.set(customerId, left);
      else this.uploading.delete(customerId);
    });
    const free = await freeBytes(this.uploadsDir);
    if (free !== undefined && free < maxBytes + DISK_RESERVE_BYTES) {
      throw ApiException.unavailable('The server has too little free disk space to take a spreadsheet upload now; try again later', 60);
    }
  }

  private refusal(err: unknown, asJob: boolean, dryRun: boolean): unknown {
    if (err instanceof PayloadTooLargeException) {
      return ApiException.tooLarge(asJob ? overJobBytesMessage(this.limits) : overSyncBytesMessage(this.limits, dryRun));
    }
    if (!(err instanceof HttpException)) return err;
    // Nest words multer's errors "<message>[ - <field>]"; the messages differ between multer releases.
    const reason = err.message;
    if (/^Unexpected (file )?field/i.test(reason)) {
      return ApiException.invalid(`Send the spreadsheet in the multipart part "${UPLOAD_FIELD}" (got another file part)`, [
        { field: UPLOAD_FIELD, message: 'file is required' },
      ]);
    }
    if (/^Too many files/i.test(reason)) return ApiException.invalid('Send one spreadsheet per upload');
    return ApiException.invalid(`The multipart body cannot be read (${reason})`);
  }
}

/** Bytes free for this process on the file system holding `dir` (or its nearest existing parent); undefined when unknown. */
async function freeBytes(dir: string): Promise<number | undefined> {
  for (let path = dir; ;) {
    try {
      const stats = await statfs(path);
      return stats.bavail * stats.bsize;
    } catch {
      const parent = dirname(path);
      if (parent === path) return undefined;
      path = parent;
    }
  }
}
