import { Controller, Get, HttpCode, Post, Query, Res, StreamableFile, UploadedFile, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiError, ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { BatchQuery } from '../sync/dto/batch-query.dto';
import { SyncResponse } from '../sync/dto/sync-response.dto';
import { ExcelUploadBody } from './dto/excel-upload.dto';
import { ExcelService, UploadedSheet } from './excel.service';
import { TEMPLATE_FILENAME, XLSX_CONTENT_TYPE } from './goods-template';
import { SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';

/** Response header listing the sheet's columns that were ignored (URI-encoded names, comma-separated). */
export const IGNORED_COLUMNS_HEADER = 'X-Ignored-Columns';

@ApiTags('Goods')
@TenantRoute()
@Controller('v1/goods/:accessKey/excel')
export class ExcelController {
  constructor(private readonly excel: ExcelService) {}

  @Post()
  @HttpCode(200)
  @UseInterceptors(SpreadsheetUploadInterceptor)
  @ApiOperation({
    summary: 'Create or update goods from a spreadsheet (.xlsx or CSV)',
    description:
      'The multipart part `file` holds an .xlsx workbook (its first sheet is read) or a CSV file (UTF-8; named .csv). ' +
      'Row 1 is the header: field names (`id, sku, url, name, brand, description, mediaUrl, originalPrice, ' +
      'discountedPrice, discountPercentage`) or their Korean labels (상품ID, 상품코드, 상품URL, 상품명, 브랜드, 설명, ' +
      '이미지URL, 정가, 할인가, 할인율), in any order; other columns are ignored (listed in the `X-Ignored-Columns` ' +
      'header). Each row is applied like one element of `POST /sync`; `row` in the results is the sheet row number ' +
      '(first data row = 2). Empty cells leave a field unchanged; blank rows are skipped (at most 10,000 of them ' +
      'besides the data rows). The template: ' +
      '[GET /v1/goods/{accessKey}/excel/template](#/Goods/ExcelController_template). Limits: 20 MB per file, ' +
      '10,000 data rows, bounded decompressed size; a file over a limit is 413, a file that is not a readable ' +
      '.xlsx/CSV is 415, and nothing of a refused file is written. With dryRun=true the rows are checked and answered ' +
      'as an upload would answer them, but nothing is written. ' +
      'A CSV cell starting with a single quote before =, +, -, @, tab or CR is read without that quote (the export writes it).',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: ExcelUploadBody })
  @ApiOkResponse({
    type: SyncResponse,
    headers: {
      [IGNORED_COLUMNS_HEADER]: {
        description: 'The header texts of the columns that name no goods field (URI-encoded, comma-separated); absent when none',
        schema: { type: 'string', example: 'Color,%EC%9E%AC%EA%B3%A0' },
      },
    },
  })
  @ApiErrors(400, 413)
  @ApiError(415, '-415 not a readable .xlsx or CSV spreadsheet (wrong type, empty, corrupt, truncated, no workbook, too slow to read)')
  async upload(
    @CurrentTenant() tenant: Tenant,
    @UploadedFile() file: UploadedSheet | undefined,
    @Query() query: BatchQuery,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SyncResponse> {
    const { response, ignoredColumns } = await this.excel.import(tenant, file, query);
    if (ignoredColumns.length) {
      res.setHeader(
        IGNORED_COLUMNS_HEADER,
        ignoredColumns
          .slice(0, 50)
          .map((name) => encodeURIComponent(name.slice(0, 100)))
          .join(','),
      );
    }
    return response;
  }

  @Get('template')
  @ApiOperation({
    summary: 'Download the goods spreadsheet template (.xlsx)',
    description:
      'Sheet "Goods": the field names as header (row 1; Korean labels in the header notes) and no rows, so that the ' +
      'template uploaded unchanged imports nothing; sheet "Example": the same header and one filled-in row (never imported); ' +
      'sheet "Columns": every column with its Korean label, type, whether it is required, limits and an example. ' +
      'A filled template uploads as is to POST /v1/goods/{accessKey}/excel.',
  })
  @ApiOkResponse({
    description: `${TEMPLATE_FILENAME}, an .xlsx workbook`,
    headers: {
      'Content-Disposition': { description: 'A download', schema: { type: 'string', example: `attachment; filename="${TEMPLATE_FILENAME}"` } },
    },
    content: { [XLSX_CONTENT_TYPE]: { schema: { type: 'string', format: 'binary' } } },
  })
  async template(): Promise<StreamableFile> {
    const file = await this.excel.template();
    return new StreamableFile(file, {
      type: XLSX_CONTENT_TYPE,
      disposition: `attachment; filename="${TEMPLATE_FILENAME}"`,
      length: file.length,
    });
  }
}
