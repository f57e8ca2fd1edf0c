import { Body, Controller, HttpCode, Post, Query, Res, StreamableFile } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { LargeBody } from '../http/body-parser.guard';
import { BulkWork } from '../http/bulk-work';
import { largeJsonAnswer } from '../http/sliced-json';
import { SyncGoodsElementDto } from '../goods/dto/goods-body.dto';
import { BatchQuery } from './dto/batch-query.dto';
import { SyncResponse } from './dto/sync-response.dto';
import { SyncService } from './sync.service';

@ApiTags('Goods')
@TenantRoute()
@Controller('v1/goods/:accessKey/sync')
export class SyncController {
  constructor(private readonly syncService: SyncService) {}

  @Post()
  @HttpCode(200)
  @LargeBody()
  @BulkWork()
  @ApiOperation({
    summary: 'Create or update many goods in one call',
    description:
      'Each element: with `id` that item is updated; else the item whose sku (then url) matches is updated; ' +
      'else a new item is created (name, sku and url required). Elements apply in order, each on its own: ' +
      'a failing element is reported with status FAIL and never rolls back the others. At most 10,000 elements. ' +
      'Images (mediaUrl) are fetched with bounded concurrency, each distinct URL once; an image that cannot be ' +
      'stored leaves the row CREATE/UPDATE with the reason in `message`. Viewers of each READY or ONAIR campaign ' +
      'holding items the call changed get one goods.update with their summaries (the spreadsheet import too). ' +
      'With dryRun=true the answer is the same but nothing is written (see the parameter).',
  })
  @ApiBody({
    type: [SyncGoodsElementDto],
    description:
      'A JSON array of goods (at most SYNC_MAX_ITEMS, 10,000 by default). The element schema says what is applied; an element ' +
      'that does not fit it (not an object, a wrong type, a value out of range) does not refuse the call but comes back as a FAIL row.',
    // Without `id`: an example that creates its item (or updates it, sent again), rather than a FAIL row for an id the catalog lacks.
    examples: {
      createOrUpdate: {
        summary: 'Create two items, or update them when sent again (matched by sku)',
        value: [
          {
            sku: 'SW-7',
            url: 'https://shop.example.com/goods/SW-7',
            name: '스마트 워치 7',
            brand: 'Sampletech',
            originalPrice: 399000,
            discountedPrice: 359100,
          },
          { sku: 'BT-2', url: 'https://shop.example.com/goods/BT-2', name: 'Wireless earbuds', originalPrice: 129000 },
        ],
      },
    },
  })
  @ApiOkResponse({ type: SyncResponse })
  @ApiErrors(400, 413, 415)
  async sync(
    @CurrentTenant() tenant: Tenant,
    @Body() body: unknown,
    @Query() query: BatchQuery,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile | string> {
    // A SyncResponse, serialised in time slices (10,000 rows are about 4 MB of JSON).
    return largeJsonAnswer(res, await this.syncService.sync(tenant, body, query));
  }
}
