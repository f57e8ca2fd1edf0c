import { applyDecorators, Controller, createParamDecorator, ExecutionContext, Param, Put } from '@nestjs/common';
import { NoFilesInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { bodyListRefusal, listRefusal } from '../common/validation/api-validation.pipe';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { ReadsMultipart } from '../http/body-parser.guard';
import { CampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { SalesStatusParams } from './dto/campaign-goods-requests.dto';
import { CampaignKeyParam } from '../campaigns/console.controller';
import { SALES_STATUSES } from '../campaigns/entities/campaign-goods.entity';
import { SalesStatusService } from './sales-status.service';

/**
 * The parameters from the query string, overlaid with a form (urlencoded or multipart) or JSON body (the
 * body wins). A parameter given twice is refused in plain words rather than read as a list.
 */
export const SalesStatusInput = createParamDecorator((_: unknown, ctx: ExecutionContext): Record<string, unknown> => {
  const req = ctx.switchToHttp().getRequest<Request>();
  // A list where the route takes one object: refused as every other such route refuses it (not ignored,
  // with the query string read alone).
  if (Array.isArray(req.body)) throw bodyListRefusal();
  const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
  const params = { ...(req.query as Record<string, unknown>), ...body };
  // A JSON array is a list sent where one value belongs; in a query string or form it is a repeat.
  const json = typeof req.is('json') === 'string' && body === req.body;
  for (const [name, value] of Object.entries(params)) {
    if (Array.isArray(value)) throw listRefusal(name, value, json && Object.hasOwn(body, name));
  }
  return params;
});

const EITHER = 'In the query string or the body (the body wins)';
const STATUS_TEXT = `${SALES_STATUSES.join(', ')}; required, ${EITHER.toLowerCase()}; any status may follow any status`;

/** The body of the sales-status operations (documentation only: SalesStatusInput reads it). Nothing is required in the body alone. */
class SalesStatusFields {
  @ApiPropertyOptional({ enum: SALES_STATUSES, example: 'SOLD_OUT', description: STATUS_TEXT }) salesStatus?: string;
  @ApiPropertyOptional({ type: Boolean, example: true, description: 'Push the change to viewers now (default true); also 1/0, yes/no, on/off' })
  notify?: boolean;
  @ApiPropertyOptional({ maxLength: 255, example: 'Mina', description: 'Operator name for adminName and the messages' }) name?: string;
  @ApiPropertyOptional({ maxLength: 2000, example: 'Only a few left!', description: 'Pins this notice (trimmed; blank means none)' }) adminChatNotice?: string;
  @ApiPropertyOptional({ maxLength: 2000, example: 'Sold out, thank you!', description: 'Posts this chat line (trimmed; blank means none)' })
  chatMessage?: string;
}
class SalesStatusByIdBody extends SalesStatusFields {
  @ApiPropertyOptional({ type: 'integer', format: 'int64', minimum: 1, example: 1024, description: `The item's id; required, ${EITHER.toLowerCase()}` })
  goodsId?: number;
}
class SalesStatusByUrlBody extends SalesStatusFields {
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 2048,
    example: 'https://shop.example.com/goods/SW-7',
    description: `The item's url; required, ${EITHER.toLowerCase()}`,
  })
  url?: string;
}
class SalesStatusBySkuBody extends SalesStatusFields {
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, example: 'SW-7', description: `The item's sku; required, ${EITHER.toLowerCase()}` }) sku?: string;
}

export const LOCATORS = {
  id: {
    body: SalesStatusByIdBody,
    query: ApiQuery({
      name: 'goodsId',
      required: false,
      description: `The item's id; required, ${EITHER.toLowerCase()}`,
      schema: { type: 'integer', format: 'int64', minimum: 1, example: 1024 },
    }),
  },
  url: {
    body: SalesStatusByUrlBody,
    query: ApiQuery({
      name: 'url',
      required: false,
      description: `The item's url; required, ${EITHER.toLowerCase()}`,
      schema: { type: 'string', minLength: 1, maxLength: 2048, example: 'https://shop.example.com/goods/SW-7' },
    }),
  },
  sku: {
    body: SalesStatusBySkuBody,
    query: ApiQuery({
      name: 'sku',
      required: false,
      description: `The item's sku; required, ${EITHER.toLowerCase()}`,
      schema: { type: 'string', minLength: 1, maxLength: 128, example: 'SW-7' },
    }),
  },
};

/** The Swagger description of a sales-status route: its parameters (query or body), body types and answers. */
function SalesStatusDocs(by: keyof typeof LOCATORS, summary: string): MethodDecorator {
  return applyDecorators(
    ApiOperation({
      summary,
      description:
        'Every parameter may come in the query string, a form body (urlencoded or multipart without files) or a JSON body; the ' +
        'body wins, and a parameter given twice is 400. salesStatus and the locator are required in one of them. The status, ' +
        'the notice and the chat line are stored in one transaction and pushed to viewers after it (the status change only ' +
        'with notify). Errors: 404 -710 unknown campaign, -404 no such goods item, -711 the item is not in the campaign.',
    }),
    CampaignKeyParam,
    ApiConsumes('application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'),
    ApiBody({ type: LOCATORS[by].body, required: false, description: 'The same parameters as the query string; the body wins' }),
    LOCATORS[by].query,
    ApiQuery({ name: 'salesStatus', required: false, enum: SALES_STATUSES, description: STATUS_TEXT }),
    ApiQuery({
      name: 'notify',
      required: false,
      schema: { type: 'boolean', default: true },
      description: 'Push the change to viewers now (default true); also 1/0, yes/no, on/off',
    }),
    ApiQuery({
      name: 'name',
      required: false,
      schema: { type: 'string', maxLength: 255, example: 'Mina' },
      description: 'Operator name for adminName and the messages',
    }),
    ApiQuery({
      name: 'adminChatNotice',
      required: false,
      schema: { type: 'string', maxLength: 2000, example: 'Only a few left!' },
      description: 'Pins this notice (trimmed; blank means none)',
    }),
    ApiQuery({
      name: 'chatMessage',
      required: false,
      schema: { type: 'string', maxLength: 2000, example: 'Sold out, thank you!' },
      description: 'Posts this chat line (trimmed; blank means none)',
    }),
    ApiOkResponse({ type: CampaignGoodsResponse }),
    ApiErrors(400, 404, 413, 415),
  );
}

@ApiTags('Sales status')
@TenantRoute()
// Form fields may come as multipart/form-data too (as some form handlers post them); files are refused.
@ReadsMultipart(NoFilesInterceptor())
@Controller('v1/goods/:accessKey/campaign/:campaignKey/salesStatus')
export class SalesStatusController {
  constructor(private readonly salesStatus: SalesStatusService) {}

  @Put('id')
  @SalesStatusDocs('id', "Set a campaign item's sales status, the item found by goodsId")
  byId(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'id', params);
  }

  @Put('url')
  @SalesStatusDocs('url', "Set a campaign item's sales status, the item found by url")
  byUrl(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'url', params);
  }

  @Put('sku')
  @SalesStatusDocs('sku', "Set a campaign item's sales status, the item found by sku")
  bySku(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'sku', params);
  }
}
