import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor, PayloadTooLargeException } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Observable } from 'rxjs';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';

export const UPLOAD_FIELD = 'file';

/**
 * FileInterceptor('file') with the configured limits (multer memory storage, so an upload costs at
 * most UPLOAD_MAX_BYTES of memory), its refusals told with the API's error codes: over the size limit is
 * 413 -413, a malformed multipart body or a wrong part is 400 -510.
 */
@Injectable()
export class SpreadsheetUploadInterceptor implements NestInterceptor {
  private readonly upload: NestInterceptor;

  constructor(private readonly config: AppConfig) {
    const Upload = FileInterceptor(UPLOAD_FIELD, {
      limits: { fileSize: config.limits.uploadMaxBytes, files: 1, fields: 16, parts: 32 },
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
      const mb = Math.round((this.config.limits.uploadMaxBytes / (1024 * 1024)) * 10) / 10;
      return ApiException.tooLarge(`The file is over the ${mb} MB upload limit`);
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
