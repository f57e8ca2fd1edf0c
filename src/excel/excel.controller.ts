import { Readable } from 'node:stream';
import { Controller, Get, HttpCode, Post, Query, Res, StreamableFile, UploadedFile } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiError, ApiErrors, IdPathParam, TenantRoute } from '../http/api-docs.decorators';
import { IdParam } from '../http/id-param';
import { largeJsonAnswer } from '../http/sliced-json';
import { SyncResponse } from '../sync/dto/sync-response.dto';
import { ExcelUploadBody, ExcelUploadQuery } from './dto/excel-upload.dto';
import { ImportJobDetailResponse, ImportJobListQuery, ImportJobListResponse, ImportJobResponse, ImportJobResultsQuery } from './dto/import-job.dto';
import { ExcelService, UploadedSheet } from './excel.service';
import { ImportJobsService } from './import-jobs.service';
import { TEMPLATE_FILENAME, XLSX_CONTENT_TYPE } from './goods-template';
import { SpreadsheetUploadInterceptor } from './spreadsheet-upload.interceptor';
import { BulkWork } from '../http/bulk-work';
import { ReadsMultipart } from '../http/body-parser.guard';

/** Response header listing the sheet's columns that were ignored (URI-encoded names, comma-separated). */
export const IGNORED_COLUMNS_HEADER = 'X-Ignored-Columns';

@ApiTags('Goods')
@TenantRoute()
@Controller('v1/goods/:accessKey/excel')
export class ExcelController {
  constructor(
    private readonly excel: ExcelService,
    private readonly jobs: ImportJobsService,
  ) {}

