import { readFile, rm } from 'node:fs/promises';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics.service';
import { SyncResponse } from '../sync/dto/sync-response.dto';
import { GoodsBatchWriter } from '../sync/goods-batch-writer';
import { ImportJobResponse } from './dto/import-job.dto';
import { detectFileFormat, GoodsSheet, parseGoodsSheet, SheetFile } from './goods-sheet.parser';
import { countSheetRows } from './sheet-reader';
import { buildGoodsTemplate } from './goods-template';
import { ImportJobsService, StoredUpload } from './import-jobs.service';
import { SheetError, SheetRefusal } from './sheet-error';
import type { XlsxRowCount } from './xlsx-row-count';
import { WebhookEvents } from '../webhooks/webhook-events';
import { overSyncBytesMessage, overSyncRowsMessage, uploadLimitsOf } from './upload-limits';
import { WorkGate, WorkGateError } from '../common/util/work-gate';

/** Synchronous spreadsheet reads (on the main thread) one node runs at once, and how many may wait for a turn. */
export const SYNC_READS_AT_ONCE = 2;
export const SYNC_READS_WAITING = 32;

/** The multipart file part as multer hands it over (disk storage, see SpreadsheetUploadInterceptor). */
export type UploadedSheet = StoredUpload;

export interface ImportOptions {
  refreshMedia?: boolean;
  /** Run it as a job (202) whatever its size, up to the job limits; without it, over the synchronous limits is 413. */
  async?: boolean;
  /** Answer what the import would do without writing (synchronous imports only). */
  dryRun?: boolean;
}

/** Applied at once (200), or queued as a job (202). */
export type ExcelImportResult =
  | {
      kind: 'applied';
      response: SyncResponse;
      /** Header texts of the sheet's columns that name no goods field. */
      ignoredColumns: string[];
    }
  | { kind: 'job'; job: ImportJobResponse };

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
 * POST /excel: without `async=true` a file within the synchronous limits (UPLOAD_MAX_BYTES, EXCEL_MAX_ROWS)
 * is read and checked first (type, limits, header); only then are its rows handed to the same batch writer
 * as the JSON sync, so a refused upload writes nothing. A larger file is refused with 413 whose message
 * says that the same file is taken with `async=true` (the API promises this call a 200 result or an
 * error, never a job). With `async=true` any file within the job limits becomes an import job
 * (ImportJobsService; applied in the background in chunks), answered 202.
 */
@Injectable()
export class ExcelService implements OnModuleInit {
  private readonly logger = new Logger(ExcelService.name);
  private templateFile?: Promise<Buffer>;
  /** Synchronous spreadsheet reads under way and waiting (see read). */
  private readonly reading = new WorkGate(SYNC_READS_AT_ONCE, SYNC_READS_WAITING);

  constructor(
    private readonly writer: GoodsBatchWriter,
    private readonly config: AppConfig,
    private readonly jobs: ImportJobsService,
    private readonly webhooks: WebhookEvents,
    private readonly metrics: Metrics,
  ) {
    metrics.countGate('spreadsheet', this.reading);
  }

  /**
   * Loads exceljs while the service starts, before it serves anything. Loading it is synchronous (a
   * CommonJS module tree): 380-430 ms of event loop on a slow 2-core machine, which the first upload,
   * template or export after each start held every other request and live viewer up for. It adds that
   * much to the start and about 29 MB to the memory of a process.
   */
  async onModuleInit(): Promise<void> {
    await import('exceljs');
  }

