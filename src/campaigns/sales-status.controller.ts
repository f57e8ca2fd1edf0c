import { Controller, createParamDecorator, ExecutionContext, Param, Put } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../common/http/api-docs.decorators';
import { CampaignGoodsResponse } from './dto/campaign-response.dto';
import { SalesStatusParams } from './dto/campaign-requests.dto';
import { SalesStatusService } from './sales-status.service';

/** The parameters from the query string, overlaid with a form or JSON body (the body wins). */
const SalesStatusInput = createParamDecorator((_: unknown, ctx: ExecutionContext): Record<string, unknown> => {
  const req = ctx.switchToHttp().getRequest<Request>();
  const body = req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
  return { ...(req.query as Record<string, unknown>), ...body };
});

const COMMON = [
  ApiParam({ name: 'campaignKey', example: 'k7Qw2ZbX9mN4pR8s' }),
  ApiConsumes('application/x-www-form-urlencoded', 'application/json'),
  ApiBody({ type: SalesStatusParams, required: false, description: 'The same parameters may come as query string, form fields or JSON' }),
  ApiQuery({ name: 'salesStatus', enum: ['ON_SALE', 'ALMOST_SOLD_OUT', 'SOLD_OUT'], required: false }),
  ApiQuery({ name: 'notify', type: Boolean, required: false, description: 'default true' }),
  ApiQuery({ name: 'name', required: false }),
  ApiQuery({ name: 'adminChatNotice', required: false }),
  ApiQuery({ name: 'chatMessage', required: false }),
  ApiOkResponse({ type: CampaignGoodsResponse }),
  ApiErrors(400, 404),
];

function Common(): MethodDecorator {
  return (target, key, descriptor) => {
    for (const d of COMMON) (d as MethodDecorator)(target, key, descriptor);
  };
}

@ApiTags('Sales status')
@TenantRoute()
@Controller('v1/goods/:accessKey/campaign/:campaignKey/salesStatus')
export class SalesStatusController {
  constructor(private readonly salesStatus: SalesStatusService) {}

  @Put('id')
  @Common()
  @ApiQuery({ name: 'goodsId', type: Number, required: true })
  @ApiOperation({ summary: "Set a campaign item's sales status, the item found by goodsId (404 -710 unknown campaign, -711 not in it)" })
  byId(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'id', params);
  }

  @Put('url')
  @Common()
  @ApiQuery({ name: 'url', required: true })
  @ApiOperation({ summary: "Set a campaign item's sales status, the item found by url" })
  byUrl(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'url', params);
  }

  @Put('sku')
  @Common()
  @ApiQuery({ name: 'sku', required: true })
  @ApiOperation({ summary: "Set a campaign item's sales status, the item found by sku" })
  bySku(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @SalesStatusInput() params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    return this.salesStatus.update(tenant, key, 'sku', params);
  }
}
