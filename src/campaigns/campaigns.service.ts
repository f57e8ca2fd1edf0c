import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { Transactions } from '../database/transactions';
import { Goods } from '../goods/entities/goods.entity';
import { keyHash } from '../goods/goods-keys';
import { CampaignViews } from '../live/campaign-views';
import { PendingEvent } from '../live/live-events';
import { LiveNotifier } from '../live/live-notifier';
import { ViewerCounter } from '../live/viewer-counter';
import { CampaignStore, newCampaignKey } from './campaign-store';
import {
  CampaignGoodsListResponse,
  CampaignListResponse,
  CampaignResponse,
  ChatLineResponse,
  NoticeResponse,
  noticeOf,
  toCampaignGoodsResponse,
  toCampaignResponse,
  toChatLine,
} from './dto/campaign-response.dto';
import {
  CampaignGoodsRefsDto,
  CampaignStatusDto,
  ChatDto,
  CreateCampaignDto,
  GoodsOrderDto,
  ListCampaignsQuery,
  UpdateCampaignDto,
} from './dto/campaign-requests.dto';
import { CampaignChat } from './entities/campaign-chat.entity';
import { CampaignGoods } from './entities/campaign-goods.entity';
import { Campaign, CampaignStatus } from './entities/campaign.entity';

/** The only moves of the status machine. */
const NEXT: Record<CampaignStatus, CampaignStatus | null> = { READY: 'ONAIR', ONAIR: 'CLOSED', CLOSED: null };

export interface ChatResult {
  notice?: NoticeResponse | null;
  chat?: ChatLineResponse;
  _s: number;
}

export function notInCampaign(goodsId: number, campaignKey: string): ApiException {
  return new ApiException(ErrorCode.GoodsNotInCampaign, `Goods ${goodsId} is not in campaign ${campaignKey}`);
}

