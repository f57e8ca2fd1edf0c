import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { CampaignGoodsRow, CampaignGoodsSummary, toCampaignGoodsSummary, toCampaignResponse, toChatLine, noticeOf } from './dto/campaign-response.dto';
import { CampaignChat } from './entities/campaign-chat.entity';
import { CampaignGoods } from './entities/campaign-goods.entity';
import { Campaign } from './entities/campaign.entity';
import { Goods } from '../goods/entities/goods.entity';
import { Media } from '../media/entities/media.entity';
import { LiveEventMap } from '../live/live-events';

export const SNAPSHOT_CHAT_LINES = 50;
/** Goods ids per IN (...) list when reading many campaign places at once. */
const GOODS_CHUNK = 1000;

/** Read side of campaigns shared by the console, the public endpoints and the viewer channel. */
@Injectable()
export class CampaignViews {
  /** The campaign's goods in sortOrder, each with its goods item and media. */
  async goodsRows(em: EntityManager, campaignId: number, goodsIds?: number[]): Promise<CampaignGoodsRow[]> {
    const links = await em.find(CampaignGoods, {
      where: goodsIds ? { campaignId, goodsId: In(goodsIds) } : { campaignId },
      order: { sortOrder: 'ASC', goodsId: 'ASC' },
    });
    return this.rowsOf(em, links);
  }

  /**
   * These campaign places (of one campaign or several), in the order given, each with its goods item and
   * media: two IN queries per GOODS_CHUNK distinct goods, whatever the number of campaigns.
   */
  async rowsOf(em: EntityManager, links: CampaignGoods[]): Promise<CampaignGoodsRow[]> {
    if (!links.length) return [];
    const ids = [...new Set(links.map((l) => l.goodsId))];
    const goodsById = new Map<number, Goods>();
    const mediaByGoods = new Map<number, Media>();
    for (let i = 0; i < ids.length; i += GOODS_CHUNK) {
      const chunk = ids.slice(i, i + GOODS_CHUNK);
      const [goods, media] = await Promise.all([em.find(Goods, { where: { id: In(chunk) } }), em.find(Media, { where: { goodsId: In(chunk) } })]);
      for (const g of goods) goodsById.set(g.id, g);
      for (const m of media) mediaByGoods.set(m.goodsId, m);
    }
    return links
      .filter((l) => goodsById.has(l.goodsId))
      .map((link) => ({ link, goods: goodsById.get(link.goodsId) as Goods, media: mediaByGoods.get(link.goodsId) ?? null }));
  }

  /** The viewers' form of the campaign's goods; `showStock` is read from the campaign when not given. */
  async summaries(em: EntityManager, campaignId: number, currency: string, baseUrl: string, showStock?: boolean): Promise<CampaignGoodsSummary[]> {
    const shown = showStock ?? (await this.showsStock(em, [campaignId])).has(campaignId);
    return (await this.goodsRows(em, campaignId)).map((row) => toCampaignGoodsSummary(row, currency, baseUrl, shown));
  }

  /** Those of these campaigns whose viewers see the stock (showStock on). */
  async showsStock(em: EntityManager, campaignIds: number[]): Promise<Set<number>> {
    if (!campaignIds.length) return new Set();
    const rows = await em.find(Campaign, { select: { id: true, showStock: true }, where: { id: In(campaignIds) } });
    return new Set(rows.filter((c) => c.showStock).map((c) => c.id));
  }

  /** What a viewer gets on join and on a resync from too far back. `seq` is read first, so every later event has a higher one. */
  async snapshot(
    em: EntityManager,
    campaignId: number,
    currency: string,
    baseUrl: string,
    userCount: number,
  ): Promise<LiveEventMap['campaign.snapshot'] | null> {
    const campaign = await em.findOne(Campaign, { where: { id: campaignId } });
    if (!campaign) return null;
    const [goods, chat] = await Promise.all([
      this.summaries(em, campaignId, currency, baseUrl, campaign.showStock),
      em.find(CampaignChat, { where: { campaignId }, order: { id: 'DESC' }, take: SNAPSHOT_CHAT_LINES }),
    ]);
    return {
      seq: campaign.lastSeq,
      campaign: toCampaignResponse(campaign, userCount, { description: true }),
      goods,
      notice: noticeOf(campaign),
      chat: chat.reverse().map(toChatLine),
    };
  }
}
