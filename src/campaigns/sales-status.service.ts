import { Injectable } from '@nestjs/common';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { Goods } from '../goods/entities/goods.entity';
import { keyHash } from '../goods/goods-keys';
import { CampaignViews } from '../live/campaign-views';
import { PendingEvent } from '../live/live-events';
import { CampaignStore } from './campaign-store';
import { CampaignsService, notInCampaign } from './campaigns.service';
import { CampaignGoodsResponse, toCampaignGoodsResponse } from './dto/campaign-response.dto';
import { SalesStatusParams } from './dto/campaign-requests.dto';
import { CampaignGoods } from './entities/campaign-goods.entity';

export type GoodsLocator = 'id' | 'url' | 'sku';

/**
 * PUT …/salesStatus/{id|url|sku}: the status, the pinned notice and the chat line are stored in one
 * transaction; viewers hear of them after it commits. `notify=false` stores the status silently, the
 * messages are always pushed.
 */
@Injectable()
export class SalesStatusService {
  constructor(
    private readonly store: CampaignStore,
    private readonly campaigns: CampaignsService,
    private readonly views: CampaignViews,
  ) {}

  update(tenant: Tenant, campaignKey: string, by: GoodsLocator, params: SalesStatusParams): Promise<CampaignGoodsResponse> {
    const where = this.locator(tenant, by, params);
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      const goods = await em.findOne(Goods, { where });
      if (!goods) throw ApiException.notFound(`Goods not found: ${by} ${by === 'id' ? params.goodsId : `'${by === 'url' ? params.url : params.sku}'`}`);
      const link = await em.findOne(CampaignGoods, { where: { campaignId: campaign.id, goodsId: goods.id } });
      if (!link) throw notInCampaign(goods.id, campaignKey);

      const now = new Date();
      const adminName = params.name?.trim() || tenant.operator.name || campaign.operatorName || null;
      link.salesStatus = params.salesStatus;
      link.adminName = adminName;
      link.adminId = tenant.operator.sub ?? '';
      link.updatedAt = now;
      await em.update(
        CampaignGoods,
        { campaignId: campaign.id, goodsId: goods.id },
        { salesStatus: link.salesStatus, adminName, adminId: link.adminId, updatedAt: now },
      );

      const events: PendingEvent[] = [];
      if (params.notify !== false) {
        events.push({
          type: 'goods.salesStatus',
          payload: { campaignKey, goodsId: String(goods.id), salesStatus: link.salesStatus, adminName, updatedAt: now.getTime() },
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

  private locator(tenant: Tenant, by: GoodsLocator, params: SalesStatusParams) {
    const field = by === 'id' ? 'goodsId' : by;
    const value = by === 'id' ? params.goodsId : by === 'url' ? params.url?.trim() : params.sku?.trim();
    if (value === undefined || value === '') {
      throw ApiException.invalid(`${field} is required`, [{ field, message: `${field} is required` }]);
    }
    if (by === 'id') return { customerId: tenant.id, id: value as number };
    return by === 'url' ? { customerId: tenant.id, urlHash: keyHash(value as string) } : { customerId: tenant.id, skuHash: keyHash(value as string) };
  }
}
