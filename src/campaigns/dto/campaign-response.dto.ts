import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { nullableRef } from '../../http/api-docs.decorators';
import type { Goods } from '../../goods/entities/goods.entity';
import { mediaFileUrl, ThumbnailResponse, toMediaResponse } from '../../media/dto/media-response.dto';
import type { Media } from '../../media/entities/media.entity';
import type { CampaignChat } from '../entities/campaign-chat.entity';
import type { Campaign, CampaignStatus } from '../entities/campaign.entity';
import { SALES_STATUSES } from '../entities/campaign-goods.entity';
import type { CampaignGoods, SalesStatus } from '../entities/campaign-goods.entity';

const ms = (d: Date | null | undefined): number | null => (d ? d.getTime() : null);

// ---------------------------------------------------------------------------------------------
// CampaignGoods as the API answers it (docs/api-reference.md; the response of the sales-status operations).

export class CampaignGoodsMediaResponse {
  @ApiProperty({ example: '77' }) id: string;
  @ApiProperty({ example: '3' }) customerId: string;
  @ApiProperty({ example: 'IMAGE' }) mediaType: string;
  @ApiProperty({ nullable: true, type: String, example: null }) name: string | null;
  @ApiProperty({ nullable: true, type: String, example: null }) description: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'https://cdn.example.com/sw7.jpg' }) originalUrl: string | null;
  @ApiProperty({ example: 'https://live.example.com/media/3f/3fa4….jpg' }) url: string;
  @ApiProperty({ nullable: true, type: String, example: '3fa4…' }) checksum: string | null;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1200 }) width: number;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1200 }) height: number;
  @ApiProperty({ example: '183422', description: 'bytes, as text' }) size: string;
  @ApiProperty({ example: '77' }) historyId: string;
  @ApiProperty({ type: [ThumbnailResponse], nullable: true }) thumbnails: ThumbnailResponse[] | null;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) createdAt: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) updatedAt: number;
}

export class CampaignGoodsItemResponse {
  @ApiProperty({ example: '1024' }) id: string;
  @ApiProperty({ example: '3' }) customerId: string;
  @ApiProperty({ example: '스마트 워치 7' }) name: string;
  @ApiProperty({ nullable: true, type: String, example: 'Sampletech' }) brand: string | null;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ example: 'https://shop.example.com/goods/SW-7' }) url: string;
  @ApiProperty({ example: 'SW-7' }) sku: string;
  @ApiProperty({ type: [CampaignGoodsMediaResponse] }) medias: CampaignGoodsMediaResponse[];
  @ApiProperty({ type: Number, example: 399000, description: '0 when the item has no price' }) originalPrice: number;
  @ApiProperty({ type: Number, example: 359100, description: '0 when the item has no price' }) discountedPrice: number;
  @ApiProperty({ nullable: true, type: Number, example: null }) customOriginalPrice: number | null;
  @ApiProperty({ nullable: true, type: Number, example: null }) customDiscountedPrice: number | null;
  @ApiProperty({ example: 'KRW' }) currency: string;
  @ApiProperty({ type: Number, example: 10, description: '0 when none is set' }) discountPercentage: number;
  @ApiProperty({ example: '', description: 'Not tracked for goods: always empty' }) adminId: string;
  @ApiProperty({ example: '', description: 'Not tracked for goods: always empty' }) adminName: string;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) createdAt: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) updatedAt: number;
  @ApiProperty({ example: false }) checked: boolean;
  @ApiProperty({ example: false }) locked: boolean;
}

