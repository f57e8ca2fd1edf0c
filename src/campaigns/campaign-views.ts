import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { CampaignGoodsRow, CampaignGoodsSummary, toCampaignGoodsSummary, toCampaignResponse, toChatLine, noticeOf } from './dto/campaign-response.dto';
import { CampaignChat } from './entities/campaign-chat.entity';
import { CampaignGoods } from './entities/campaign-goods.entity';
import { Campaign } from './entities/campaign.entity';
import { Goods } from '../goods/entities/goods.entity';
import { Media } from '../media/entities/media.entity';
import { LiveEventMap } from '../live/live-events';
import type { TimeSlicer } from '../common/util/time-slicer';

export const SNAPSHOT_CHAT_LINES = 50;
/** Goods ids per IN (...) list when reading many campaign places at once. */
const GOODS_CHUNK = 1000;
/**
 * Goods ids per read when they are read in time slices (on SQLite a read holds the event loop; the
 * summary form is a few hundred bytes per goods item, and one read of 1,000 with their places took 35 ms).
 */
const SLICED_GOODS_CHUNK = 250;

/**
 * What of a goods item a campaign place is read with: `full` for the console's CampaignGoods (every
 * field), `summary` for the viewers' form (toCampaignGoodsSummary), which needs neither the description
 * (up to 10,000 characters) nor the search text: read for 1,000 goods of 20 campaigns, they were most
 * of what a public answer or a live snapshot cost.
 */
export type GoodsForm = 'full' | 'summary';

const SUMMARY_GOODS_COLUMNS = {
  id: true,
  name: true,
  brand: true,
  url: true,
  sku: true,
  originalPrice: true,
  discountedPrice: true,
  discountPercentage: true,
} as const;

/** Read side of campaigns shared by the console, the public endpoints and the viewer channel. */
@Injectable()
export class CampaignViews {
  /**
   * The campaign's goods in sortOrder, each with its goods item and media. With `slicer`, the goods are
   * read a few at a time, the event loop free between the reads (see rowsOf).
   */
  async goodsRows(em: EntityManager, campaignId: number, goodsIds?: number[], form: GoodsForm = 'full', slicer?: TimeSlicer): Promise<CampaignGoodsRow[]> {
    const links = await em.find(CampaignGoods, {
      where: goodsIds ? { campaignId, goodsId: In(goodsIds) } : { campaignId },
      order: { sortOrder: 'ASC', goodsId: 'ASC' },
    });
    return this.rowsOf(em, links, form, slicer);
  }

  /**
   * These campaign places (of one campaign or several), in the order given, each with its goods item and
   * media: two IN queries per GOODS_CHUNK distinct goods, whatever the number of campaigns. In the
   * `summary` form the goods item has only the fields the viewers' form reads. With `slicer`,
   * SLICED_GOODS_CHUNK goods per read, and `slicer` pauses between the reads.
   */
  async rowsOf(em: EntityManager, links: CampaignGoods[], form: GoodsForm = 'full', slicer?: TimeSlicer): Promise<CampaignGoodsRow[]> {
    if (!links.length) return [];
    const ids = [...new Set(links.map((l) => l.goodsId))];
    const goodsById = new Map<number, Goods>();
    const mediaByGoods = new Map<number, Media>();
    const step = slicer ? SLICED_GOODS_CHUNK : GOODS_CHUNK;
    for (let i = 0; i < ids.length; i += step) {
      if (i) await slicer?.pause();
      const chunk = ids.slice(i, i + step);
      const [goods, media] = await Promise.all([
        em.find(Goods, { ...(form === 'summary' ? { select: SUMMARY_GOODS_COLUMNS } : {}), where: { id: In(chunk) } }),
        em.find(Media, { where: { goodsId: In(chunk) } }),
      ]);
      for (const g of goods) goodsById.set(g.id, g);
      for (const m of media) mediaByGoods.set(m.goodsId, m);
    }
    return links
      .filter((l) => goodsById.has(l.goodsId))
      .map((link) => ({ link, goods: goodsById.get(link.goodsId) as Goods, media: mediaByGoods.get(link.goodsId) ?? null }));
  }

  /**
   * The viewers' form of the campaign's goods; `showStock` is read from the campaign when not given.
   * With `slicer`, read a few hundred goods at a time (see rowsOf).
   */
  async summaries(
    em: EntityManager,
    campaignId: number,
    currency: string,
    baseUrl: string,
    showStock?: boolean,
    slicer?: TimeSlicer,
  ): Promise<CampaignGoodsSummary[]> {
    const shown = showStock ?? (await this.showsStock(em, [campaignId])).has(campaignId);
    return (await this.goodsRows(em, campaignId, undefined, 'summary', slicer)).map((row) => toCampaignGoodsSummary(row, currency, baseUrl, shown));
  }

  /**
   * The viewers' form of the goods of several campaigns, by campaign: their places in one query, and
   * each goods item read once however many of the campaigns hold it (the same 1,000 goods in 20
   * campaigns are 1,000 rows read, not 20,000). `showingStock`: the campaigns whose viewers see the stock.
   */
  async summariesOf(
    em: EntityManager,
    campaignIds: number[],
    currency: string,
    baseUrl: string,
    showingStock: ReadonlySet<number>,
  ): Promise<Map<number, CampaignGoodsSummary[]>> {
    const byCampaign = new Map<number, CampaignGoodsSummary[]>(campaignIds.map((id) => [id, []]));
    if (!campaignIds.length) return byCampaign;
    const links = await em.find(CampaignGoods, {
      where: { campaignId: In(campaignIds) },
      order: { campaignId: 'ASC', sortOrder: 'ASC', goodsId: 'ASC' },
    });
    for (const row of await this.rowsOf(em, links, 'summary')) {
      const campaignId = row.link.campaignId;
      byCampaign.get(campaignId)?.push(toCampaignGoodsSummary(row, currency, baseUrl, showingStock.has(campaignId)));
    }
    return byCampaign;
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