  async import(tenant: Tenant, file: UploadedSheet | undefined, options: ImportOptions = {}): Promise<ExcelImportResult> {
    if (!file) {
      throw ApiException.invalid('Send the spreadsheet as the multipart/form-data part "file"', [{ field: 'file', message: 'file is required' }]);
    }
    let handedOver = false;
    try {
      if (options.dryRun && options.async) {
        const message = 'dryRun cannot be combined with async: a dry run is answered at once';
        throw ApiException.invalid(message, [{ field: 'async', message }]);
      }
      const limits = uploadLimitsOf(this.config);
      if (options.async) {
        // A file that is surely no spreadsheet is refused now (415), not as a failed job later.
        const stored = { path: file.path, filename: file.originalname, mimetype: file.mimetype };
        try {
          await detectFileFormat(stored);
        } catch (err) {
          throw err instanceof SheetError ? apiExceptionOf(err) : err;
        }
        // So is an .xlsx with more rows holding values than a job takes (413), counted quickly.
        const counted = await this.refuseOverJobRows(stored);
        handedOver = true;
        return { kind: 'job', job: await this.jobs.create(tenant, file, { refreshMedia: options.refreshMedia, counted }) };
      }
      // Without async=true the file is imported at once or refused: over the synchronous limits it is 413
      // (the upload interceptor stops a larger file at UPLOAD_MAX_BYTES already), never a job.
      if (file.size > limits.syncMaxBytes) throw ApiException.tooLarge(overSyncBytesMessage(limits, !!options.dryRun));
      let sheet: GoodsSheet;
      try {
        sheet = await this.read(file, tenant.id);
      } catch (err) {
        if (err instanceof SheetError && err.tooManyRows) throw ApiException.tooLarge(overSyncRowsMessage(limits, !!options.dryRun));
        throw err instanceof SheetError ? apiExceptionOf(err) : err;
      }
      await rm(file.path, { force: true });
      handedOver = true;
      if (sheet.ignoredColumns.length) {
        this.logger.debug(`customer ${tenant.id}: spreadsheet columns ignored: ${sheet.ignoredColumns.join(', ')}`);
      }
      const response = await this.writer.apply(
        tenant,
        sheet.rows.map((r) => ({ row: r.row, data: r.values, refusal: r.refusal })),
        { refreshMedia: !!options.refreshMedia, dryRun: !!options.dryRun, source: 'spreadsheet' },
      );
      // A dry run applied nothing, so nothing is announced.
      if (options.dryRun) return { kind: 'applied', response, ignoredColumns: sheet.ignoredColumns };
      // The rows are committed by now (the writer works in slices); the event follows in its own transaction.
      await this.webhooks.recordNow(tenant.id, 'import.completed', {
        source: 'spreadsheet',
        state: 'succeeded',
        fileName: file.originalname?.slice(0, 255) || null,
        total: response.totalCount,
        created: response.createCount,
        updated: response.updateCount,
        failed: response.failCount,
        error: null,
        finishedAt: Date.now(),
      });
      return { kind: 'applied', response, ignoredColumns: sheet.ignoredColumns };
    } finally {
      if (!handedOver) await rm(file.path, { force: true });
    }
  }

  /**
   * Refuses (413) an .xlsx whose first sheet holds more rows with values below the header than
   * IMPORT_JOB_MAX_ROWS: a job would read it only to fail. The quick count (XML only, on a worker thread)
   * takes about 0.5 s per 100,000 rows; a file it cannot read is left to the job, which fails it saying why.
   * The count is handed to the job (which then does not count the file again); null for a CSV or a file
   * it could not read.
   */
  private async refuseOverJobRows(file: SheetFile): Promise<XlsxRowCount | null> {
    const maxRows = this.config.importJobs.maxRows;
    let counted: XlsxRowCount | null;
    try {
      counted = await countSheetRows(file, {
        maxRows,
        maxUncompressedBytes: this.config.limits.excelMaxUncompressedBytes,
        timeoutMs: this.config.limits.excelParseTimeoutMs,
      });
    } catch (err) {
      this.logger.debug(`row count at upload skipped: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
    const valueRows = counted?.valueRows ?? 0;
    if (valueRows > maxRows) {
      throw apiExceptionOf(
        SheetError.tooManyRows(
          `The sheet has ${valueRows.toLocaleString('en-US')} rows with values below the header, more than the ` +
            `${maxRows.toLocaleString('en-US')} data rows one import job takes; split it into several files`,
        ),
      );
    }
    return counted;
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

  /**
   * The sheet within the synchronous limits; refusals are SheetErrors. Read on the main thread, where a
   * workbook's shared strings are held whole while it is read (up to EXCEL_MAX_UNCOMPRESSED_BYTES of XML:
   * ~230 MB of memory for a 2.8 MB file of 950,000 distinct strings), so at most SYNC_READS_AT_ONCE are
   * read at once per node, and the memory of many concurrent uploads adds up to no more than theirs;
   * others wait their turn (the file stays on disk meanwhile), and past SYNC_READS_WAITING, or after
   * waiting the parse timeout, they are 503 with Retry-After. Turns are shared between customers: a
   * customer reading one file already takes a second turn only when no other customer's file waits
   * (see WorkGate), so one customer's uploads cannot keep another's waiting behind all of them.
   */
  private async read(file: UploadedSheet, customerId?: number): Promise<GoodsSheet> {
    const limits = this.config.limits;
    const timeoutMs = limits.excelParseTimeoutMs;
    try {
      // The parse has its own deadline (timeoutMs); the gate's covers the wait for a turn as well.
      return await this.reading.run(
        Date.now() + 2 * timeoutMs,
        async () =>
          parseGoodsSheet(
            { buffer: await readFile(file.path), filename: file.originalname, mimetype: file.mimetype },
            { maxRows: limits.excelMaxRows, maxUncompressedBytes: limits.excelMaxUncompressedBytes, timeoutMs },
          ),
        customerId,
      );
    } catch (err) {
      if (!(err instanceof WorkGateError)) throw err;
      this.metrics.workRefusals.inc({ work: 'spreadsheet', reason: err.reason });
      throw ApiException.unavailable('The server is reading other spreadsheets right now; send this one again shortly');
    }
  }
}
