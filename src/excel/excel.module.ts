import { Module } from '@nestjs/common';
import { LiveModule } from '../live/live.module';
import { SyncModule } from '../sync/sync.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { ExcelExportController } from './excel-export.controller';
import { ExcelExportService } from './excel-export.service';
import { ExcelController } from './excel.controller';
import { ExcelService } from './excel.service';
import { ImportJobRunner } from './import-job-runner';
import { ImportJobsService } from './import-jobs.service';
import { SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';

/**
 * Spreadsheet import (POST /v1/goods/{accessKey}/excel) and the goods template, on the sync's batch
 * writer; large imports as background jobs (ImportJobsService, ImportJobRunner), whose end is recorded
 * as an `import.completed` webhook event in the transaction of the job's final state; and the catalog export
 * (GET /v1/goods/{accessKey}/excel/export).
 */
@Module({
  imports: [SyncModule, LiveModule, WebhooksModule],
  controllers: [ExcelController, ExcelExportController],
  providers: [ExcelService, ExcelExportService, SpreadsheetUploadInterceptor, ImportJobsService, ImportJobRunner],
})
export class ExcelModule {}
