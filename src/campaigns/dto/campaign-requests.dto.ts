import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsDefined, IsIn, ValidateIf } from 'class-validator';
import {
  BooleanField,
  booleanText,
  DateField,
  HttpUrlField,
  IntQuery,
  OptionalField,
  SafeLinkText,
  TextField,
  TextRules,
} from '../../common/validation/decorators';
import { CAMPAIGN_STATUSES, CampaignStatus } from '../entities/campaign.entity';

class CampaignFields {
  @ApiPropertyOptional({ nullable: true, type: String, maxLength: 10000, example: 'New arrivals and this week only deals, live' })
  @ValidateIf((o: CampaignFields) => o.description !== undefined && o.description !== null)
  @TextRules('description', 10_000)
  description?: string | null;

  @DateField('scheduledAt', { nullable: true }, { example: 1898593200000 })
  scheduledAt?: Date | null;

  @DateField('scheduledEndAt', { nullable: true }, { example: 1898600400000, description: 'epoch ms or ISO-8601 (no offset = UTC); not before scheduledAt' })
  scheduledEndAt?: Date | null;

  @HttpUrlField('posterUrl', 2048, { nullable: true }, { example: 'https://cdn.example.com/poster.jpg' })
  posterUrl?: string | null;

  @ApiPropertyOptional({
    nullable: true,
    type: String,
    maxLength: 2048,
    example: 'https://live.example.com/streams/friday-night',
    description: 'Free text: the stream URL or id (not a javascript:, vbscript:, data:, file: or blob: link)',
  })
  @ValidateIf((o: CampaignFields) => o.liveUrl !== undefined && o.liveUrl !== null)
  @SafeLinkText('liveUrl')
  @TextRules('liveUrl', 2048)
  liveUrl?: string | null;

  // Trimmed; blank or null clears it, as a goods item's brand.
  @TextField('operatorName', 255, { nullable: true }, { example: 'Mina', description: 'Default name on operator messages and status changes; null clears it' })
  operatorName?: string | null;

  // Not nullable: null leaves it as it is (or false on create), never stored into the NOT NULL column.
  @BooleanField('collectionVisible', {}, { default: false, description: 'Listed publicly (collection-view visibility)' })
  collectionVisible?: boolean;

  @BooleanField('showStock', {}, { default: false, description: "Viewers see each item's remaining stock (goods summaries and goods.stock events)" })
  showStock?: boolean;
}

export class CreateCampaignDto extends CampaignFields {
  @TextField('title', 255, { required: true }, { example: 'Friday night deals' })
  title: string;
}

export class UpdateCampaignDto extends CampaignFields {
  @TextField('title', 255, {}, { example: 'Friday night deals' })
  title?: string;
}

export class CampaignStatusDto {
  @ApiProperty({ enum: ['ONAIR', 'CLOSED'], example: 'ONAIR' })
  @IsDefined({ message: 'campaignStatus is required' })
  @IsIn(CAMPAIGN_STATUSES, { message: 'campaignStatus must be READY, ONAIR or CLOSED' })
  campaignStatus: CampaignStatus;
}

export class ListCampaignsQuery {
  @IntQuery('page', 1, 1_000_000, { default: 1, description: 'Page number, from 1' })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 30, description: 'Items per page' }, { clamp: true })
  count: number = 30;
}

export class ChatDto {
  @ApiProperty({ example: 'Only 10 left!', description: 'With pinned=true, an empty message unpins the notice' })
  @IsDefined({ message: 'message is required' })
  @TextRules('message', 2000)
  message: string;

  @ApiPropertyOptional({ default: false, description: 'Pin as the notice instead of a chat line' })
  @booleanText
  @OptionalField()
  @IsBoolean()
  pinned?: boolean;

  @ApiPropertyOptional({ example: 'Mina', description: "Operator name; default: the campaign's operatorName, then the token's name claim" })
  @OptionalField()
  @TextRules('name', 255)
  name?: string;
}
