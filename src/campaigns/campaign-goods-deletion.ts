import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { lockRow } from '../database/engine';
import { GoodsDeletionHooks } from '../goods/goods-deletion';
import type { LiveEvent } from '../live/live-events';
import { CampaignEventLog } from './campaign-event-log';
import { renumberCampaignGoods } from './campaign-goods-order';
import { CampaignViews } from './campaign-views';
import { CampaignWriter } from './campaign-writer';
import { CampaignGoods } from './entities/campaign-goods.entity';

/**
 * When a goods item is deleted from the catalog, the campaigns holding it lose it (its places are
 * deleted here, the goods after it move up one place) and their viewers get the new goods list. Registered with the goods domain's deletion hooks,
 * so it runs inside the deleting transaction: the campaigns are locked and their `goods.list` events get
 * their seq in that transaction, and are pushed after it commits. The deletion (GoodsService.remove) has
 * locked the item's row and reads at READ COMMITTED on MySQL: the places found here include one an add
 * committed while the deletion waited, and the lists read below show what committed before the locks.
 */
@Injectable()
export class CampaignGoodsDeletion implements OnModuleInit {
  constructor(
    private readonly hooks: GoodsDeletionHooks,
    private readonly views: CampaignViews,
    private readonly log: CampaignEventLog,
    private readonly writer: CampaignWriter,
  ) {}

  onModuleInit(): void {
    this.hooks.register((em, tenant, goodsId) => this.beforeDelete(em, tenant, goodsId));
  }

  private async beforeDelete(em: EntityManager, tenant: Tenant, goodsId: number): Promise<(() => void) | void> {
    const campaignIds = (await em.find(CampaignGoods, { select: { campaignId: true }, where: { goodsId } })).map((l) => l.campaignId).sort((a, b) => a - b); // always in id order, so that two deletions never lock in opposite orders
    if (!campaignIds.length) return;
    for (const campaignId of campaignIds) await lockRow(em, 'campaigns', campaignId);
    const recorded: LiveEvent[] = [];
    const showingStock = await this.views.showsStock(em, campaignIds);
    // The places go here rather than by the foreign key's cascade, so that the goods after them move up
    // (sortOrder stays 1..n) in this transaction and the viewers' lists carry the new places.
    await em.delete(CampaignGoods, { goodsId });
    for (const campaignId of campaignIds) await renumberCampaignGoods(em, campaignId);
    // The campaigns' lists read together: goods they share are read once.
    const lists = await this.views.summariesOf(em, campaignIds, tenant.currency, tenant.baseUrl, showingStock);
    for (const campaignId of campaignIds) {
      recorded.push(...(await this.log.record(em, campaignId, [{ type: 'goods.list', payload: { goods: lists.get(campaignId) ?? [] } }])));
    }
    return () => {
      for (const campaignId of campaignIds) this.writer.changed(tenant.id, campaignId);
      this.writer.publish(recorded);
    };
  }
}
