import { Injectable } from '@nestjs/common';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { CampaignViews } from '../campaigns/campaign-views';
import { adminNameOf, CampaignWriter } from '../campaigns/campaign-writer';
import { CampaignsService } from '../campaigns/campaigns.service';
import { CampaignGoodsResponse, toCampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { CampaignGoods } from '../campaigns/entities/campaign-goods.entity';
import { findGoodsOrFail, GoodsLocator } from '../goods/goods-lookup';
import type { PendingEvent } from '../live/live-events';
import { notInCampaign } from './campaign-goods.service';
import { SalesStatusParams } from './dto/campaign-goods-requests.dto';
import { WebhookEvents } from '../webhooks/webhook-events';

/**
 * PUT …/salesStatus/{id|url|sku}: the status, the pinned notice and the chat line are stored in one
 * transaction; viewers hear of them after it commits. `notify=false` stores the status silently, the
 * messages are always pushed.
 */
@Injectable()
export class SalesStatusService {
  constructor(
    private readonly writer: CampaignWriter,
    private readonly campaigns: CampaignsService,
    private readonly views: CampaignViews,
    private readonly webhooks: WebhookEvents,
  ) {}

  update(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    const locator = locatorOf(by, params);
    return this.writer.change(tenant, campaignKey, async (em, campaign) => {
      const goods = await findGoodsOrFail(em, tenant.id, locator);
      const link = await em.findOne(CampaignGoods, { where: { campaignId: campaign.id, goodsId: goods.id } });
      if (!link) throw notInCampaign(goods.id, campaignKey);

      const now = new Date();
      const adminName = adminNameOf(params.name, campaign, tenant);
      const adminId = tenant.operator.sub ?? '';
      await em.update(CampaignGoods, { campaignId: campaign.id, goodsId: goods.id }, { salesStatus: params.salesStatus, adminName, adminId, updatedAt: now });
      if (link.salesStatus !== params.salesStatus) {
        await this.webhooks.record(tenant.id, em, 'goods.salesStatus', {
          campaignKey,
          goodsId: String(goods.id),
          salesStatus: params.salesStatus,
          previousSalesStatus: link.salesStatus,
          source: 'manual',
          adminName,
          updatedAt: now.getTime(),
        });
      }

      const events: PendingEvent[] = [];
      if (params.notify !== false) {
        events.push({
          type: 'goods.salesStatus',
          payload: { campaignKey, goodsId: String(goods.id), salesStatus: params.salesStatus, adminName, updatedAt: now.getTime() },
        });
      }
      if (params.adminChatNotice?.trim()) {
        events.push(await this.campaigns.pinNotice(em, campaign, params.adminChatNotice.trim(), adminName, now));
      }
      if (params.chatMessage?.trim()) {
        events.push((await this.campaigns.postChat(em, campaign, params.chatMessage.trim(), adminName, now)).event);
      }
      const [row] = await this.views.goodsRows(em, campaign.id, [goods.id]);
      return { result: toCampaignGoodsResponse(row, tenant.currency, tenant.baseUrl), events };
    });
  }
}

/** The locating parameter of the route: goodsId for …/id, url for …/url, sku for …/sku (also for the stock routes). */
export function locatorOf(by: GoodsLocator['by'], params: Pick<SalesStatusParams, 'goodsId' | 'url' | 'sku'>): GoodsLocator {
  const field = by === 'id' ? 'goodsId' : by;
  const value = by === 'id' ? params.goodsId : by === 'url' ? params.url?.trim() : params.sku?.trim();
  if (value === undefined || value === '') throw ApiException.invalid(`Invalid argument: ${field} is required`, [{ field, message: `${field} is required` }]);
  if (by === 'id') return { by, id: value as number };
  return by === 'url' ? { by, url: value as string } : { by, sku: value as string };
}
