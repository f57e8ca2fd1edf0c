import { Controller, Get, Header, Param, Query, Req } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiParam, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from '../auth/decorators';
import { CampaignListResponse, CampaignResponse, NotExistResponse } from '../campaigns/dto/campaign-response.dto';
import { ApiErrors } from '../http/api-docs.decorators';
import { baseUrlOf } from '../http/base-url';
import { AppConfig } from '../config/app-config';
import { PublicCampaignListQuery, UpcomingQuery } from './dto/public-campaigns.query';
import { PublicCampaignsService } from './public-campaigns.service';

const CACHE = 'public, max-age=5, stale-while-revalidate=30';
const ONE_OR_NOT_EXIST = {
  schema: { oneOf: [{ $ref: getSchemaPath(CampaignResponse) }, { $ref: getSchemaPath(NotExistResponse) }] },
};

/** Public broadcast information: no token; short public caching (userCount and status move). */
@ApiTags('Public campaigns')
@ApiExtraModels(CampaignResponse, NotExistResponse)
@Public()
@Controller('v1/campaigns/:accessKey')
export class PublicCampaignsController {
  constructor(
    private readonly campaigns: PublicCampaignsService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @Header('Cache-Control', CACHE)
  @ApiParam({ name: 'accessKey' })
  @ApiOperation({ summary: 'Collection-visible campaigns ordered by scheduledAt, filtered by status and schedule' })
  @ApiOkResponse({ type: CampaignListResponse })
  @ApiErrors(400)
  list(@Param('accessKey') accessKey: string, @Query() query: PublicCampaignListQuery, @Req() req: Request): Promise<CampaignListResponse> {
    return this.campaigns.list(accessKey, baseUrlOf(req, this.config), query);
  }

  @Get('upcoming')
  @Header('Cache-Control', CACHE)
  @ApiParam({ name: 'accessKey' })
  @ApiOperation({ summary: 'The running campaign (includeOnAir) or the soonest READY one after now; NOT_EXIST when none' })
  @ApiOkResponse(ONE_OR_NOT_EXIST)
  @ApiErrors(400)
  upcoming(@Param('accessKey') accessKey: string, @Query() query: UpcomingQuery, @Req() req: Request): Promise<CampaignResponse | NotExistResponse> {
    return this.campaigns.upcoming(accessKey, baseUrlOf(req, this.config), query);
  }

  @Get(':campaignKey')
  @Header('Cache-Control', CACHE)
  @ApiParam({ name: 'accessKey' })
  @ApiParam({ name: 'campaignKey' })
  @ApiOperation({ summary: 'One campaign in detail form (known keys answer even when private); NOT_EXIST when unknown' })
  @ApiOkResponse(ONE_OR_NOT_EXIST)
  one(@Param('accessKey') accessKey: string, @Param('campaignKey') campaignKey: string, @Req() req: Request): Promise<CampaignResponse | NotExistResponse> {
    return this.campaigns.one(accessKey, campaignKey, baseUrlOf(req, this.config));
  }
}
