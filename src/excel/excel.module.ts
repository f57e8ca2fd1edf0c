import { Module } from '@nestjs/common';
import { SyncModule } from '../sync/sync.module';
import { ExcelExportController } from './excel-export.controller';
import { ExcelExportService } from './excel-export.service';
import { ExcelController } from './excel.controller';
import { ExcelService } from './excel.service';
import { SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';

/** Spreadsheet import (POST /v1/goods/{accessKey}/excel) on the sync's batch writer, the goods template and the export. */
@Module({
  imports: [SyncModule],
  controllers: [ExcelController, ExcelExportController],
  providers: [ExcelService, ExcelExportService, SpreadsheetUploadInterceptor],
})
export class ExcelModule {}
