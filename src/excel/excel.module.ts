import { Module } from '@nestjs/common';
import { SyncModule } from '../sync/sync.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { ExcelController } from './excel.controller';
import { ExcelService } from './excel.service';
import { SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';

/** Spreadsheet import (POST /v1/goods/{accessKey}/excel) and the goods template, on the sync's batch writer. */
@Module({
  imports: [SyncModule, WebhooksModule],
  controllers: [ExcelController],
  providers: [ExcelService, SpreadsheetUploadInterceptor],
})
export class ExcelModule {}
