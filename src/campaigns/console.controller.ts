import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiParam, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { ApiErrors, TenantRoute } from '../http/api-docs.decorators';
import { DeleteResponse } from '../goods/dto/goods-response.dto';
import { CampaignsService, ChatResult } from './campaigns.service';
import { CampaignStatusDto, ChatDto, CreateCampaignDto, ListCampaignsQuery, UpdateCampaignDto } from './dto/campaign-requests.dto';
import { CampaignListResponse, CampaignResponse, ChatPostedResponse, NoticePinnedResponse, NoticeResponse } from './dto/campaign-response.dto';

/** The path parameter of every route about one campaign. */
export const CampaignKeyParam = ApiParam({
  name: 'campaignKey',
  description: 'The campaign key (16 letters and digits, matched exactly)',
  schema: { type: 'string', example: 'k7Qw2ZbX9mN4pR8s' },
});

/**
 * The campaigns console, for operators' tools (same Bearer JWT as the goods API): campaigns, their
 * status, operator messages. The goods of a campaign have their own controller (CampaignGoodsController).
 */
@ApiTags('Campaigns console')
@ApiExtraModels(NoticeResponse, ChatPostedResponse, NoticePinnedResponse)
@TenantRoute()
@Controller('v1/console/:accessKey/campaigns')
export class ConsoleController {
  constructor(private readonly campaigns: CampaignsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create a campaign (status READY)',
    description: 'title is required; the other fields are optional (collectionVisible false unless given). Answers the new campaign record with description.',
  })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(400, 413, 415)
  create(@CurrentTenant() tenant: Tenant, @Body() body: CreateCampaignDto): Promise<CampaignResponse> {
    return this.campaigns.create(tenant, body);
  }

  @Get()
  @ApiOperation({
    summary: 'List all campaigns, private ones included (newest first)',
    description: 'A page of campaign records with description, without goods, newest first; totalCount counts all of them.',
  })
  @ApiOkResponse({ type: CampaignListResponse })
  @ApiErrors(400)
  list(@CurrentTenant() tenant: Tenant, @Query() query: ListCampaignsQuery): Promise<CampaignListResponse> {
    return this.campaigns.list(tenant, query);
  }

  @Get(':campaignKey')
  @CampaignKeyParam
  @ApiOperation({
    summary: 'One campaign with its goods',
    description: 'The campaign record in detail form (description and goods summaries in sortOrder); 404 -710 when unknown.',
  })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(404)
  get(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string): Promise<CampaignResponse> {
    return this.campaigns.get(tenant, key);
  }

  @Patch(':campaignKey')
  @CampaignKeyParam
  @ApiOperation({
    summary: 'Change fields and detail settings (operatorName, collectionVisible)',
    description:
      'Partial: an absent field keeps its value, null clears a nullable one. scheduledEndAt may not be before scheduledAt. When a value changed, viewers get campaign.update with the whole record; a PATCH that changes nothing writes nothing (updatedAt stays) and tells nobody.',
  })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(400, 404, 413, 415)
  update(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: UpdateCampaignDto): Promise<CampaignResponse> {
    return this.campaigns.update(tenant, key, body);
  }

  @Put(':campaignKey/status')
  @CampaignKeyParam
  @ApiOperation({
    summary: 'READY → ONAIR (sets startedAt) → CLOSED (sets endedAt); anything else is 422. Viewers are told.',
    description:
      'Moves the campaign status one step; READY → CLOSED, going back and the same status again are 422 -422, a value other than READY, ONAIR or CLOSED is 400.',
  })
  @ApiOkResponse({ type: CampaignResponse })
  @ApiErrors(400, 404, 413, 415, 422)
  setStatus(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: CampaignStatusDto): Promise<CampaignResponse> {
    return this.campaigns.setStatus(tenant, key, body);
  }

  @Delete(':campaignKey')
  @CampaignKeyParam
  @ApiOperation({
    summary: 'Delete a campaign (its viewers are told NOT_EXIST and disconnected)',
    description: 'Deletes the campaign, its goods list, chat and event log; 404 -710 when unknown.',
  })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(404)
  async remove(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string): Promise<DeleteResponse> {
    await this.campaigns.remove(tenant, key);
    return { _s: 0 };
  }

  @Post(':campaignKey/chat')
  @HttpCode(200)
  @CampaignKeyParam
  @ApiOperation({
    summary: 'Post an operator chat line, or pin (pinned=true) the notice; an empty pinned message unpins',
    description:
      'The message is trimmed; a chat line may not be blank. The operator name is name, else the campaign operatorName, else the token name claim. Viewers get the line or notice at once.',
  })
  @ApiOkResponse({
    description: '`{chat, _s}` for a chat line, `{notice, _s}` for a pinned message (notice null when unpinned)',
    schema: { oneOf: [{ $ref: getSchemaPath(ChatPostedResponse) }, { $ref: getSchemaPath(NoticePinnedResponse) }] },
  })
  @ApiErrors(400, 404, 413, 415)
  chat(@CurrentTenant() tenant: Tenant, @Param('campaignKey') key: string, @Body() body: ChatDto): Promise<ChatResult> {
    return this.campaigns.chat(tenant, key, body);
  }
}