  @Post()
  @HttpCode(200)
  @BulkWork()
  @ReadsMultipart(SpreadsheetUploadInterceptor)
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
      '10,000 data rows, bounded decompressed size; a file that is not a readable .xlsx/CSV is 415, and nothing of a ' +
      'refused file is written.\n\n' +
      'Without `async=true` the answer is the 200 result or an error, never a job: a file over 20 MB or over 10,000 ' +
      'data rows (UPLOAD_MAX_BYTES, EXCEL_MAX_ROWS) is 413 -413, and the message names the limit passed and says ' +
      'that the same file can be imported as a background job with `async=true`.\n\n' +
      'With `async=true` the file (up to 100 MB and 200,000 data rows: IMPORT_JOB_MAX_BYTES, IMPORT_JOB_MAX_ROWS) ' +
      'becomes an import job: the answer is 202 with the job and a `Location` header naming ' +
      'GET /v1/goods/{accessKey}/excel/jobs/{jobId}, where its progress and row results are read. The job checks the ' +
      'whole file before it writes anything (a file over the row limit or with a bad header fails without writing), ' +
      'then applies the rows in chunks. A file over the job size limit is 413, and so is an .xlsx with more rows ' +
      'holding values below the header than the job row limit (counted at upload); a customer with ' +
      'IMPORT_JOB_MAX_PENDING jobs queued or running gets 429.\n\n' +
      'With dryRun=true the rows are checked and answered as an immediate upload would answer them, but nothing is ' +
      'written (a file over the synchronous limits is 413 then too; dryRun with async=true is 400). ' +
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
  @ApiAcceptedResponse({
    type: ImportJobResponse,
    description: 'Only with async=true: the file became an import job; it is queued',
    headers: { Location: { description: 'The job: /v1/goods/{accessKey}/excel/jobs/{jobId}', schema: { type: 'string' } } },
  })
  @ApiErrors(400)
  @ApiError(
    413,
    '-413 over a limit. Without async=true: over 20 MB or 10,000 data rows (UPLOAD_MAX_BYTES, EXCEL_MAX_ROWS); the message ' +
      'says that async=true takes the file as a job. With async=true: over the job limits (100 MB; an .xlsx over 200,000 rows ' +
      'holding values). Either way: a zip bomb, a cell or header over what a spreadsheet holds',
  )
  @ApiError(415, '-415 not a readable .xlsx or CSV spreadsheet (wrong type, empty, corrupt, truncated, no workbook, too slow to read)')
  async upload(
    @CurrentTenant() tenant: Tenant,
    @UploadedFile() file: UploadedSheet | undefined,
    @Query() query: ExcelUploadQuery,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile | string | ImportJobResponse> {
    const result = await this.excel.import(tenant, file, query);
    if (result.kind === 'job') {
      res.status(202);
      res.setHeader('Location', `/v1/goods/${encodeURIComponent(tenant.accessKey)}/excel/jobs/${result.job.jobId}`);
      return result.job;
    }
    const { response, ignoredColumns } = result;
    if (ignoredColumns.length) {
      res.setHeader(
        IGNORED_COLUMNS_HEADER,
        ignoredColumns
          .slice(0, 50)
          .map((name) => encodeURIComponent(name.slice(0, 100)))
          .join(','),
      );
    }
    // A SyncResponse, serialised in time slices (10,000 rows are about 4 MB of JSON).
    return largeJsonAnswer(res, response);
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

  @Get('jobs')
  @ApiOperation({
    summary: "List the customer's spreadsheet import jobs",
    description: 'Newest first: every queued or running job and the most recent finished ones (IMPORT_JOB_KEEP), without row results.',
  })
  @ApiOkResponse({ type: ImportJobListResponse })
  @ApiErrors(400)
  listJobs(@CurrentTenant() tenant: Tenant, @Query() query: ImportJobListQuery): Promise<ImportJobListResponse> {
    return this.jobs.list(tenant, query.page, query.count);
  }

  @Get('jobs/:jobId')
  @IdPathParam('jobId', 'The import job id (from the 202 answer of POST .../excel)')
  @ApiOperation({
    summary: 'One spreadsheet import job: state, progress, counts and its row results',
    description:
      'state: queued, running, succeeded or failed; rowsDone of rowsTotal rows applied (committed) so far, with the ' +
      'CREATE/UPDATE/FAIL counts; `results` holds page `page` of the row results committed so far (at most 1000 a page), ' +
      'each as the synchronous import answers it. A failed job says why in `error` and which rows were applied. ' +
      "Another customer's job is 404.",
  })
  @ApiOkResponse({ type: ImportJobDetailResponse })
  @ApiErrors(400, 404)
  job(@CurrentTenant() tenant: Tenant, @IdParam('jobId') jobId: number, @Query() query: ImportJobResultsQuery): Promise<ImportJobDetailResponse> {
    return this.jobs.get(tenant, jobId, query.page, query.count);
  }

  @Get('jobs/:jobId/failures.csv')
  @IdPathParam('jobId', 'The import job id')
  @ApiOperation({
    summary: 'The FAIL rows of an import job, as CSV',
    description:
      'UTF-8 with a byte order mark (Excel opens it as is); columns: row, message, then the goods fields as the row sent them. ' +
      'Holds the FAIL rows committed so far. Cells a spreadsheet would run as formulas start with an apostrophe.',
  })
  @ApiOkResponse({
    description: 'import-job-{jobId}-failures.csv',
    headers: {
      'Content-Disposition': { description: 'A download', schema: { type: 'string', example: 'attachment; filename="import-job-42-failures.csv"' } },
    },
    content: { 'text/csv': { schema: { type: 'string', example: 'row,message,id,sku\r\n7,price must be a number,,X-1\r\n' } } },
  })
  @ApiErrors(400, 404)
  async failures(@CurrentTenant() tenant: Tenant, @IdParam('jobId') jobId: number): Promise<StreamableFile> {
    const { job, lines } = await this.jobs.failures(tenant, jobId);
    return new StreamableFile(Readable.from(lines), {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="import-job-${job.id}-failures.csv"`,
    });
  }
}