/** The campaigns console (CONTRACT §6): campaigns, their goods, status and operator messages. */
@Injectable()
export class CampaignsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly transactions: Transactions,
    private readonly store: CampaignStore,
    private readonly views: CampaignViews,
    private readonly counter: ViewerCounter,
    private readonly notifier: LiveNotifier,
  ) {}

  async create(tenant: Tenant, body: CreateCampaignDto): Promise<CampaignResponse> {
    const now = new Date();
    const campaign = Object.assign(new Campaign(), {
      customerId: tenant.id,
      campaignKey: newCampaignKey(),
      title: body.title,
      description: body.description ?? null,
      scheduledAt: body.scheduledAt ?? null,
      scheduledEndAt: body.scheduledEndAt ?? null,
      startedAt: null,
      endedAt: null,
      posterUrl: body.posterUrl ?? null,
      liveUrl: body.liveUrl ?? null,
      campaignStatus: 'READY' as const,
      operatorName: body.operatorName ?? null,
      collectionVisible: body.collectionVisible ?? false,
      noticeMessage: null,
      noticeAdminName: null,
      noticeAt: null,
      lastSeq: 0,
      createdAt: now,
      updatedAt: now,
    });
    await this.transactions.run(async (em) => {
      // A copy: after an insert TypeORM writes raw default values back into the object (MySQL's 1 for true).
      const result = await em.insert(Campaign, { ...campaign });
      campaign.id = Number(result.identifiers[0]?.id);
    });
    return toCampaignResponse(campaign, 0, { description: true });
  }

  async list(tenant: Tenant, query: ListCampaignsQuery): Promise<CampaignListResponse> {
    const [rows, totalCount] = await this.dataSource.manager.findAndCount(Campaign, {
      where: { customerId: tenant.id },
      order: { id: 'DESC' },
      skip: (query.page - 1) * query.count,
      take: query.count,
    });
    const counts = await this.counter.counts(rows.map((c) => c.id));
    return { results: rows.map((c) => toCampaignResponse(c, counts.get(c.id) ?? 0, { description: true })), totalCount, _s: 0 };
  }

  async get(tenant: Tenant, campaignKey: string): Promise<CampaignResponse> {
    const em = this.dataSource.manager;
    const campaign = await this.store.find(em, tenant, campaignKey);
    const goods = await this.views.summaries(em, campaign.id, tenant.currency, tenant.baseUrl);
    return toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true, goods });
  }

  update(tenant: Tenant, campaignKey: string, body: UpdateCampaignDto): Promise<CampaignResponse> {
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      const fields = ['title', 'description', 'scheduledAt', 'scheduledEndAt', 'posterUrl', 'liveUrl', 'operatorName', 'collectionVisible'] as const;
      for (const field of fields) {
        if (body[field] !== undefined) (campaign as unknown as Record<string, unknown>)[field] = body[field];
      }
      campaign.updatedAt = new Date();
      const { customer: _omit, ...columns } = campaign;
      await em.update(Campaign, { id: campaign.id }, columns);
      return { result: toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true }), events: [] };
    });
  }

  setStatus(tenant: Tenant, campaignKey: string, body: CampaignStatusDto): Promise<CampaignResponse> {
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      if (NEXT[campaign.campaignStatus] !== body.campaignStatus) {
        throw new ApiException(
          ErrorCode.InvalidTransition,
          `A ${campaign.campaignStatus} campaign cannot become ${body.campaignStatus} (READY → ONAIR → CLOSED only)`,
        );
      }
      const now = new Date();
      campaign.campaignStatus = body.campaignStatus;
      if (body.campaignStatus === 'ONAIR') campaign.startedAt = now;
      if (body.campaignStatus === 'CLOSED') campaign.endedAt = now;
      campaign.updatedAt = now;
      await em.update(
        Campaign,
        { id: campaign.id },
        { campaignStatus: campaign.campaignStatus, startedAt: campaign.startedAt, endedAt: campaign.endedAt, updatedAt: now },
      );
      const event: PendingEvent = {
        type: 'campaign.status',
        payload: { campaignStatus: campaign.campaignStatus, startedAt: campaign.startedAt?.getTime() ?? null, endedAt: campaign.endedAt?.getTime() ?? null },
      };
      return { result: toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true }), events: [event] };
    });
  }

  /** Deletes the campaign; its viewers get a last campaign.status NOT_EXIST and are disconnected. */
  async remove(tenant: Tenant, campaignKey: string): Promise<void> {
    const campaign = await this.transactions.run(async (em) => {
      const found = await this.store.find(em, tenant, campaignKey, true);
      await em.delete(Campaign, { id: found.id });
      return found;
    });
    this.store.publish([
      {
        campaignId: campaign.id,
        seq: campaign.lastSeq + 1,
        type: 'campaign.status',
        payload: { seq: campaign.lastSeq + 1, campaignStatus: 'NOT_EXIST', startedAt: campaign.startedAt?.getTime() ?? null, endedAt: campaign.endedAt?.getTime() ?? null },
      },
    ]);
    setTimeout(() => this.notifier.disconnectCampaign(campaign.id), 200).unref();
  }

  async listGoods(tenant: Tenant, campaignKey: string): Promise<CampaignGoodsListResponse> {
    const em = this.dataSource.manager;
    const campaign = await this.store.find(em, tenant, campaignKey);
    const rows = await this.views.goodsRows(em, campaign.id);
    return { results: rows.map((r) => toCampaignGoodsResponse(r, tenant.currency, tenant.baseUrl)), totalCount: rows.length, _s: 0 };
  }

  /** Appends goods (by ids, skus or urls) in the given order with ON_SALE; ones already in are skipped. */
  addGoods(tenant: Tenant, campaignKey: string, body: CampaignGoodsRefsDto): Promise<CampaignGoodsListResponse> {
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      const ids = await this.resolveGoods(em, tenant, body);
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
            adminName: null,
            adminId: '',
            createdAt: now,
            updatedAt: now,
          }),
        );
      if (added.length) await em.insert(CampaignGoods, added);
      return this.listAfterChange(em, tenant, campaign, added.length > 0);
    });
  }

  reorder(tenant: Tenant, campaignKey: string, body: GoodsOrderDto): Promise<CampaignGoodsListResponse> {
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      const links = await em.find(CampaignGoods, { where: { campaignId: campaign.id }, order: { sortOrder: 'ASC' } });
      const byId = new Map(links.map((l) => [l.goodsId, l]));
      for (const id of body.goodsIds) if (!byId.has(id)) throw notInCampaign(id, campaignKey);
      const listed = new Set(body.goodsIds);
      const ordered = [...new Set(body.goodsIds)].map((id) => byId.get(id) as CampaignGoods).concat(links.filter((l) => !listed.has(l.goodsId)));
      let changed = false;
      for (const [i, link] of ordered.entries()) {
        if (link.sortOrder === i + 1) continue;
        changed = true;
        await em.update(CampaignGoods, { campaignId: campaign.id, goodsId: link.goodsId }, { sortOrder: i + 1 });
      }
      return this.listAfterChange(em, tenant, campaign, changed);
    });
  }

  /** At most one item shows at a time: showing one stops the others. */
  setShowing(tenant: Tenant, campaignKey: string, goodsId: number, showingNow: boolean): Promise<CampaignGoodsListResponse> {
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      const link = await em.findOne(CampaignGoods, { where: { campaignId: campaign.id, goodsId } });
      if (!link) throw notInCampaign(goodsId, campaignKey);
      const now = new Date();
      if (showingNow) {
        await em.update(CampaignGoods, { campaignId: campaign.id, showingNow: true }, { showingNow: false, updatedAt: now });
      }
      await em.update(CampaignGoods, { campaignId: campaign.id, goodsId }, { showingNow, updatedAt: now });
      return this.listAfterChange(em, tenant, campaign, link.showingNow !== showingNow || showingNow);
    });
  }

  removeGoods(tenant: Tenant, campaignKey: string, goodsId: number): Promise<CampaignGoodsListResponse> {
    return this.store.mutate(tenant, campaignKey, async (em, campaign) => {
      const result = await em.delete(CampaignGoods, { campaignId: campaign.id, goodsId });
      if (!result.affected) throw notInCampaign(goodsId, campaignKey);
      return this.listAfterChange(em, tenant, campaign, true);
    });
  }

  /** A chat line, or (pinned) the notice; an empty pinned message unpins. */
  chat(tenant: Tenant, campaignKey: string, body: ChatDto): Promise<ChatResult> {
    return this.store.mutate<ChatResult>(tenant, campaignKey, async (em, campaign) => {
      const adminName = body.name?.trim() || tenant.operator.name || campaign.operatorName || null;
      const message = body.message.trim();
      const now = new Date();
      if (body.pinned) {
        const notice = await this.pinNotice(em, campaign, message, adminName, now);
        return { result: { notice: noticeOf(campaign), _s: 0 }, events: [notice] };
      }
      if (!message) throw ApiException.invalid('message must not be empty', [{ field: 'message', message: 'must not be empty' }]);
      const { line, event } = await this.postChat(em, campaign, message, adminName, now);
      return { result: { chat: toChatLine(line), _s: 0 }, events: [event] };
    });
  }

  /** Sets or clears the pinned notice; returns the chat.notice event. */
  async pinNotice(em: EntityManager, campaign: Campaign, message: string, adminName: string | null, now: Date): Promise<PendingEvent> {
    campaign.noticeMessage = message || null;
    campaign.noticeAdminName = message ? adminName : null;
    campaign.noticeAt = message ? now : null;
    await em.update(
      Campaign,
      { id: campaign.id },
      { noticeMessage: campaign.noticeMessage, noticeAdminName: campaign.noticeAdminName, noticeAt: campaign.noticeAt, updatedAt: now },
    );
    return { type: 'chat.notice', payload: { message, adminName, createdAt: now.getTime() } };
  }

  /** Stores an operator chat line; returns it and its chat.message event. */
  async postChat(
    em: EntityManager,
    campaign: Campaign,
    message: string,
    adminName: string | null,
    now: Date,
  ): Promise<{ line: CampaignChat; event: PendingEvent }> {
    const line = Object.assign(new CampaignChat(), { campaignId: campaign.id, message, adminName, createdAt: now });
    const inserted = await em.insert(CampaignChat, line);
    line.id = Number(inserted.identifiers[0]?.id);
    return { line, event: { type: 'chat.message', payload: { id: String(line.id), message, adminName, createdAt: now.getTime() } } };
  }

  private async listAfterChange(
    em: EntityManager,
    tenant: Tenant,
    campaign: Campaign,
    changed: boolean,
  ): Promise<{ result: CampaignGoodsListResponse; events: PendingEvent[] }> {
    const rows = await this.views.goodsRows(em, campaign.id);
    const result = { results: rows.map((r) => toCampaignGoodsResponse(r, tenant.currency, tenant.baseUrl)), totalCount: rows.length, _s: 0 };
    if (!changed) return { result, events: [] };
    const goods = await this.views.summaries(em, campaign.id, tenant.currency, tenant.baseUrl);
    return { result, events: [{ type: 'goods.list', payload: { goods } }] };
  }

  private async resolveGoods(em: EntityManager, tenant: Tenant, refs: CampaignGoodsRefsDto): Promise<number[]> {
    const given = [refs.goodsIds, refs.skus, refs.urls].filter((r) => r !== undefined);
    if (given.length !== 1) {
      throw ApiException.invalid('Send exactly one of goodsIds, skus or urls', [{ field: 'goodsIds', message: 'exactly one of goodsIds, skus or urls' }]);
    }
    const column = refs.goodsIds ? 'id' : refs.skus ? 'skuHash' : 'urlHash';
    const keys: Array<number | string> = refs.goodsIds ?? (refs.skus ?? refs.urls ?? []).map((k) => keyHash(k.trim()));
    const found = await em.find(Goods, { select: { id: true, skuHash: true, urlHash: true }, where: { customerId: tenant.id, [column]: In(keys) } });
    const idByKey = new Map(found.map((g) => [column === 'id' ? g.id : column === 'skuHash' ? g.skuHash : g.urlHash, g.id] as const));
    const missing = keys.map((k, i) => (idByKey.has(k) ? null : (refs.goodsIds ?? refs.skus ?? refs.urls ?? [])[i])).filter((k) => k !== null);
    if (missing.length) throw ApiException.notFound(`Goods not found: ${missing.slice(0, 20).join(', ')}`);
    return keys.map((k) => idByKey.get(k) as number);
  }
}

