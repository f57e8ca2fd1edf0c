import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { renumberCampaignGoods, writePlaces } from '../campaigns/campaign-goods-order';
import { CampaignViews } from '../campaigns/campaign-views';
import { CampaignWriter } from '../campaigns/campaign-writer';
import { toCampaignGoodsResponse } from '../campaigns/dto/campaign-response.dto';
import { CampaignGoods } from '../campaigns/entities/campaign-goods.entity';
import { Campaign } from '../campaigns/entities/campaign.entity';
import { TimeSlicer } from '../common/util/time-slicer';
import { insertRows } from '../database/bulk-sql';
import { JsonBytes, JsonChunks } from '../http/sliced-json';
import { Transactions } from '../database/transactions';
import { AppConfig } from '../config/app-config';
import { findGoodsIdsOrFail, findGoodsOrFail } from '../goods/goods-lookup';
import type { PendingEvent } from '../live/live-events';
import { CampaignGoodsRefsDto, GoodsOrderDto } from './dto/campaign-goods-requests.dto';

/**
 * Places inserted per statement when goods are added. One statement for all of them made TypeORM's
 * read-back of a 998–1,000-row insert on SQLite a 500 ("Expression tree is too large (maximum depth
 * 1000)"); insertRows reads nothing back, and 400 rows (11 columns: 4,400 parameters) is the project's
 * usual chunk on both engines.
 */
const INSERT_CHUNK = 400;

/**
 * Goods read at a time for the console's list: a goods item is up to about 32 KB with its description
 * (10,000 characters of Hangul), so a read stays near 1 MB.
 */
const LIST_CHUNK = 32;

/** 413 -413 for an add that would take the campaign past CAMPAIGN_MAX_GOODS (nothing is added). */
export function tooManyGoods(campaignKey: string, holds: number, adding: number, max: number): ApiException {
  return new ApiException(
    ErrorCode.TooLarge,
    `A campaign holds at most ${max} goods (CAMPAIGN_MAX_GOODS); campaign ${campaignKey} holds ${holds} and this would add ${adding}`,
  );
}

export function notInCampaign(goodsId: number, campaignKey: string): ApiException {
  return new ApiException(ErrorCode.GoodsNotInCampaign, `Goods ${goodsId} is not in campaign ${campaignKey}`);
}

/**
 * The 404 for a goods id the campaign does not hold: -404 when the customer has no such goods item at
 * all (findGoodsOrFail throws it), -711 when it exists but is not in this campaign. Read only on that error path.
 */
async function missingFromCampaign(em: EntityManager, tenant: Tenant, goodsId: number, campaignKey: string): Promise<ApiException> {
  await findGoodsOrFail(em, tenant.id, { by: 'id', id: goodsId });
  return notInCampaign(goodsId, campaignKey);
}

/** The goods of a campaign: add, list, reorder, the item showing now, remove. Viewers get each new list. */
@Injectable()
export class CampaignGoodsService {
  constructor(
    private readonly db: Transactions,
    private readonly writer: CampaignWriter,
    private readonly views: CampaignViews,
    private readonly config: AppConfig,
  ) {}

  async list(tenant: Tenant, campaignKey: string): Promise<JsonBytes> {
    const campaign = await this.writer.find(this.db.manager, tenant, campaignKey);
    return this.listOf(tenant, campaign.id);
  }

  /**
   * Appends goods (by ids, skus or urls) in the given order with ON_SALE, at places n+1…; ones already in
   * are skipped. Past CAMPAIGN_MAX_GOODS it is 413 and nothing is added (the count is read under the
   * campaign's lock, so two adds racing cannot both pass it).
   */
  add(tenant: Tenant, campaignKey: string, body: CampaignGoodsRefsDto): Promise<JsonBytes> {
    return this.changeList(tenant, campaignKey, async (em, campaign) => {
      const ids = await this.resolve(em, tenant, body);
      const existing = await em.find(CampaignGoods, { where: { campaignId: campaign.id } });
      const present = new Set(existing.map((l) => l.goodsId));
      let order = existing.reduce((max, l) => Math.max(max, l.sortOrder), 0);
      const now = new Date();
      const added = ids
        .filter((id, i) => !present.has(id) && ids.indexOf(id) === i)
        .map((goodsId) =>
          Object.assign(new CampaignGoods(), {
            campaignId: campaign.id,
            goodsId,
            sortOrder: (order += 1),
            showingNow: false,
            salesStatus: 'ON_SALE' as const,
            stock: null,
            almostSoldOutAt: null,
            adminName: null,
            adminId: '',
            createdAt: now,
            updatedAt: now,
          }),
        );
      const max = this.config.limits.campaignMaxGoods;
      if (existing.length + added.length > max) throw tooManyGoods(campaignKey, existing.length, added.length, max);
      for (let i = 0; i < added.length; i += INSERT_CHUNK) await insertRows(em, CampaignGoods, added.slice(i, i + INSERT_CHUNK));
      return added.length > 0;
    });
  }

  /** Listed ids first, in that order; the others after them, in their old order. */
  reorder(tenant: Tenant, campaignKey: string, body: GoodsOrderDto): Promise<JsonBytes> {
    return this.changeList(tenant, campaignKey, async (em, campaign) => {
      const links = await em.find(CampaignGoods, { where: { campaignId: campaign.id }, order: { sortOrder: 'ASC' } });
      const byId = new Map(links.map((l) => [l.goodsId, l]));
      const missing = body.goodsIds.find((id) => !byId.has(id));
      if (missing !== undefined) throw await missingFromCampaign(em, tenant, missing, campaignKey);
      const listed = new Set(body.goodsIds);
      const ordered = [...listed].map((id) => byId.get(id) as CampaignGoods).concat(links.filter((l) => !listed.has(l.goodsId)));
      const moves = ordered.map((link, i) => ({ goodsId: link.goodsId, place: i + 1 })).filter((m, i) => ordered[i].sortOrder !== m.place);
      await writePlaces(em, campaign.id, moves);
      return moves.length > 0;
    });
  }