export class CampaignGoodsResponse {
  @ApiProperty({ example: '12' }) campaignId: string;
  @ApiProperty({ example: '1024' }) goodsId: string;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: '1-based place in the campaign' }) sortOrder: number;
  @ApiProperty({ example: false }) showingNow: boolean;
  @ApiProperty({ enum: SALES_STATUSES, example: 'SOLD_OUT' }) salesStatus: SalesStatus;
  @ApiProperty({ nullable: true, type: 'integer', format: 'int32', minimum: 0, example: 12, description: 'Units left; null: stock not tracked' })
  stock: number | null;
  @ApiProperty({
    nullable: true,
    type: 'integer',
    format: 'int32',
    minimum: 0,
    example: 5,
    description: 'ALMOST_SOLD_OUT at this many units left or fewer (above 0); null: no such stage',
  })
  almostSoldOutAt: number | null;
  @ApiProperty({ type: CampaignGoodsItemResponse }) goods: CampaignGoodsItemResponse;
  @ApiProperty({ nullable: true, type: String, example: 'Mina' }) adminName: string | null;
  @ApiProperty({ example: 'op-7' }) adminId: string;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) createdAt: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) updatedAt: number;
}

export interface CampaignGoodsRow {
  link: CampaignGoods;
  goods: Goods;
  media: Media | null;
}

function toCampaignMedia(media: Media, baseUrl: string): CampaignGoodsMediaResponse {
  return {
    id: String(media.id),
    customerId: String(media.customerId),
    mediaType: media.mediaType,
    name: null,
    description: null,
    originalUrl: media.originalUrl,
    url: mediaFileUrl(baseUrl, media.fileKey),
    checksum: media.checksum,
    width: media.width,
    height: media.height,
    size: String(media.size),
    historyId: String(media.id),
    thumbnails: toMediaResponse(media, baseUrl).thumbnails,
    createdAt: media.createdAt.getTime(),
    updatedAt: media.updatedAt.getTime(),
  };
}

export function toCampaignGoodsResponse(row: CampaignGoodsRow, currency: string, baseUrl: string): CampaignGoodsResponse {
  const { link, goods, media } = row;
  return {
    campaignId: String(link.campaignId),
    goodsId: String(link.goodsId),
    sortOrder: link.sortOrder,
    showingNow: link.showingNow,
    salesStatus: link.salesStatus,
    stock: link.stock,
    almostSoldOutAt: link.almostSoldOutAt,
    goods: {
      id: String(goods.id),
      customerId: String(goods.customerId),
      name: goods.name,
      brand: goods.brand,
      description: goods.description,
      url: goods.url,
      sku: goods.sku,
      medias: media ? [toCampaignMedia(media, baseUrl)] : [],
      // Numbers, as the interface types them (a price never set reads 0); the custom prices are nullable.
      originalPrice: goods.originalPrice ?? 0,
      discountedPrice: goods.discountedPrice ?? 0,
      customOriginalPrice: null,
      customDiscountedPrice: null,
      currency,
      discountPercentage: goods.discountPercentage ?? 0,
      adminId: '',
      adminName: '',
      createdAt: goods.createdAt.getTime(),
      updatedAt: goods.updatedAt.getTime(),
      checked: false,
      locked: false,
    },
    adminName: link.adminName,
    adminId: link.adminId,
    createdAt: link.createdAt.getTime(),
    updatedAt: link.updatedAt.getTime(),
  };
}

// ---------------------------------------------------------------------------------------------
// The compact form viewers get (snapshot, goods.list, public detail).

export class CampaignGoodsSummary {
  @ApiProperty({ example: '1024' }) goodsId: string;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: '1-based place in the campaign' }) sortOrder: number;
  @ApiProperty({ example: true }) showingNow: boolean;
  @ApiProperty({ enum: SALES_STATUSES, example: 'ON_SALE' }) salesStatus: SalesStatus;
  @ApiProperty({ example: '스마트 워치 7' }) name: string;
  @ApiProperty({ nullable: true, type: String }) brand: string | null;
  @ApiProperty() url: string;
  @ApiProperty() sku: string;
  @ApiProperty({ nullable: true, type: Number }) originalPrice: number | null;
  @ApiProperty({ nullable: true, type: Number }) discountedPrice: number | null;
  @ApiProperty({ nullable: true, type: Number }) discountPercentage: number | null;
  @ApiProperty({ example: 'KRW' }) currency: string;
  @ApiProperty({ nullable: true, type: String, description: 'Hosted image' }) imageUrl: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'The 240 px thumbnail: the URL of medias[].thumbnails[1]' }) thumbnailUrl: string | null;
  @ApiProperty({ nullable: true, type: String }) adminName: string | null;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) updatedAt: number;
  @ApiPropertyOptional({
    nullable: true,
    type: 'integer',
    format: 'int32',
    minimum: 0,
    example: 12,
    description: "Units left (null: not tracked); present only when the campaign's showStock is on",
  })
  stock?: number | null;
}

