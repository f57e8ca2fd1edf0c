import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../common/http/api-docs.decorators';
import { PositiveIntPipe } from '../common/http/positive-int.pipe';
import { DeleteResponse } from '../goods/dto/goods-response.dto';
import { CampaignsService, ChatResult } from './campaigns.service';
import {
  CampaignGoodsRefsDto,
  CampaignStatusDto,
  ChatDto,
  CreateCampaignDto,
  GoodsOrderDto,
  ListCampaignsQuery,
  ShowingDto,
  UpdateCampaignDto,
} from './dto/campaign-requests.dto';
import { CampaignGoodsListResponse, CampaignListResponse, CampaignResponse } from './dto/campaign-response.dto';

const CK = ApiParam({ name: 'campaignKey', example: 'k7Qw2ZbX9mN4pR8s' });

/** The campaigns console (CONTRACT §6), for operators' tools; same Bearer JWT as the goods API. */
@ApiTags('Campaigns console')
@TenantRoute()
@Controller('v1/console/:accessKey/campaigns')
export class ConsoleController {
  constructor(private readonly campaigns: CampaignsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Create a campaign (status READY)' })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(400)
  create(@CurrentTenant() tenant: Tenant, @Body() body: CreateCampaignDto): Promise<CampaignResponse> {
    return this.campaigns.create(tenant, body);
  }

  @Get()
  @ApiOperation({ summary: 'List all campaigns, private ones included (newest first)' })
  @ApiOkResponse({ type: CampaignListResponse })
  @ApiErrors(400)
  list(@CurrentTenant() tenant: Tenant, @Query() query: ListCampaignsQuery): Promise<CampaignListResponse> {
    return this.campaigns.list(tenant, query);
  }

  @Get(':campaignKey')
  @CK
  @ApiOperation({ summary: 'One campaign with its goods' })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(404)
  get(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string): Promise<CampaignResponse> {
    return this.campaigns.get(tenant, key);
  }

  @Patch(':campaignKey')
  @CK
  @ApiOperation({ summary: 'Change fields and detail settings (operatorName, collectionVisible)' })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(400, 404)
  update(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: UpdateCampaignDto): Promise<CampaignResponse> {
    return this.campaigns.update(tenant, key, body);
  }

  @Put(':campaignKey/status')
  @CK
  @ApiOperation({ summary: 'READY → ONAIR (sets startedAt) → CLOSED (sets endedAt); anything else is 422. Viewers are told.' })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(400, 404, 422)
  setStatus(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: CampaignStatusDto): Promise<CampaignResponse> {
    return this.campaigns.setStatus(tenant, key, body);
  }

  @Delete(':campaignKey')
  @CK
  @ApiOperation({ summary: 'Delete a campaign (its viewers are told NOT_EXIST and disconnected)' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(404)
  async remove(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string): Promise<DeleteResponse> {
    await this.campaigns.remove(tenant, key);
    return { _s: 0 };
  }

  @Post(':campaignKey/goods')
  @HttpCode(200)
  @CK
  @ApiOperation({ summary: 'Append goods (goodsIds, skus or urls) in that order, ON_SALE; ones already in are skipped' })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404)
  addGoods(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: CampaignGoodsRefsDto): Promise<CampaignGoodsListResponse> {
    return this.campaigns.addGoods(tenant, key, body);
  }

  @Get(':campaignKey/goods')
  @CK
  @ApiOperation({ summary: 'The campaign goods in sortOrder (CampaignGoods objects)' })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(404)
  listGoods(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string): Promise<CampaignGoodsListResponse> {
    return this.campaigns.listGoods(tenant, key);
  }

  @Put(':campaignKey/goods/order')
  @CK
  @ApiOperation({ summary: 'Reorder: listed ids first in that order, the others after in their old order' })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404)
  reorder(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: GoodsOrderDto): Promise<CampaignGoodsListResponse> {
    return this.campaigns.reorder(tenant, key, body);
  }

  @Put(':campaignKey/goods/:goodsId/showing')
  @CK
  @ApiParam({ name: 'goodsId', type: Number })
  @ApiOperation({ summary: 'Mark the item showing now (at most one at a time) or not' })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404)
  setShowing(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @Body() body: ShowingDto,
  ): Promise<CampaignGoodsListResponse> {
    return this.campaigns.setShowing(tenant, key, goodsId, body.showingNow);
  }

  @Delete(':campaignKey/goods/:goodsId')
  @CK
  @ApiParam({ name: 'goodsId', type: Number })
  @ApiOperation({ summary: 'Remove an item from the campaign (the goods item itself stays)' })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404)
  removeGoods(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @Param('goodsId', PositiveIntPipe) goodsId: number,
  ): Promise<CampaignGoodsListResponse> {
    return this.campaigns.removeGoods(tenant, key, goodsId);
  }

  @Post(':campaignKey/chat')
  @HttpCode(200)
  @CK
  @ApiOperation({ summary: 'Post an operator chat line, or pin (pinned=true) the notice; an empty pinned message unpins' })
  @ApiOkResponse({ description: '{notice, _s} for a pinned message, {chat, _s} for a chat line' })
  @ApiErrors(400, 404)
  chat(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: ChatDto): Promise<ChatResult> {
    return this.campaigns.chat(tenant, key, body);
  }
}