  /** At most one item shows at a time: showing one stops the others. */
  setShowing(tenant: Tenant, campaignKey: string, goodsId: number, showingNow: boolean): Promise<JsonBytes> {
    return this.changeList(tenant, campaignKey, async (em, campaign) => {
      const link = await em.findOne(CampaignGoods, { where: { campaignId: campaign.id, goodsId } });
      if (!link) throw await missingFromCampaign(em, tenant, goodsId, campaignKey);
      // Showing the item already showing, or stopping one that is not, changes nothing: no updatedAt
      // moves and no event goes (at most one item shows: the others are not showing either way).
      if (showingNow === link.showingNow) return false;
      const now = new Date();
      if (showingNow) {
        await em.update(CampaignGoods, { campaignId: campaign.id, showingNow: true }, { showingNow: false, updatedAt: now });
      }
      await em.update(CampaignGoods, { campaignId: campaign.id, goodsId }, { showingNow, updatedAt: now });
      return true;
    });
  }

  /** Removes the item from the campaign; the goods after it move up one place (sortOrder stays 1..n). */
  remove(tenant: Tenant, campaignKey: string, goodsId: number): Promise<JsonBytes> {
    return this.changeList(tenant, campaignKey, async (em, campaign) => {
      const result = await em.delete(CampaignGoods, { campaignId: campaign.id, goodsId });
      if (!result.affected) throw await missingFromCampaign(em, tenant, goodsId, campaignKey);
      // The places stay 1..n: the goods after the removed one move up, in this transaction.
      await renumberCampaignGoods(em, campaign.id);
      return true;
    });
  }

  /**
   * The campaign's goods for the console, as the JSON of a CampaignGoodsListResponse: every goods item
   * whole (up to CAMPAIGN_MAX_GOODS items of up to about 30 KB each, 30 MB), read LIST_CHUNK goods at a
   * time outside any transaction and written as they are read, the event loop free between the reads:
   * neither the entities, nor the answer's objects, nor its text are ever held whole, only its UTF-8
   * chunks. (Read at once, 1,000 such goods held the event loop about 150 ms on SQLite, and the answer's
   * JSON.stringify, encoding, hashing and write 150 ms more.)
   */
  private async listOf(tenant: Tenant, campaignId: number): Promise<JsonBytes> {
    const em = this.db.manager;
    const slicer = TimeSlicer.forRequest();
    const links = await em.find(CampaignGoods, { where: { campaignId }, order: { sortOrder: 'ASC', goodsId: 'ASC' } });
    const out = new JsonChunks();
    out.write('{"results":[');
    let count = 0;
    for (let i = 0; i < links.length; i += LIST_CHUNK) {
      if (i) await slicer.pause();
      for (const row of await this.views.rowsOf(em, links.slice(i, i + LIST_CHUNK))) {
        out.write(`${count ? ',' : ''}${JSON.stringify(toCampaignGoodsResponse(row, tenant.currency, tenant.baseUrl))}`);
        count += 1;
      }
    }
    out.write(`],"totalCount":${count},"_s":0}`);
    return out.end();
  }

  /**
   * A change of the campaign's goods list: `work` changes it in the campaign's transaction and tells
   * whether the list changed; if so, the viewers get a goods.list (their summary form, read in that
   * transaction). The answer, the console's full list, is read after the commit (listOf): it then shows
   * the campaign as this change left it, or as a change committed right after it did.
   */
  private async changeList(tenant: Tenant, campaignKey: string, work: (em: EntityManager, campaign: Campaign) => Promise<boolean>): Promise<JsonBytes> {
    const campaignId = await this.writer.change(tenant, campaignKey, async (em, campaign) => {
      if (!(await work(em, campaign))) return { result: campaign.id, events: [] };
      // Read a few hundred goods at a time: on SQLite, the transaction's statements would otherwise run
      // in one turn of the event loop, and for 1,000 goods they held it for 60–75 ms.
      const goods = await this.views.summaries(em, campaign.id, tenant.currency, tenant.baseUrl, campaign.showStock, TimeSlicer.forRequest());
      const events: PendingEvent[] = [{ type: 'goods.list', payload: { goods } }];
      return { result: campaign.id, events };
    });
    return this.listOf(tenant, campaignId);
  }

  private resolve(em: EntityManager, tenant: Tenant, refs: CampaignGoodsRefsDto): Promise<number[]> {
    const given = [refs.goodsIds, refs.skus, refs.urls].filter((r) => r !== undefined);
    if (given.length !== 1) {
      throw ApiException.invalid('Send exactly one of goodsIds, skus or urls', [{ field: 'goodsIds', message: 'exactly one of goodsIds, skus or urls' }]);
    }
    // Read with a shared lock: the links written next refer to these goods (see findGoodsIdsOrFail).
    if (refs.goodsIds) return findGoodsIdsOrFail(em, tenant.id, 'id', refs.goodsIds);
    return refs.skus ? findGoodsIdsOrFail(em, tenant.id, 'sku', refs.skus) : findGoodsIdsOrFail(em, tenant.id, 'url', refs.urls ?? []);
  }
}
