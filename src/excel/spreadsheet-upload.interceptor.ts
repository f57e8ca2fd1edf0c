import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor, PayloadTooLargeException } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { diskStorage } from 'multer';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { overJobBytesMessage, overSyncBytesMessage, queryFlag, UploadLimits, uploadLimitsOf } from './upload-limits';

export const UPLOAD_FIELD = 'file';

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
 * an import job and may be up to IMPORT_JOB_MAX_BYTES (100 MB). Multer reads (and discards) the rest of a
 * refused body before the answer, so that the client is not cut off while it sends.
 */
@Injectable()
export class SpreadsheetUploadInterceptor implements NestInterceptor {
  private readonly immediate: NestInterceptor;
  private readonly job: NestInterceptor;
  private readonly limits: UploadLimits;

  constructor(config: AppConfig) {
    this.limits = uploadLimitsOf(config);
    const dir = config.importJobs.dir;
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
        limits: { fileSize: maxBytes, files: 1, fields: 16, parts: 32 },
        // File names as browsers send them (UTF-8), not Latin-1.
        defParamCharset: 'utf8',
      });
      return new Upload();
    };
    this.immediate = upload(this.limits.syncMaxBytes);
    this.job = upload(Math.max(this.limits.syncMaxBytes, this.limits.jobMaxBytes));
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const query = context.switchToHttp().getRequest<Request>().query ?? {};
    const asJob = queryFlag(query.async);
    try {
      return (await (asJob ? this.job : this.immediate).intercept(context, next)) as Observable<unknown>;
    } catch (err) {
      throw this.refusal(err, asJob, queryFlag(query.dryRun));
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
