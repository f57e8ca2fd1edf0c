import { Controller, createParamDecorator, ExecutionContext, Param, Put, UseInterceptors } from '@nestjs/common';
import { NoFilesInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { CampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { SalesStatusParams } from './dto/campaign-goods-requests.dto';
import { SALES_STATUSES } from '../campaigns/entities/campaign-goods.entity';
import { SalesStatusService } from './sales-status.service';

/**
 * The parameters from the query string, overlaid with a form (urlencoded or multipart) or JSON body (the
 * body wins). A parameter given twice is refused in plain words rather than read as a list.
 */
const SalesStatusInput = createParamDecorator((_: unknown, ctx: ExecutionContext): Record<string, unknown> => {
  const req = ctx.switchToHttp().getRequest<Request>();
  const body = req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
  const params = { ...(req.query as Record<string, unknown>), ...body };
  for (const [name, value] of Object.entries(params)) {
    if (Array.isArray(value)) {
      throw ApiException.invalid(`${name} was given ${value.length} times; give it once`, [{ field: name, message: 'must be given once' }]);
    }
  }
  return params;
});

/** The Swagger description every sales-status route shares: its parameters, body types and answers. */
const SALES_STATUS_DOCS = [
  ApiParam({ name: 'campaignKey', example: 'k7Qw2ZbX9mN4pR8s' }),
  ApiConsumes('application/x-www-form-urlencoded', 'multipart/form-data', 'application/json'),
  ApiBody({ type: SalesStatusParams, required: false, description: 'The same parameters may come as query string, form fields or JSON' }),
  ApiQuery({ name: 'salesStatus', enum: SALES_STATUSES, required: false }),
  ApiQuery({ name: 'notify', type: Boolean, required: false, description: 'default true' }),
  ApiQuery({ name: 'name', required: false }),
  ApiQuery({ name: 'adminChatNotice', required: false }),
  ApiQuery({ name: 'chatMessage', required: false }),
  ApiOkResponse({ type: CampaignGoodsResponse }),
  ApiErrors(400, 404),
];

function SalesStatusDocs(): MethodDecorator {
  return (target, key, descriptor) => {
    for (const d of SALES_STATUS_DOCS) (d)(target, key, descriptor);
  };
}

@ApiTags('Sales status')
@TenantRoute()
// Form fields may come as multipart/form-data too (as some form handlers post them); files are refused.
@UseInterceptors(NoFilesInterceptor())
@Controller('v1/goods/:accessKey/campaign/:campaignKey/salesStatus')
export class SalesStatusController {
  constructor(private readonly salesStatus: SalesStatusService) {}

  @Put('id')
  @SalesStatusDocs()
  @ApiQuery({ name: 'goodsId', type: Number, required: true })
  @ApiOperation({ summary: "Set a campaign item's sales status, the item found by goodsId (404 -710 unknown campaign, -711 not in it)" })
  byId(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'id', params);
  }

  @Put('url')
  @SalesStatusDocs()
  @ApiQuery({ name: 'url', required: true })
  @ApiOperation({ summary: "Set a campaign item's sales status, the item found by url" })
  byUrl(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'url', params);
  }

  @Put('sku')
  @SalesStatusDocs()
  @ApiQuery({ name: 'sku', required: true })
  @ApiOperation({ summary: "Set a campaign item's sales status, the item found by sku" })
  bySku(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'sku', params);
  }
}
