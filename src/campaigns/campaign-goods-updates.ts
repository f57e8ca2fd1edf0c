import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { lockRow } from '../database/engine';
import { Transactions } from '../database/transactions';
import { GoodsChangeHooks } from '../goods/goods-changes';
import type { LiveEvent } from '../live/live-events';
import { CampaignEventLog } from './campaign-event-log';
import { CampaignViews } from './campaign-views';
import { CampaignWriter } from './campaign-writer';
import { toCampaignGoodsSummary } from './dto/campaign-response.dto';
import { CampaignGoods } from './entities/campaign-goods.entity';
import { Campaign } from './entities/campaign.entity';

/**
 * Up to this many changed goods ids, a campaign's places are found with `goodsId IN (…)`; past it, every
 * place of the open campaigns is read (what one snapshot of them reads anyway) and matched in memory, so
 * a bulk write of any size costs a fixed number of queries here.
 */
export const IDS_IN_QUERY = 1000;
/** Campaign ids per IN (...) list. */
const CAMPAIGNS_CHUNK = 500;

/**
 * When a catalog write (register/update, sync, spreadsheet import) has committed, every campaign that
 * holds any of the changed goods and has not ended (READY or ONAIR) records one `goods.update` with the
 * summaries of those goods, and its viewers get it. Registered with the goods domain's change hooks.
 *
 * Queries per catalog write: one (the customer's open campaigns) when it has none; two when none of them
 * holds a changed item; otherwise two, then one transaction that locks the campaigns concerned (in id
 * order, one statement each), reads their places of the changed goods again under the locks, the goods
 * and media (two per 1,000 distinct goods in those campaigns) and records one event per campaign.
 *
 * The event is recorded in a transaction of its own, after the goods write committed (a goods write
 * never waits for campaign locks, and the summaries are read under the campaign lock, so each event shows
 * the goods as they are when it takes its seq: two writes racing end with the later state in the later
 * event). A process that dies between the two commits leaves that campaign's viewers to their next
 * snapshot for that edit.
 */
@Injectable()
export class CampaignGoodsUpdates implements OnModuleInit {
  constructor(
    private readonly hooks: GoodsChangeHooks,
    private readonly db: Transactions,
    private readonly views: CampaignViews,
    private readonly log: CampaignEventLog,
    private readonly writer: CampaignWriter,
  ) {}

  onModuleInit(): void {
    this.hooks.register((tenant, goodsIds) => this.goodsChanged(tenant, goodsIds));
  }

  /** Records and pushes `goods.update` for every open campaign of the customer holding any of these goods. */
  async goodsChanged(tenant: Tenant, goodsIds: number[]): Promise<void> {
    if (!goodsIds.length) return;
    const { ids: open, showingStock } = await this.openCampaigns(tenant);
    if (!open.length) return;
    const wanted = new Set(goodsIds);
    const holding = [...new Set((await this.places(this.db.manager, open, goodsIds, wanted)).map((l) => l.campaignId))].sort((a, b) => a - b);
    if (!holding.length) return;
    const recorded = await this.db.run(async (em) => {
      // In id order, so that two writers never lock campaigns in opposite orders.
      for (const campaignId of holding) await lockRow(em, 'campaigns', campaignId);
      const rows = await this.views.rowsOf(em, await this.places(em, holding, goodsIds, wanted), 'summary');
      const byCampaign = new Map<number, typeof rows>();
      for (const row of rows) {
        const list = byCampaign.get(row.link.campaignId) ?? [];
        list.push(row);
        byCampaign.set(row.link.campaignId, list);
      }
      const events: LiveEvent[] = [];
      for (const campaignId of holding) {
        const list = byCampaign.get(campaignId);
        if (!list) continue; // the item left the campaign (or the campaign went) meanwhile
        list.sort((a, b) => a.link.sortOrder - b.link.sortOrder || a.link.goodsId - b.link.goodsId);
        const goods = list.map((row) => toCampaignGoodsSummary(row, tenant.currency, tenant.baseUrl, showingStock.has(campaignId)));
        events.push(...(await this.log.record(em, campaignId, [{ type: 'goods.update', payload: { goods } }])));
      }
      return events;
    });
    this.writer.publish(recorded);
  }

  /** The customer's campaigns that have not ended (their viewers are the ones watching for changes). */
  private async openCampaigns(tenant: Tenant): Promise<{ ids: number[]; showingStock: Set<number> }> {
    const rows = await this.db.manager.find(Campaign, {
      select: { id: true, showStock: true },
      where: { customerId: tenant.id, campaignStatus: In(['READY', 'ONAIR']) },
      order: { id: 'ASC' },
    });
    // Which of them show stock (showStock) comes with the same query.
    return { ids: rows.map((c) => c.id), showingStock: new Set(rows.filter((c) => c.showStock).map((c) => c.id)) };
  }

  /** The places of these goods in these campaigns (see IDS_IN_QUERY for how they are found). */
  private async places(em: EntityManager, campaignIds: number[], goodsIds: number[], wanted: Set<number>): Promise<CampaignGoods[]> {
    const found: CampaignGoods[] = [];
    for (let i = 0; i < campaignIds.length; i += CAMPAIGNS_CHUNK) {
      const campaignId = In(campaignIds.slice(i, i + CAMPAIGNS_CHUNK));
      if (goodsIds.length <= IDS_IN_QUERY) found.push(...(await em.find(CampaignGoods, { where: { campaignId, goodsId: In(goodsIds) } })));
      else for (const link of await em.find(CampaignGoods, { where: { campaignId } })) if (wanted.has(link.goodsId)) found.push(link);
    }
    return found;
  }
}
