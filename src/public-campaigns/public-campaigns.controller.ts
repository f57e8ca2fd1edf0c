import { Controller, Get, Header, Param, Query, Req, Res, StreamableFile } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { dateInputSchemas } from '../common/validation/decorators';
import type { Request, Response } from 'express';
import { Public } from '../auth/decorators';
import { CAMPAIGN_OR_NOT_EXIST, CampaignListResponse, CampaignResponse, NoticeResponse, NotExistResponse } from '../campaigns/dto/campaign-response.dto';
import { AccessKeyParam, ApiErrors, PublicRoute } from '../http/api-docs.decorators';
import { baseUrlOf } from '../http/base-url';
import { clientIp } from '../rate-limit/rate-limiter';
import { jsonChunksAnswer } from '../http/sliced-json';
import { AppConfig } from '../config/app-config';
import { PublicCampaignListQuery, UpcomingQuery } from './dto/public-campaigns.query';
import { CachedAnswer, PUBLIC_CACHE_CONTROL, PUBLIC_MAX_AGE_SECONDS } from './public-answer-cache';
import { PublicCampaignsService } from './public-campaigns.service';

const CACHE = PUBLIC_CACHE_CONTROL;
const JSON_TYPE = 'application/json; charset=utf-8';
const CACHE_HEADER = {
  'Cache-Control': {
    description: `Public caching for ${PUBLIC_MAX_AGE_SECONDS} seconds; the service itself answers from its own copy for as long (dropped sooner when the campaign changes)`,
    schema: { type: 'string', example: CACHE },
  },
};

/** Answers up to this size are sent as one string; larger ones as a stream of their kept chunks. */
const INLINE_MAX_BYTES = 64 * 1024;

/**
 * Sends a kept answer as it is, with its ETag (computed once, not per request): a small one as its JSON
 * text; a large one (a list with goods: up to 16 MB) as its chunks, never joined nor encoded again, nor
 * written in one go. A conditional GET or HEAD whose copy is current gets its 304 either way.
 */
function send(res: Response, answer: CachedAnswer): string | StreamableFile {
  if (answer.length > INLINE_MAX_BYTES) return jsonChunksAnswer(res, answer);
  res.setHeader('ETag', answer.etag);
  return answer.json;
}
const ONE_OR_NOT_EXIST = {
  schema: CAMPAIGN_OR_NOT_EXIST,
  headers: CACHE_HEADER,
  description: 'The campaign in detail form, or `{"campaignStatus": "NOT_EXIST"}` (told apart by campaignStatus)',
};

/** Public broadcast information: no token; short public caching (userCount and status move). */
@ApiTags('Public campaigns')
@ApiExtraModels(CampaignResponse, NotExistResponse, NoticeResponse)
@Public()
@PublicRoute(429, 503)
@AccessKeyParam
@Controller('v1/campaigns/:accessKey')
export class PublicCampaignsController {
  constructor(
    private readonly campaigns: PublicCampaignsService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @Header('Cache-Control', CACHE)
  @Header('Content-Type', JSON_TYPE)
  @ApiOperation({
    summary: 'Collection-visible campaigns ordered by scheduledAt, filtered by status and schedule',
    description:
      'Only campaigns listed publicly (collectionVisible). Ordered by scheduledAt, soonest first; campaigns without a schedule ' +
      'last. from/to keep campaigns scheduled at or after / at or before the instant. detail=true adds description and goods. ' +
      'An unknown access key reads like a customer without campaigns.',
  })
  @ApiQuery({
    name: 'status',
    required: false,
    description: 'Comma-separated statuses to list, in any letter case (default: all three); given twice (status=READY&status=ONAIR) it is 400 -510',
    style: 'form',
    explode: false,
    schema: { type: 'array', items: { type: 'string', enum: ['READY', 'ONAIR', 'CLOSED'] }, minItems: 1, example: ['READY', 'ONAIR'] },
  })
  // A Date-typed query property would be documented as a date-time string; these say what is accepted.
  @ApiQuery({
    name: 'from',
    required: false,
    description: 'Campaigns scheduled at or after this instant (epoch ms or ISO-8601; no offset = UTC; an empty value is not given)',
    schema: { oneOf: dateInputSchemas(false, { emptyIsAbsent: true }), example: '2026-03-01' },
  })
  @ApiQuery({
    name: 'to',
    required: false,
    description: 'Campaigns scheduled at or before this instant (epoch ms or ISO-8601; no offset = UTC; an empty value is not given)',
    schema: { oneOf: dateInputSchemas(false, { emptyIsAbsent: true }), example: 1898593200000 },
  })
  @ApiOkResponse({ type: CampaignListResponse, headers: CACHE_HEADER })
  @ApiErrors(400)
  async list(
    @Param('accessKey') accessKey: string,
    @Query() query: PublicCampaignListQuery,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | StreamableFile> {
    return send(res, await this.campaigns.answerList(accessKey, baseUrlOf(req, this.config), query, clientIp(req)));
  }

  @Get('upcoming')
  @Header('Cache-Control', CACHE)
  @Header('Content-Type', JSON_TYPE)
  @ApiOperation({
    summary: 'The running campaign (includeOnAir) or the soonest READY one after now; NOT_EXIST when none',
    description:
      'Answers, in detail form, the campaign on air (with includeOnAir, the most recently started), else the READY campaign ' +
      'scheduled soonest after now; only publicly listed campaigns. None: `{"campaignStatus": "NOT_EXIST"}`.',
  })
  @ApiOkResponse(ONE_OR_NOT_EXIST)
  @ApiErrors(400)
  async upcoming(
    @Param('accessKey') accessKey: string,
    @Query() query: UpcomingQuery,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | StreamableFile> {
    return send(res, await this.campaigns.answerUpcoming(accessKey, baseUrlOf(req, this.config), query, clientIp(req)));
  }

  @Get(':campaignKey')
  @Header('Cache-Control', CACHE)
  @Header('Content-Type', JSON_TYPE)
  @ApiParam({ name: 'campaignKey', description: 'The campaign key (matched exactly)', schema: { type: 'string', example: 'k7Qw2ZbX9mN4pR8s' } })
  @ApiOperation({
    summary: 'One campaign in detail form (known keys answer even when private); NOT_EXIST when unknown',
    description:
      'Answers the campaign with description and goods for any known key, listed publicly or not; an unknown key, or one of ' +
      'another customer, answers `{"campaignKey": <key>, "campaignStatus": "NOT_EXIST"}` with HTTP 200.',
  })
  @ApiOkResponse(ONE_OR_NOT_EXIST)
  async one(
    @Param('accessKey') accessKey: string,
    @Param('campaignKey') campaignKey: string,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | StreamableFile> {
    return send(res, await this.campaigns.answerOne(accessKey, campaignKey, baseUrlOf(req, this.config), clientIp(req)));
  }
}
