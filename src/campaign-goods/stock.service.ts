import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { CampaignViews } from '../campaigns/campaign-views';
import { adminNameOf, CampaignWriter } from '../campaigns/campaign-writer';
import { CampaignGoodsResponse, toCampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { CampaignGoods } from '../campaigns/entities/campaign-goods.entity';
import { Transactions } from '../database/transactions';
import { findGoodsOrFail, GoodsLocator } from '../goods/goods-lookup';
import type { PendingEvent } from '../live/live-events';
import { notInCampaign } from './campaign-goods.service';
import { locatorOf } from './sales-status.service';
import { MAX_STOCK, SetStockParams, StockDeltaParams, StockParams } from './dto/campaign-goods-requests.dto';
import { statusOfStock } from './stock-status';
import { WebhookEvents } from '../webhooks/webhook-events';

/** Thrown to roll the fast path of a decrement or increment back: it must run under the campaign lock. */
const NEEDS_EVENTS = new Error('the stock change needs the campaign lock');

type Change = { stock: number | null; almostSoldOutAt?: number | null } | { delta: number };

/**
 * The shop's stock operations (…/stock/{id|url|sku}): set, decrement, increment. A decrement or increment
 * is one conditional UPDATE whose affected-row count says whether it applied, so two nodes decrementing
 * the same item can never take more than there is (the UPDATE locks the item's row on MySQL; SQLite runs
 * one write transaction at a time). A change that has viewer events to record runs in the campaign's
 * write transaction (CampaignWriter: the campaign row locked on MySQL), like every campaign change with
 * events; one without (most orders) does not need that lock (see delta).
 *
 * When the stored stock or threshold changed, the status is derived from them (statusOfStock) and, if it
 * differs from the current one, stored and pushed as goods.salesStatus, exactly as a manual change; a
 * manual status therefore stands until the stock next changes. Viewers are told after commit.
 */
@Injectable()
export class StockService {
  constructor(
    private readonly transactions: Transactions,
    private readonly writer: CampaignWriter,
    private readonly views: CampaignViews,
    private readonly webhooks: WebhookEvents,
  ) {}

  set(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: SetStockParams): Promise<CampaignGoodsResponse> {
    return this.apply(tenant, campaignKey, by, params, { stock: params.stock, almostSoldOutAt: params.almostSoldOutAt });
  }

  decrement(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: StockDeltaParams): Promise<CampaignGoodsResponse> {
    return this.delta(tenant, campaignKey, by, params, -(params.quantity ?? 1));
  }

  increment(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: StockDeltaParams): Promise<CampaignGoodsResponse> {
    return this.delta(tenant, campaignKey, by, params, params.quantity ?? 1);
  }

  /**
   * Most orders change no status and tell no viewer. Those run without the campaign lock (the fast path:
   * the conditional UPDATE locks only the item's row, so orders of different items of one campaign do not
   * wait for each other); when the new stock derives another status, or viewers see the count
   * (showStock), that transaction is rolled back and the operation runs again under the campaign lock, as
   * every change with events does (apply). The fast path holds the campaign row in share mode: fast paths
   * run side by side, and never at the same time as a writer of the campaign (a writer locks the campaign
   * row before any of its items, so neither can hold an item the other waits for).
   */
  private async delta(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: StockParams, delta: number): Promise<CampaignGoodsResponse> {
    const locator = locatorOf(by, params);
    try {
      return await this.transactions.run(async (em) => {
        // The campaign row in share mode: orders run side by side, the campaign's writers (which lock it
        // first, then its items) one at a time with them, so no two lock the same rows in opposite orders.
        const campaign = await this.writer.find(em, tenant, campaignKey, 'share');
        if (campaign.showStock && params.notify !== false) throw NEEDS_EVENTS;
        const before = await this.placeOf(em, tenant, campaign.id, campaignKey, locator);
        await this.add(em, before, delta, new Date());
        // Read after the UPDATE, which holds the row's lock: the current status, not an older snapshot's.
        const after = await this.reread(em, before);
        const derived = statusOfStock(after.stock, after.almostSoldOutAt);
        if (derived && derived !== after.salesStatus) throw NEEDS_EVENTS;
        const answer = await this.answer(em, tenant, after);
        await this.recordDepletion(tenant, em, campaignKey, before, after, answer);
        return answer;
      });
    } catch (err) {
      if (err !== NEEDS_EVENTS) throw err;
      return this.apply(tenant, campaignKey, by, params, { delta });
    }
  }

  private apply(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: StockParams, change: Change): Promise<CampaignGoodsResponse> {
    const locator = locatorOf(by, params);
    return this.writer.change(tenant, campaignKey, async (em, campaign) => {
      const before = await this.placeOf(em, tenant, campaign.id, campaignKey, locator);
      const goodsId = before.goodsId;
      const key = { campaignId: campaign.id, goodsId };

      const now = new Date();
      const changed = 'delta' in change ? await this.add(em, before, change.delta, now) : await this.put(em, before, change, now);
      const after = changed ? await this.reread(em, before) : before;

      const events: PendingEvent[] = [];
      const derived = changed ? statusOfStock(after.stock, after.almostSoldOutAt) : null;
      const notify = params.notify !== false;
      if (changed && notify && campaign.showStock && after.stock !== before.stock) {
        events.push({ type: 'goods.stock', payload: { campaignKey, goodsId: String(goodsId), stock: after.stock, updatedAt: now.getTime() } });
      }
      if (derived && derived !== before.salesStatus) {
        const adminName = adminNameOf(params.name, campaign, tenant);
        const status = { salesStatus: derived, adminName, adminId: tenant.operator.sub ?? '', updatedAt: now };
        await em.update(CampaignGoods, key, status);
        await this.webhooks.record(tenant.id, em, 'goods.salesStatus', {
          campaignKey,
          goodsId: String(goodsId),
          salesStatus: derived,
          previousSalesStatus: before.salesStatus,
          source: 'stock',
          adminName,
          updatedAt: now.getTime(),
        });
        Object.assign(after, status);
        if (notify) {
          events.push({
            type: 'goods.salesStatus',
            payload: { campaignKey, goodsId: String(goodsId), salesStatus: derived, adminName, updatedAt: now.getTime() },
          });
        }
      }
      const answer = await this.answer(em, tenant, after);
      await this.recordDepletion(tenant, em, campaignKey, before, after, answer);
      return { result: answer, events };
    });
  }

  /** campaign.stockDepleted for the shop's systems when a tracked stock has just reached 0 (in the change's transaction). */
  private async recordDepletion(
    tenant: Tenant,
    em: EntityManager,
    campaignKey: string,
    before: Pick<CampaignGoods, 'stock'>,
    after: CampaignGoods,
    answer: CampaignGoodsResponse,
  ): Promise<void> {
    if (after.stock !== 0 || before.stock === 0) return;
    await this.webhooks.record(tenant.id, em, 'campaign.stockDepleted', {
      campaignKey,
      goodsId: String(after.goodsId),
      sku: answer.goods.sku,
      updatedAt: after.updatedAt.getTime(),
    });
  }

  /** The campaign's place of the item the locator names: 404 for an unknown item or one not in the campaign. */
  private async placeOf(em: EntityManager, tenant: Tenant, campaignId: number, campaignKey: string, locator: GoodsLocator): Promise<CampaignGoods> {
    const goods = await findGoodsOrFail(em, tenant.id, locator);
    const place = await em.findOne(CampaignGoods, { where: { campaignId, goodsId: goods.id } });
    if (!place) throw notInCampaign(goods.id, campaignKey);
    return place;
  }

  private async reread(em: EntityManager, place: CampaignGoods): Promise<CampaignGoods> {
    return (await em.findOne(CampaignGoods, { where: { campaignId: place.campaignId, goodsId: place.goodsId } })) as CampaignGoods;
  }

  /** The CampaignGoods answer of this place as it now stands (its goods item and media read once). */
  private async answer(em: EntityManager, tenant: Tenant, place: CampaignGoods): Promise<CampaignGoodsResponse> {
    const [row] = await this.views.rowsOf(em, [place]);
    return toCampaignGoodsResponse(row, tenant.currency, tenant.baseUrl);
  }

  /** Sets the stock (and the threshold when given); false when both already had these values. */
  private async put(em: EntityManager, link: CampaignGoods, change: { stock: number | null; almostSoldOutAt?: number | null }, now: Date): Promise<boolean> {
    const almostSoldOutAt = change.almostSoldOutAt === undefined ? link.almostSoldOutAt : change.almostSoldOutAt;
    if (change.stock === link.stock && almostSoldOutAt === link.almostSoldOutAt) return false;
    await em.update(CampaignGoods, { campaignId: link.campaignId, goodsId: link.goodsId }, { stock: change.stock, almostSoldOutAt, updatedAt: now });
    return true;
  }

  /**
   * stock += delta in one conditional UPDATE: it applies only while the result stays within 0 … MAX_STOCK,
   * and the affected-row count says whether it did. Refused (409, nothing changed) otherwise, and for an
   * item whose stock is not tracked.
   */
  private async add(em: EntityManager, link: CampaignGoods, delta: number, now: Date): Promise<boolean> {
    const qb = em
      .createQueryBuilder()
      .update(CampaignGoods)
      .set({ stock: () => 'stock + :delta', updatedAt: now })
      .where('campaignId = :campaignId AND goodsId = :goodsId', { campaignId: link.campaignId, goodsId: link.goodsId })
      .andWhere('stock IS NOT NULL')
      .setParameter('delta', delta)
      .updateEntity(false);
    if (delta < 0) qb.andWhere('stock >= :units', { units: -delta });
    else qb.andWhere('stock <= :room', { room: MAX_STOCK - delta });
    const result = await qb.execute();
    if (result.affected === 1) return true;

    const current = await em.findOne(CampaignGoods, { select: { stock: true }, where: { campaignId: link.campaignId, goodsId: link.goodsId } });
    const stock = current?.stock ?? null;
    if (stock === null) throw ApiException.conflict(`The stock of goods ${link.goodsId} is not tracked; set it first`);
    if (delta < 0) throw ApiException.conflict(`Only ${stock} left of goods ${link.goodsId}; cannot take ${-delta}`);
    throw ApiException.conflict(`The stock of goods ${link.goodsId} would exceed ${MAX_STOCK}`);
  }
}
