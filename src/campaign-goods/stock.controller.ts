import { applyDecorators, Controller, HttpCode, Param, Post, Put } from '@nestjs/common';
import { NoFilesInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiQuery, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { ReadsMultipart } from '../http/body-parser.guard';
import { CampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { CampaignKeyParam } from '../campaigns/console.controller';
import { MAX_STOCK, SetStockParams, StockDeltaParams } from './dto/campaign-goods-requests.dto';
import { LOCATORS, SalesStatusInput } from './sales-status.controller';
import { StockService } from './stock.service';

const EITHER = 'in the query string or the body (the body wins)';

/** The body of the stock operations (documentation only: SalesStatusInput reads it, as for the sales-status ones). */
class StockCommonFields {
  @ApiPropertyOptional({ type: 'integer', format: 'int64', minimum: 1, example: 1024, description: 'The item (…/id)' }) goodsId?: number;
  @ApiPropertyOptional({ minLength: 1, maxLength: 2048, example: 'https://shop.example.com/goods/SW-7', description: 'The item (…/url)' }) url?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, example: 'SW-7', description: 'The item (…/sku)' }) sku?: string;
  @ApiPropertyOptional({ type: Boolean, example: true, description: 'Push the changes to viewers now (default true); also 1/0, yes/no, on/off' })
  notify?: boolean;
  @ApiPropertyOptional({ maxLength: 255, example: 'Order system', description: 'adminName on a derived status change' }) name?: string;
}
class SetStockBody extends StockCommonFields {
  // Not required here: it may come in the query string instead (a body without it is valid then).
  @ApiPropertyOptional({
    nullable: true,
    type: 'integer',
    minimum: 0,
    maximum: MAX_STOCK,
    example: 20,
    description: `Units left; null stops tracking; required, ${EITHER}`,
  })
  stock?: number | null;
  @ApiPropertyOptional({
    nullable: true,
    type: 'integer',
    minimum: 0,
    maximum: MAX_STOCK,
    example: 5,
    description: 'ALMOST_SOLD_OUT at this many units left or fewer; null: no such stage; absent: unchanged',
  })
  almostSoldOutAt?: number | null;
}
class StockDeltaBody extends StockCommonFields {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_STOCK, default: 1, example: 1, description: 'Units (default 1)' }) quantity?: number;
}

const COMMON_QUERY = [
  ApiQuery({
    name: 'notify',
    required: false,
    schema: { type: 'boolean', default: true },
    description: 'Push the changes to viewers now (default true); also 1/0, yes/no, on/off',
  }),
  ApiQuery({ name: 'name', required: false, schema: { type: 'string', maxLength: 255 }, description: 'adminName on a derived status change' }),
];

const DERIVATION =
  'When the stock or the threshold changes, the sales status is derived: 0 → SOLD_OUT, 1 … almostSoldOutAt → ALMOST_SOLD_OUT, ' +
  'above → ON_SALE (no threshold: no ALMOST_SOLD_OUT stage); a different status is stored and pushed as goods.salesStatus, as a ' +
  'manual change (after commit; only with notify). A manual status stands until the stock next changes. Errors: 404 -710 ' +
  'unknown campaign, -404 no such goods item, -711 the item is not in the campaign.';

function StockDocs(by: keyof typeof LOCATORS, kind: 'set' | 'delta', summary: string, extra: string): MethodDecorator {
  return applyDecorators(
    ApiOperation({ summary, description: `Every parameter may come in the query string, a form body or a JSON body; the body wins. ${extra} ${DERIVATION}` }),
    CampaignKeyParam,
    ApiConsumes('application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'),
    ApiBody({ type: kind === 'set' ? SetStockBody : StockDeltaBody, required: false, description: 'The same parameters as the query string; the body wins' }),
    LOCATORS[by].query,
    ...(kind === 'set'
      ? [
          ApiQuery({
            name: 'stock',
            required: false,
            schema: { type: 'string', example: '20' },
            description: `Units left (0 … ${MAX_STOCK}); empty or null stops tracking; required, ${EITHER}`,
          }),
          ApiQuery({
            name: 'almostSoldOutAt',
            required: false,
            schema: { type: 'string', example: '5' },
            description: 'Threshold (0 … 1000000000); empty or null: no ALMOST_SOLD_OUT stage; absent: unchanged',
          }),
        ]
      : [
          ApiQuery({
            name: 'quantity',
            required: false,
            schema: { type: 'integer', minimum: 1, maximum: MAX_STOCK, default: 1 },
            description: 'Units (default 1)',
          }),
        ]),
    ...COMMON_QUERY,
    ApiOkResponse({ type: CampaignGoodsResponse, description: 'The campaign item, with its stock and (derived) salesStatus' }),
    ApiErrors(...(kind === 'set' ? [400, 404, 413, 415] : [400, 404, 409, 413, 415])),
  );
}

