import { Module } from '@nestjs/common';
import { LiveModule } from '../live/live.module';
import { SyncModule } from '../sync/sync.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { ExcelController } from './excel.controller';
import { ExcelService } from './excel.service';
import { ImportJobEvents } from './import-job-events';
import { ImportJobRunner } from './import-job-runner';
import { ImportJobsService } from './import-jobs.service';
import { SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';

/**
 * Spreadsheet import (POST /v1/goods/{accessKey}/excel) and the goods template, on the sync's batch
 * writer; large imports as background jobs (ImportJobsService, ImportJobRunner), whose end is announced
 * through ImportJobEvents (exported for the modules that react to it).
 */
@Module({
  imports: [SyncModule, LiveModule, WebhooksModule],
  controllers: [ExcelController],
  providers: [ExcelService, SpreadsheetUploadInterceptor, ImportJobsService, ImportJobRunner, ImportJobEvents],
  exports: [ImportJobEvents],
})
export class ExcelModule {}
