import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor, PayloadTooLargeException } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { diskStorage } from 'multer';
import type { Observable } from 'rxjs';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';

export const UPLOAD_FIELD = 'file';

/**
 * FileInterceptor('file') with the configured limits, its refusals told with the API's error codes: over
 * the size limit is 413 -413, a malformed multipart body or a wrong part is 400 -510. The file streams to
 * disk under DATA_DIR/imports (multer disk storage: an upload costs no memory whatever its size, up to
 * the import job limit IMPORT_JOB_MAX_BYTES); ExcelService reads a small one in memory and removes it, a
 * job keeps it until it ends. Multer removes the partial file of a refused upload.
 */
@Injectable()
export class SpreadsheetUploadInterceptor implements NestInterceptor {
  private readonly upload: NestInterceptor;
  private readonly maxBytes: number;

  constructor(private readonly config: AppConfig) {
    this.maxBytes = Math.max(config.limits.uploadMaxBytes, config.importJobs.maxBytes);
    const dir = config.importJobs.dir;
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
      limits: { fileSize: this.maxBytes, files: 1, fields: 16, parts: 32 },
      // File names as browsers send them (UTF-8), not Latin-1.
      defParamCharset: 'utf8',
    });
    this.upload = new Upload();
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    try {
      return (await this.upload.intercept(context, next)) as Observable<unknown>;
    } catch (err) {
      throw this.refusal(err);
    }
  }

  private refusal(err: unknown): unknown {
    if (err instanceof PayloadTooLargeException) {
      const mb = Math.round((this.maxBytes / (1024 * 1024)) * 10) / 10;
      return ApiException.tooLarge(`The file is over the ${mb} MB upload limit (of an import job)`);
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
