import { Controller, Get, Logger, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { ExportQuery } from './dto/export-query.dto';
import { ExcelExportService } from './excel-export.service';
import { BulkWork } from '../http/bulk-work';
import { XLSX_CONTENT_TYPE } from './goods-template';

@ApiTags('Goods')
@TenantRoute()
@Controller('v1/goods/:accessKey/excel')
export class ExcelExportController {
  private readonly logger = new Logger(ExcelExportController.name);

  constructor(private readonly exporter: ExcelExportService) {}

  @Get('export')
  @BulkWork()
  @ApiOperation({
    summary: 'Export the catalog (or the matches of searchKeyword) as .xlsx or CSV, in the template columns',
    description:
      'Streams every goods item (oldest first, by id) in the columns of the upload template (`id, sku, url, name, ' +
      'brand, description, mediaUrl, originalPrice, discountedPrice, discountPercentage`), whatever the catalog size. ' +
      'The file uploads unchanged to POST /v1/goods/{accessKey}/excel, every row an UPDATE that changes nothing; edit ' +
      'it and upload it to change the catalog. An empty value is an empty cell (the import leaves that field as it is). ' +
      'Text a spreadsheet program would run as a formula (starting with =, +, -, @, tab or CR) is a text cell in ' +
      ".xlsx and starts with a single quote in CSV (`'=1+2`); the CSV import takes that quote off again. " +
      'searchKeyword selects as the list does. Not compressed. A failure after the first bytes breaks the ' +
      'transfer (the file is then incomplete and must not be used): it never ends like a complete file.',
  })
  @ApiOkResponse({
    description: 'The file, streamed (chunked)',
    headers: {
      'Content-Disposition': {
        description: 'A download named after the time of the export (UTC)',
        schema: { type: 'string', example: 'attachment; filename="goods-20260301-120000.xlsx"' },
      },
    },
    content: {
      [XLSX_CONTENT_TYPE]: { schema: { type: 'string', format: 'binary' } },
      'text/csv': {
        schema: { type: 'string', example: '\uFEFFid,sku,url,name,brand,description,mediaUrl,originalPrice,discountedPrice,discountPercentage\r\n' },
      },
    },
  })
  @ApiErrors(400)
  async export(@CurrentTenant() tenant: Tenant, @Query() query: ExportQuery, @Res() res: Response): Promise<void> {
    const file = await this.exporter.export(tenant, query);
    res.status(200);
    res.setHeader('Content-Type', file.contentType);
    res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
    res.setHeader('Cache-Control', 'no-store');
    // A client that goes away ends the file stream (and its database reads); a file stream that fails
    // breaks the response off: a broken transfer, never a complete-looking truncated file. (Plain pipe:
    // pipeline() would add its listeners to a response that already carries the logging and metrics ones.)
    const { stream } = file;
    res.once('close', () => stream.destroy());
    stream.once('error', (err) => {
      this.logger.warn(`export for customer ${tenant.id} ended early: ${err.message}`);
      res.destroy(err);
    });
    stream.pipe(res);
  }
}