/** The viewers' form of an item; `stock` is included only when the campaign shows it (showStock). */
export function toCampaignGoodsSummary(row: CampaignGoodsRow, currency: string, baseUrl: string, showStock = false): CampaignGoodsSummary {
  const { link, goods, media } = row;
  // The 240 px one (the second stored, as listed in medias[].thumbnails), so always one of the listed files.
  const thumb = media?.thumbnails[1] ?? media?.thumbnails[0];
  return {
    goodsId: String(link.goodsId),
    sortOrder: link.sortOrder,
    showingNow: link.showingNow,
    salesStatus: link.salesStatus,
    name: goods.name,
    brand: goods.brand,
    url: goods.url,
    sku: goods.sku,
    originalPrice: goods.originalPrice,
    discountedPrice: goods.discountedPrice,
    discountPercentage: goods.discountPercentage,
    currency,
    imageUrl: media ? mediaFileUrl(baseUrl, media.fileKey) : null,
    thumbnailUrl: thumb ? mediaFileUrl(baseUrl, thumb.key) : null,
    adminName: link.adminName,
    updatedAt: link.updatedAt.getTime(),
    ...(showStock ? { stock: link.stock } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// The campaign record (console and public answers).

export class NoticeResponse {
  @ApiProperty({ example: 'Free shipping until 9 pm' }) message: string;
  @ApiProperty({ nullable: true, type: String, example: 'Mina' }) adminName: string | null;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) createdAt: number;
}

export class ChatLineResponse {
  @ApiProperty({ example: '41' }) id: string;
  @ApiProperty({ example: 'Welcome!' }) message: string;
  @ApiProperty({ nullable: true, type: String, example: 'Mina' }) adminName: string | null;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) createdAt: number;
}

export class CampaignResponse {
  @ApiProperty({ type: 'integer', format: 'int64', example: 12, description: 'int64, a JSON number (CampaignGoods records give it as text)' })
  campaignId: number;
  @ApiProperty({ example: 'k7Qw2ZbX9mN4pR8s' }) campaignKey: string;
  @ApiProperty({ enum: ['READY', 'ONAIR', 'CLOSED'], example: 'READY', description: 'READY (upcoming), ONAIR (live) or CLOSED (ended)' })
  campaignStatus: CampaignStatus;
  @ApiProperty({ example: 'Friday night deals' }) title: string;
  @ApiPropertyOptional({ nullable: true, type: String, description: 'Console answers and public detail form' })
  description?: string | null;
  @ApiProperty({ nullable: true, type: 'integer', format: 'int64', description: 'Planned start, epoch ms' }) scheduledAt: number | null;
  @ApiProperty({ nullable: true, type: 'integer', format: 'int64', description: 'Planned end, epoch ms' }) scheduledEndAt: number | null;
  @ApiProperty({ nullable: true, type: 'integer', format: 'int64', description: 'When it went ONAIR, epoch ms' }) startedAt: number | null;
  @ApiProperty({ nullable: true, type: 'integer', format: 'int64', description: 'When it went CLOSED, epoch ms' }) endedAt: number | null;
  @ApiProperty({ nullable: true, type: String }) posterUrl: string | null;
  @ApiProperty({ nullable: true, type: String }) liveUrl: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'Detail setting: default name on operator messages' })
  operatorName: string | null;
  @ApiProperty({ description: 'Detail setting: listed publicly (collection-view visibility)' }) collectionVisible: boolean;
  @ApiProperty({ description: "Detail setting: viewers see each item's remaining stock (goods summaries and goods.stock events)" })
  showStock: boolean;
  @ApiProperty({ ...nullableRef(NoticeResponse), description: 'The pinned operator notice, or null' }) notice: NoticeResponse | null;
  @ApiProperty({ type: 'integer', format: 'int32', example: 1532, description: 'Viewers connected right now, across all nodes' }) userCount: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) createdAt: number;
  @ApiProperty({ type: 'integer', format: 'int64', example: 1763700000000, description: 'epoch ms' }) updatedAt: number;
  @ApiPropertyOptional({ type: [CampaignGoodsSummary], description: 'Detail form: the goods in sortOrder' })
  goods?: CampaignGoodsSummary[];
}

