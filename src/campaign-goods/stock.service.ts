import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { CampaignViews } from '../campaigns/campaign-views';
import { adminNameOf, campaignNotFound, CampaignWriter } from '../campaigns/campaign-writer';
import { CampaignGoodsResponse, toCampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { CampaignGoods } from '../campaigns/entities/campaign-goods.entity';
import { aliasedColumns, hydrateAliased, hydrateRows } from '../database/bulk-sql';
import { sameKey } from '../database/engine';
import { Media } from '../media/entities/media.entity';
import { Transactions } from '../database/transactions';
import { findGoodsOrFail, goodsNotFound, GoodsLocator, locatorColumn } from '../goods/goods-lookup';
import { Goods } from '../goods/entities/goods.entity';
import type { PendingEvent } from '../live/live-events';
import { notInCampaign } from './campaign-goods.service';
import { locatorOf } from './sales-status.service';
import { MAX_STOCK, SetStockParams, StockDeltaParams, StockParams } from './dto/campaign-goods-requests.dto';
import { statusOfStock, statusOfStockSql } from './stock-status';
import { WebhookEvents } from '../webhooks/webhook-events';
import { pendingCommitMark } from '../common/util/commit-marks';

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
  /** orderContext's statement for each locator column (the same text every time, built once). */
  private readonly orderSql = new Map<string, string>();

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
   * applies the change only while the status the new stock derives is the one the item already has (and
   * the stock stays within 0 … MAX_STOCK), so it can neither oversell nor leave a status behind, and takes
   * no campaign lock: orders of one campaign, and of one item, wait for nothing but that item's row, for
   * the length of that one statement. The reads around it are plain statements with bound parameters
   * (cached prepared statements on SQLite).
   *
   * When the UPDATE does not apply, the row says why: no such place (404), an untracked stock, or not
   * enough left (409, nothing changed); otherwise the change derives another status, or viewers see the
   * count (showStock), and it runs again under the campaign lock, as every change with events does (apply).
   */
  private async delta(tenant: Tenant, campaignKey: string, by: GoodsLocator['by'], params: StockParams, delta: number): Promise<CampaignGoodsResponse> {
    const locator = locatorOf(by, params);
    const notify = params.notify !== false;
    try {
      const { answer, campaign } = !this.transactions.isMysql
        ? await this.transactions.run((em) => this.fastOnSqlite(em, tenant, campaignKey, locator, notify, delta))
        : pendingCommitMark()
          ? // An Idempotency-Key: its mark commits with the UPDATE, in one transaction (see commit-marks.ts).
            await this.transactions.run((em) => this.fastOnMysql(em, tenant, campaignKey, locator, notify, delta))
          : await this.fastOnMysql(this.transactions.manager, tenant, campaignKey, locator, notify, delta);
      // The stock a showStock campaign shows changed, untold (notify=false): the public answers drop it.
      if (campaign.showStock) this.writer.changed(tenant.id, campaign.id);
      return answer;
    } catch (err) {
      if (err !== NEEDS_EVENTS) throw err;
      return this.apply(tenant, campaignKey, by, params, { delta });
    }
  }

  /**
   * SQLite: in a write transaction (they run one at a time, so nothing changes between its statements);
   * the UPDATE hands the row back (RETURNING), and a stock just run out records campaign.stockDepleted
   * in the same transaction.
   */
  private async fastOnSqlite(em: EntityManager, tenant: Tenant, campaignKey: string, locator: GoodsLocator, notify: boolean, delta: number) {
    const { campaign, goods, media } = await this.orderContext(em, tenant, campaignKey, locator);
    if (campaign.showStock && notify) throw NEEDS_EVENTS;
    const rows: Array<Record<string, unknown>> = await em.query(
      `UPDATE campaign_goods SET stock = stock + ?, updatedAt = ? WHERE campaignId = ? AND goodsId = ? AND stock IS NOT NULL ` +
        `AND stock + ? BETWEEN 0 AND ? AND salesStatus = ${statusOfStockSql('stock + ?')} RETURNING *`,
      [delta, this.datetime(em, new Date()), campaign.id, goods.id, delta, MAX_STOCK, delta, delta],
    );
    if (!rows.length) {
      await this.refusal(em, campaign.id, campaignKey, goods.id, delta);
      throw NEEDS_EVENTS;
    }
    const [after] = hydrateRows(em, CampaignGoods, rows);
    const answer = toCampaignGoodsResponse({ link: after, goods, media }, tenant.currency, tenant.baseUrl);
    await this.recordDepletion(tenant, em, campaignKey, { stock: (after.stock ?? 0) - delta }, after, answer);
    return { answer, campaign };
  }

  /**
   * MySQL: no transaction. The campaign, the goods item, its media and its place are read first; the
   * change is one statement on its own (autocommit), so the item's row lock, which every order of that
   * item waits for, is held inside the database for that statement only, never across a round trip to
   * this node. Besides the stock and the derived status, the UPDATE requires the status and threshold
   * just read (so the answer built from that read is the row as the change left it; a status or threshold
   * changed meanwhile sends the order to apply) and, unless notify is off, a campaign whose viewers do not
   * see the stock: it reads the campaign row in share mode for that statement, so it either runs before a
   * writer turning showStock on commits, or sees it on. The new stock comes back in the statement's own
   * answer (LAST_INSERT_ID(expr) sets the OK packet's insert id). A change that would run the stock out
   * goes to apply, which records campaign.stockDepleted in the change's transaction.
   */
  private async fastOnMysql(em: EntityManager, tenant: Tenant, campaignKey: string, locator: GoodsLocator, notify: boolean, delta: number) {
    const { campaign, goods, media, place } = await this.orderContext(em, tenant, campaignKey, locator);
    if (campaign.showStock && notify) throw NEEDS_EVENTS;
    const now = new Date();
    // With notify, the campaign row is read (in share mode) before the item's, in the order every campaign
    // writer locks them, so that the two never wait for each other in a cycle.
    const tables = notify ? 'campaigns c STRAIGHT_JOIN campaign_goods cg ON cg.campaignId = c.id' : 'campaign_goods cg';
    const done: { affectedRows: number; insertId: number | string } = await em.query(
      `UPDATE ${tables} SET cg.stock = LAST_INSERT_ID(cg.stock + ?), cg.updatedAt = ? ` +
        'WHERE cg.campaignId = ? AND cg.goodsId = ? AND cg.stock IS NOT NULL AND cg.stock + ? BETWEEN 1 AND ? ' +
        `AND cg.salesStatus = ? AND cg.almostSoldOutAt <=> ? AND cg.salesStatus = ${statusOfStockSql('cg.stock + ?', 'cg.almostSoldOutAt')}` +
        (notify ? ' AND c.id = ? AND c.showStock = 0' : ''),
      [
        delta,
        this.datetime(em, now),
        campaign.id,
        goods.id,
        delta,
        MAX_STOCK,
        place.salesStatus,
        place.almostSoldOutAt,
        delta,
        delta,
        ...(notify ? [campaign.id] : []),
      ],
    );
    if (done.affectedRows !== 1) {
      await this.refusal(em, campaign.id, campaignKey, goods.id, delta);
      throw NEEDS_EVENTS;
    }
    const after = Object.assign(place, { stock: Number(done.insertId), updatedAt: now });
    return { answer: toCampaignGoodsResponse({ link: after, goods, media }, tenant.currency, tenant.baseUrl), campaign };
  }

  /**
   * Everything an order reads, in one statement: the campaign (its id and showStock), the goods item the
   * locator names, its place in the campaign and its media. 404 -710 for an unknown campaign, -404 for an
   * unknown item, -711 for an item not in the campaign, in that order.
   */
  private async orderContext(em: EntityManager, tenant: Tenant, campaignKey: string, locator: GoodsLocator) {
    const [column, value] = locatorColumn(locator);
    let sql = this.orderSql.get(column);
    if (!sql) {
      sql =
        `SELECT c.id AS c_id, c.campaignKey AS c_campaignKey, c.showStock AS c_showStock, ${aliasedColumns(em, Goods, 'g')}, ` +
        `${aliasedColumns(em, CampaignGoods, 'cg')}, ${aliasedColumns(em, Media, 'm')} FROM campaigns c ` +
        `LEFT JOIN goods g ON g.customerId = c.customerId AND g.${column} = ? ` +
        'LEFT JOIN campaign_goods cg ON cg.campaignId = c.id AND cg.goodsId = g.id LEFT JOIN media m ON m.goodsId = g.id ' +
        'WHERE c.customerId = ? AND c.campaignKey = ?';
      this.orderSql.set(column, sql);
    }
    const rows: Array<Record<string, unknown>> = await em.query(sql, [value, tenant.id, campaignKey]);
    const row = rows.find((r) => sameKey(String(r.c_campaignKey), campaignKey));
    if (!row) throw campaignNotFound(campaignKey);
    const goods = hydrateAliased(em, Goods, 'g', row);
    if (!goods) throw goodsNotFound(locator);
    const place = hydrateAliased(em, CampaignGoods, 'cg', row);
    if (!place) throw notInCampaign(goods.id, campaignKey);
    const campaign = { id: Number(row.c_id), showStock: Boolean(Number(row.c_showStock)) };
    return { campaign, goods, place, media: hydrateAliased(em, Media, 'm', row) };
  }

  /** A time as the engine stores a campaign_goods datetime (what TypeORM would write). */
  private datetime(em: EntityManager, at: Date): unknown {
    const column = em.connection.getMetadata(CampaignGoods).findColumnWithPropertyName('updatedAt') as ColumnMetadata;
    return em.connection.driver.preparePersistentValue(at, column);
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