const SET_TEXT = 'Sets stock (null stops tracking; the status is then left as it is) and, when given, almostSoldOutAt.';
const DECREMENT_TEXT =
  'Takes quantity units (default 1) in one conditional update: never below 0; more than is left, or an untracked stock, is 409 -409 and changes nothing.';
const INCREMENT_TEXT = 'Adds quantity units (default 1: a return or a restock); an untracked stock is 409 -409.';

@ApiTags('Stock')
@TenantRoute()
@ReadsMultipart(NoFilesInterceptor())
@Controller('v1/goods/:accessKey/campaign/:campaignKey/stock')
export class StockController {
  constructor(private readonly stock: StockService) {}

  @Put('id')
  @StockDocs('id', 'set', "Set a campaign item's stock and threshold, the item found by goodsId", SET_TEXT)
  setById(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SetStockParams): Promise<CampaignGoodsResponse> {
    return this.stock.set(tenant, key, 'id', params);
  }

  @Put('url')
  @StockDocs('url', 'set', "Set a campaign item's stock and threshold, the item found by url", SET_TEXT)
  setByUrl(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SetStockParams): Promise<CampaignGoodsResponse> {
    return this.stock.set(tenant, key, 'url', params);
  }

  @Put('sku')
  @StockDocs('sku', 'set', "Set a campaign item's stock and threshold, the item found by sku", SET_TEXT)
  setBySku(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SetStockParams): Promise<CampaignGoodsResponse> {
    return this.stock.set(tenant, key, 'sku', params);
  }

  @Post('id/decrement')
  @HttpCode(200)
  @StockDocs('id', 'delta', "Take units from a campaign item's stock, the item found by goodsId", DECREMENT_TEXT)
  decrementById(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @SalesStatusInput() params: StockDeltaParams,
  ): Promise<CampaignGoodsResponse> {
    return this.stock.decrement(tenant, key, 'id', params);
  }

  @Post('url/decrement')
  @HttpCode(200)
  @StockDocs('url', 'delta', "Take units from a campaign item's stock, the item found by url", DECREMENT_TEXT)
  decrementByUrl(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @SalesStatusInput() params: StockDeltaParams,
  ): Promise<CampaignGoodsResponse> {
    return this.stock.decrement(tenant, key, 'url', params);
  }

  @Post('sku/decrement')
  @HttpCode(200)
  @StockDocs('sku', 'delta', "Take units from a campaign item's stock, the item found by sku", DECREMENT_TEXT)
  decrementBySku(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @SalesStatusInput() params: StockDeltaParams,
  ): Promise<CampaignGoodsResponse> {
    return this.stock.decrement(tenant, key, 'sku', params);
  }

  @Post('id/increment')
  @HttpCode(200)
  @StockDocs('id', 'delta', "Add units to a campaign item's stock, the item found by goodsId", INCREMENT_TEXT)
  incrementById(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @SalesStatusInput() params: StockDeltaParams,
  ): Promise<CampaignGoodsResponse> {
    return this.stock.increment(tenant, key, 'id', params);
  }

  @Post('url/increment')
  @HttpCode(200)
  @StockDocs('url', 'delta', "Add units to a campaign item's stock, the item found by url", INCREMENT_TEXT)
  incrementByUrl(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @SalesStatusInput() params: StockDeltaParams,
  ): Promise<CampaignGoodsResponse> {
    return this.stock.increment(tenant, key, 'url', params);
  }

  @Post('sku/increment')
  @HttpCode(200)
  @StockDocs('sku', 'delta', "Add units to a campaign item's stock, the item found by sku", INCREMENT_TEXT)
  incrementBySku(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @SalesStatusInput() params: StockDeltaParams,
  ): Promise<CampaignGoodsResponse> {
    return this.stock.increment(tenant, key, 'sku', params);
  }
}