export function noticeOf(campaign: Campaign): NoticeResponse | null {
  return campaign.noticeMessage ? { message: campaign.noticeMessage, adminName: campaign.noticeAdminName, createdAt: ms(campaign.noticeAt) ?? 0 } : null;
}

export function toChatLine(chat: CampaignChat): ChatLineResponse {
  return { id: String(chat.id), message: chat.message, adminName: chat.adminName, createdAt: chat.createdAt.getTime() };
}

export function toCampaignResponse(
  campaign: Campaign,
  userCount: number,
  extra: { description?: boolean; goods?: CampaignGoodsSummary[] } = {},
): CampaignResponse {
  return {
    campaignId: Number(campaign.id),
    campaignKey: campaign.campaignKey,
    campaignStatus: campaign.campaignStatus,
    title: campaign.title,
    ...(extra.description ? { description: campaign.description } : {}),
    scheduledAt: ms(campaign.scheduledAt),
    scheduledEndAt: ms(campaign.scheduledEndAt),
    startedAt: ms(campaign.startedAt),
    endedAt: ms(campaign.endedAt),
    posterUrl: campaign.posterUrl,
    liveUrl: campaign.liveUrl,
    operatorName: campaign.operatorName,
    collectionVisible: campaign.collectionVisible,
    showStock: campaign.showStock,
    notice: noticeOf(campaign),
    userCount,
    createdAt: campaign.createdAt.getTime(),
    updatedAt: campaign.updatedAt.getTime(),
    ...(extra.goods ? { goods: extra.goods } : {}),
  };
}

export class CampaignListResponse {
  @ApiProperty({ type: [CampaignResponse] }) results: CampaignResponse[];
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Number of all matches, not only this page' }) totalCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

export class CampaignGoodsListResponse {
  @ApiProperty({ type: [CampaignGoodsResponse] }) results: CampaignGoodsResponse[];
  @ApiProperty({ type: 'integer', format: 'int32', example: 1, description: 'Number of all matches, not only this page' }) totalCount: number;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

/** The public answer for an unknown campaign (HTTP 200). */
export class NotExistResponse {
  @ApiPropertyOptional({ example: 'k7Qw2ZbX9mN4pR8s', description: 'The key asked for (absent on …/upcoming)' }) campaignKey?: string;
  @ApiProperty({ enum: ['NOT_EXIST'], example: 'NOT_EXIST', description: 'No such campaign' }) campaignStatus: 'NOT_EXIST';
}

/** A public campaign answer: the campaign, or NOT_EXIST, told apart by campaignStatus. */
export const CAMPAIGN_OR_NOT_EXIST = {
  oneOf: [{ $ref: getSchemaPath(CampaignResponse) }, { $ref: getSchemaPath(NotExistResponse) }],
  discriminator: {
    propertyName: 'campaignStatus',
    mapping: {
      READY: getSchemaPath(CampaignResponse),
      ONAIR: getSchemaPath(CampaignResponse),
      CLOSED: getSchemaPath(CampaignResponse),
      NOT_EXIST: getSchemaPath(NotExistResponse),
    },
  },
};

/** The answer of a chat line. */
export class ChatPostedResponse {
  @ApiProperty({ type: ChatLineResponse, description: 'The chat line posted' }) chat: ChatLineResponse;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}

/** The answer of a pinned message: the notice now pinned, or null when an empty message unpinned it. */
export class NoticePinnedResponse {
  @ApiProperty({ ...nullableRef(NoticeResponse), description: 'The pinned notice, or null (unpinned)' }) notice: NoticeResponse | null;
  @ApiProperty({ type: 'integer', format: 'int32', enum: [0], example: 0, description: 'Always 0 on success' }) _s: number;
}
