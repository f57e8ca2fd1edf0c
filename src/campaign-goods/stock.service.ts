import { Injectable } from '@nestjs/common';
import { EntityManager, QueryRunner } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { QueryResult } from 'typeorm/query-runner/QueryResult';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { CampaignViews } from '../campaigns/campaign-views';
import { adminNameOf, campaignNotFound, CampaignWriter } from '../campaigns/campaign-writer';
import { CampaignGoodsResponse, toCampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { CampaignGoods } from '../campaigns/entities/campaign-goods.entity';
import type { Campaign } from '../campaigns/entities/campaign.entity';
import { hydrateRows } from '../database/bulk-sql';
import { sameKey } from '../database/engine';
import { Media } from '../media/entities/media.entity';
import { Transactions } from '../database/transactions';
import { findGoodsOrFail, GoodsLocator } from '../goods/goods-lookup';
import type { PendingEvent } from '../live/live-events';
import { notInCampaign } from './campaign-goods.service';
import { locatorOf } from './sales-status.service';
import { MAX_STOCK, SetStockParams, StockDeltaParams, StockParams } from './dto/campaign-goods-requests.dto';
import { statusOfStock, statusOfStockSql } from './stock-status';
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
   * Most orders change no status and tell no viewer. Those take the fast path: one conditional UPDATE that
   * applies the change only while the item's stored status is the one its new stock derives (and the stock
   * stays within 0 … MAX_STOCK), so it can neither oversell nor leave a status behind; no campaign lock
   * (the UPDATE locks only the item's row on MySQL), and the reads are plain statements with bound
   * parameters (cached prepared statements on SQLite) around it. On MySQL the goods item and its media are
   * read before the UPDATE, so the item's row lock is held for one short read and the commit only.
   *
   * When the UPDATE does not apply, the row says why: no such place (404), an untracked stock, or not
   * enough left (409, nothing changed); otherwise the change derives another status, or viewers see the
   * count (showStock), and it runs again under the campaign lock, as every change with events does (apply).
   * The fast path holds the campaign row in share mode: fast paths run side by side, and never at the same
   * time as a writer of the campaign (a writer locks the campaign row before any of its items, so neither
   * can hold an item the other waits for), so a fast path never misses a showStock a writer turned on.
   */
  private async delta(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: StockParams, delta: number): Promise<CampaignGoodsResponse> {
    const locator = locatorOf(by, params);
    try {
      return await this.transactions.run(async (em) => {
        const campaign = await this.campaignForOrders(em, tenant, campaignKey);
        if (campaign.showStock && params.notify !== false) throw NEEDS_EVENTS;
        const goods = await findGoodsOrFail(em, tenant.id, locator);
        const [media] = hydrateRows(em, Media, await em.query('SELECT * FROM media WHERE goodsId = ?', [goods.id]));
        const after = await this.addKeepingStatus(em, campaign.id, goods.id, delta, new Date());
        if (!after) {
          await this.refusal(em, campaign.id, campaignKey, goods.id, delta);
          throw NEEDS_EVENTS;
        }
        const answer = toCampaignGoodsResponse({ link: after, goods, media: media ?? null }, tenant.currency, tenant.baseUrl);
        await this.recordDepletion(tenant, em, campaignKey, { stock: (after.stock ?? 0) - delta }, after, answer);
        return answer;
      });
    } catch (err) {
      if (err !== NEEDS_EVENTS) throw err;
      return this.apply(tenant, campaignKey, by, params, { delta });
    }
  }

  /** The campaign of an order, read in share mode on MySQL (see delta): its id and showStock. */
  private async campaignForOrders(em: EntityManager, tenant: Tenant, campaignKey: string): Promise<Pick<Campaign, 'id' | 'showStock'>> {
    const lock = this.transactions.isMysql ? ' LOCK IN SHARE MODE' : '';
    const rows: Array<{ id: number | string; campaignKey: string; showStock: number | boolean }> = await em.query(
      `SELECT id, campaignKey, showStock FROM campaigns WHERE customerId = ? AND campaignKey = ?${lock}`,
      [tenant.id, campaignKey],
    );
    const row = rows.find((r) => sameKey(r.campaignKey, campaignKey));
    if (!row) throw campaignNotFound(campaignKey);
    return { id: Number(row.id), showStock: Boolean(Number(row.showStock)) };
  }

  /**
   * stock += delta in one UPDATE that applies only while the new stock stays within 0 … MAX_STOCK and
   * derives the status the row already has; the row as it then stands (RETURNING on SQLite, a read of the
   * row this transaction holds on MySQL), or null when it did not apply.
   */
  private async addKeepingStatus(em: EntityManager, campaignId: number, goodsId: number, delta: number, now: Date): Promise<CampaignGoods | null> {
    const runner = em.queryRunner as QueryRunner;
    const column = em.connection.getMetadata(CampaignGoods).findColumnWithPropertyName('updatedAt') as ColumnMetadata;
    const updatedAt: unknown = em.connection.driver.preparePersistentValue(now, column);
    const returning = this.transactions.isMysql ? '' : ' RETURNING *';
    const result: QueryResult = await runner.query(
      `UPDATE campaign_goods SET stock = stock + ?, updatedAt = ? WHERE campaignId = ? AND goodsId = ? AND stock IS NOT NULL ` +
        `AND stock + ? >= 0 AND stock + ? <= ? AND salesStatus = ${statusOfStockSql('stock + ?')}${returning}`,
      [delta, updatedAt, campaignId, goodsId, delta, delta, MAX_STOCK, delta, delta],
      true,
    );
    const raw: Array<Record<string, unknown>> = returning
      ? ((result.records ?? []) as Array<Record<string, unknown>>)
      : result.affected === 1
        ? await em.query('SELECT * FROM campaign_goods WHERE campaignId = ? AND goodsId = ?', [campaignId, goodsId])
        : [];
    return raw.length ? hydrateRows(em, CampaignGoods, raw)[0] : null;
  }

  /**
   * Why a fast-path change did not apply, thrown: 404 for an item not in the campaign, 409 for an untracked
   * stock or one the change would take out of 0 … MAX_STOCK. Returns when none of these holds (the change
   * derives another status).
   */
  private async refusal(em: EntityManager, campaignId: number, campaignKey: string, goodsId: number, delta: number): Promise<void> {
    const rows: Array<{ stock: number | string | null }> = await em.query('SELECT stock FROM campaign_goods WHERE campaignId = ? AND goodsId = ?', [
      campaignId,
      goodsId,
    ]);
    if (!rows.length) throw notInCampaign(goodsId, campaignKey);
    const stock = rows[0].stock === null ? null : Number(rows[0].stock);
    if (stock === null || stock + delta < 0 || stock + delta > MAX_STOCK) throw stockRefusal(goodsId, stock, delta);
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
    after: Pick<CampaignGoods, 'stock' | 'goodsId' | 'updatedAt'>,
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
    throw stockRefusal(link.goodsId, current?.stock ?? null, delta);
  }
}

/** The 409 of a stock change that cannot apply to `stock` (null: not tracked). */
function stockRefusal(goodsId: number, stock: number | null, delta: number): ApiException {
  if (stock === null) return ApiException.conflict(`The stock of goods ${goodsId} is not tracked; set it first`);
  if (delta < 0) return ApiException.conflict(`Only ${stock} left of goods ${goodsId}; cannot take ${-delta}`);
  return ApiException.conflict(`The stock of goods ${goodsId} would exceed ${MAX_STOCK}`);
}
