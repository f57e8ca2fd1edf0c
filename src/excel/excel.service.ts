import { Injectable, Logger } from '@nestjs/common';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { AppConfig } from '../config/app-config';
import { SyncResponse } from '../sync/dto/sync-response.dto';
import { BatchOptions, GoodsBatchWriter } from '../sync/goods-batch-writer';
import { GoodsSheet, parseGoodsSheet } from './goods-sheet.parser';
import { buildGoodsTemplate } from './goods-template';
import { SheetError, SheetRefusal } from './sheet-error';
import { WebhookEvents } from '../webhooks/webhook-events';

/** The multipart file part as multer hands it over (memory storage). */
export interface UploadedSheet {
  buffer: Buffer;
  originalname?: string;
  mimetype?: string;
  size?: number;
}

export interface ExcelImportResult {
  response: SyncResponse;
  /** Header texts of the sheet's columns that name no goods field. */
  ignoredColumns: string[];
}

export function apiExceptionOf(err: SheetError): ApiException {
  switch (err.refusal) {
    case SheetRefusal.Unsupported:
      return new ApiException(ErrorCode.UnsupportedMediaType, err.message);
    case SheetRefusal.TooLarge:
      return new ApiException(ErrorCode.TooLarge, err.message);
    case SheetRefusal.BadLayout:
      return ApiException.invalid(err.message, [{ field: 'file', message: err.message }]);
    default: {
      const unreachable: never = err.refusal;
      return unreachable;
    }
  }
}

/**
 * POST /excel: the whole file is read and checked first (type, limits, header); only then are its
 * rows handed to the same batch writer as the JSON sync, so a refused upload writes nothing.
 */
@Injectable()
export class ExcelService {
  private readonly logger = new Logger(ExcelService.name);
  private templateFile?: Promise<Buffer>;

  constructor(
    private readonly writer: GoodsBatchWriter,
    private readonly config: AppConfig,
    private readonly webhooks: WebhookEvents,
  ) {}

  async import(tenant: Tenant, file: UploadedSheet | undefined, options: BatchOptions = {}): Promise<ExcelImportResult> {
    if (!file) {
      throw ApiException.invalid('Send the spreadsheet as the multipart/form-data part "file"', [{ field: 'file', message: 'file is required' }]);
    }
    const sheet = await this.read(file);
    if (sheet.ignoredColumns.length) {
      this.logger.debug(`customer ${tenant.id}: spreadsheet columns ignored: ${sheet.ignoredColumns.join(', ')}`);
    }
    const response = await this.writer.apply(
      tenant,
      sheet.rows.map((r) => ({ row: r.row, data: r.values })),
      { refreshMedia: !!options.refreshMedia, source: 'spreadsheet' },
    );
    // The rows are committed by now (the writer works in slices); the event follows in its own transaction.
    await this.webhooks.recordNow(tenant.id, 'import.completed', {
      source: 'spreadsheet',
      fileName: file.originalname?.slice(0, 255) || null,
      total: response.totalCount,
      created: response.createCount,
      updated: response.updateCount,
      failed: response.failCount,
      finishedAt: Date.now(),
    });
    return { response, ignoredColumns: sheet.ignoredColumns };
  }

  /** The goods template (.xlsx), built once. */
  template(): Promise<Buffer> {
    this.templateFile ??= buildGoodsTemplate({
      maxRows: this.config.limits.excelMaxRows,
      uploadMaxBytes: this.config.limits.uploadMaxBytes,
    }).catch((err: unknown) => {
      this.templateFile = undefined;
      throw err;
    });
    return this.templateFile;
  }

  private async read(file: UploadedSheet): Promise<GoodsSheet> {
    const limits = this.config.limits;
    try {
      return await parseGoodsSheet(
        { buffer: file.buffer, filename: file.originalname, mimetype: file.mimetype },
        {
          maxRows: limits.excelMaxRows,
          maxUncompressedBytes: limits.excelMaxUncompressedBytes,
          timeoutMs: limits.excelParseTimeoutMs,
        },
      );
    } catch (err) {
      if (err instanceof SheetError) throw apiExceptionOf(err);
      throw err;
    }
  }
}
