import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Res, StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { CampaignKeyParam } from '../campaigns/console.controller';
import { CampaignGoodsListResponse } from '../campaigns/dto/campaign-response.dto';
import { ApiErrors, IdPathParam, TenantRoute } from '../http/api-docs.decorators';
import { IdParam } from '../http/id-param';
import { jsonChunksAnswer } from '../http/sliced-json';
import { CampaignGoodsService } from './campaign-goods.service';
import { CampaignGoodsRefsDto, GoodsOrderDto, ShowingDto } from './dto/campaign-goods-requests.dto';

/** A CampaignGoodsListResponse as jsonChunksAnswer sends it. */
type Answer = Promise<StreamableFile | string>;

/**
 * The goods of a campaign in the console: add, list, reorder, the item showing now, remove. Each answers
 * the campaign's goods whole (descriptions included: up to about 30 MB at the caps), written in time
 * slices as they are read and sent a chunk at a time (jsonChunksAnswer).
 */
@ApiTags('Campaign goods')
@TenantRoute()
@CampaignKeyParam
@Controller('v1/console/:accessKey/campaigns/:campaignKey/goods')
export class CampaignGoodsController {
  constructor(private readonly campaignGoods: CampaignGoodsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Append goods (goodsIds, skus or urls) in that order, ON_SALE; ones already in are skipped',
    description:
      'Exactly one of goodsIds, skus or urls, 1 to 1,000 entries. Unknown goods are 404 -404 naming them, and nothing is added. ' +
      'A campaign holds at most CAMPAIGN_MAX_GOODS goods (1,000 by default): an add that would take it past that is 413 -413 naming the limit, ' +
      'and nothing is added. Answers the campaign goods in sortOrder; viewers get the new list.',
  })
  // One example per way of naming the goods: each property's own example together made a body naming them
  // three ways, which "Try it out" sent and the service refused (exactly one of them).
  @ApiBody({
    type: CampaignGoodsRefsDto,
    examples: {
      goodsIds: { summary: 'By goods ids', value: { goodsIds: [1024, 1025] } },
      skus: { summary: 'By goods codes (sku)', value: { skus: ['SW-7'] } },
      urls: { summary: 'By goods URLs', value: { urls: ['https://shop.example.com/goods/SW-7'] } },
    },
  })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404, 413, 415)
  async addGoods(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @Body() body: CampaignGoodsRefsDto,
    @Res({ passthrough: true }) res: Response,
  ): Answer {
    return jsonChunksAnswer(res, await this.campaignGoods.add(tenant, key, body));
  }

  @Get()
  @ApiOperation({
    summary: 'The campaign goods in sortOrder (CampaignGoods objects)',
    description: 'Every goods item of the campaign with its sales status, in sortOrder; 404 -710 when the campaign is unknown.',
  })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(404)
  async listGoods(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Res({ passthrough: true }) res: Response): Answer {
    return jsonChunksAnswer(res, await this.campaignGoods.list(tenant, key));
  }

  @Put('order')
  @ApiOperation({
    summary: 'Reorder: listed ids first in that order, the others after in their old order',
    description:
      '1 to 10,000 ids (the most CAMPAIGN_MAX_GOODS may allow a campaign; a campaign never holds more than CAMPAIGN_MAX_GOODS, 1,000 by default); ' +
      'an id that is not in the campaign is 404 -711. Viewers get the new order.',
  })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404, 413, 415)
  async reorder(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @Body() body: GoodsOrderDto,
    @Res({ passthrough: true }) res: Response,
  ): Answer {
    return jsonChunksAnswer(res, await this.campaignGoods.reorder(tenant, key, body));
  }

  @Put(':goodsId/showing')
  @IdPathParam('goodsId', 'Id of a goods item in the campaign')
  @ApiOperation({
    summary: 'Mark the item showing now (at most one at a time) or not',
    description: 'showingNow true on one item clears it on the others; an item not in the campaign is 404 -711. Viewers are told.',
  })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404, 413, 415)
  async setShowing(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @IdParam('goodsId') goodsId: number,
    @Body() body: ShowingDto,
    @Res({ passthrough: true }) res: Response,
  ): Answer {
    return jsonChunksAnswer(res, await this.campaignGoods.setShowing(tenant, key, goodsId, body.showingNow));
  }

  @Delete(':goodsId')
  @IdPathParam('goodsId', 'Id of a goods item in the campaign')
  @ApiOperation({
    summary: 'Remove an item from the campaign (the goods item itself stays)',
    description: 'An item not in the campaign is 404 -711. Answers the remaining campaign goods; viewers get the new list.',
  })
  @ApiOkResponse({ type: CampaignGoodsListResponse })
  @ApiErrors(400, 404)
  async removeGoods(
    @CurrentTenant() tenant: Tenant,
    @Param('campaignKey') key: string,
    @IdParam('goodsId') goodsId: number,
    @Res({ passthrough: true }) res: Response,
  ): Answer {
    return jsonChunksAnswer(res, await this.campaignGoods.remove(tenant, key, goodsId));
  }
}
