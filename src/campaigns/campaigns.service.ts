import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { Transactions } from '../database/transactions';
import { CampaignViews } from './campaign-views';
import { PendingEvent } from '../live/live-events';
import { LiveNotifier } from '../live/live-notifier';
import { ViewerCounter } from '../live/viewer-counter';
import { adminNameOf, CampaignWriter, newCampaignKey } from './campaign-writer';
import {
  CampaignListResponse,
  CampaignResponse,
  ChatLineResponse,
  NoticeResponse,
  noticeOf,
  toCampaignResponse,
  toChatLine,
} from './dto/campaign-response.dto';
import { CampaignStatusDto, ChatDto, CreateCampaignDto, ListCampaignsQuery, UpdateCampaignDto } from './dto/campaign-requests.dto';
import { CampaignChat } from './entities/campaign-chat.entity';
import { Campaign, CampaignStatus } from './entities/campaign.entity';
import { WebhookEvents } from '../webhooks/webhook-events';
import { TimeSlicer } from '../common/util/time-slicer';

/** The only moves of the status machine. */
const NEXT: Record<CampaignStatus, CampaignStatus | null> = { READY: 'ONAIR', ONAIR: 'CLOSED', CLOSED: null };

export interface ChatResult {
  notice?: NoticeResponse | null;
  chat?: ChatLineResponse;
  _s: number;
}

/** What a PATCH may change (every one of them is part of the campaign record viewers get). */
const EDITABLE_FIELDS = [
  'title',
  'description',
  'scheduledAt',
  'scheduledEndAt',
  'posterUrl',
  'liveUrl',
  'operatorName',
  'collectionVisible',
  'showStock',
] as const;
type EditableField = (typeof EDITABLE_FIELDS)[number];

/** Stored and given values compare by what they mean: dates by their instant. */
function sameValue(stored: unknown, given: unknown): boolean {
  if (stored instanceof Date && given instanceof Date) return stored.getTime() === given.getTime();
  return stored === given;
}

/** A schedule ending before it starts is refused (either end may be unknown). */
function checkSchedule(campaign: Pick<Campaign, 'scheduledAt' | 'scheduledEndAt'>): void {
  const { scheduledAt, scheduledEndAt } = campaign;
  if (scheduledAt && scheduledEndAt && scheduledEndAt.getTime() < scheduledAt.getTime()) {
    const message = 'scheduledEndAt must not be before scheduledAt';
    throw ApiException.invalid(`Invalid argument: ${message}`, [{ field: 'scheduledEndAt', message }]);
  }
}

/** The campaigns console: campaigns, their status and operator messages (their goods: CampaignGoodsService). */
@Injectable()
export class CampaignsService {
  constructor(
    private readonly db: Transactions,
    private readonly store: CampaignWriter,
    private readonly views: CampaignViews,
    private readonly counter: ViewerCounter,
    private readonly notifier: LiveNotifier,
    private readonly webhooks: WebhookEvents,
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
      showStock: body.showStock ?? false,
      noticeMessage: null,
      noticeAdminName: null,
      noticeAt: null,
      lastSeq: 0,
      createdAt: now,
      updatedAt: now,
    });
    checkSchedule(campaign);
    await this.db.run(async (em) => {
      // A copy: after an insert TypeORM writes raw default values back into the object (MySQL's 1 for true).
      const result = await em.insert(Campaign, { ...campaign });
      campaign.id = Number(result.identifiers[0]?.id);
    });
    this.store.changed(tenant.id, null);
    return toCampaignResponse(campaign, 0, { description: true });
  }

  async list(tenant: Tenant, query: ListCampaignsQuery): Promise<CampaignListResponse> {
    const [rows, totalCount] = await this.db.manager.findAndCount(Campaign, {
      where: { customerId: tenant.id },
      order: { id: 'DESC' },
      skip: (query.page - 1) * query.count,
      take: query.count,
    });
    const counts = await this.counter.counts(rows.map((c) => c.id));
    return { results: rows.map((c) => toCampaignResponse(c, counts.get(c.id) ?? 0, { description: true })), totalCount, _s: 0 };
  }

  async get(tenant: Tenant, campaignKey: string): Promise<CampaignResponse> {
    const em = this.db.manager;
    const campaign = await this.store.find(em, tenant, campaignKey);
    // Up to CAMPAIGN_MAX_GOODS goods: read a few hundred at a time (one read of 1,000 held the event loop 35 ms).
    const goods = await this.views.summaries(em, campaign.id, tenant.currency, tenant.baseUrl, campaign.showStock, TimeSlicer.forRequest());
    return toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true, goods });
  }

  /**
   * Changes the given fields. When any value changed, viewers get `campaign.update` with the whole record
   * (as their snapshot shows it); a PATCH that changes nothing writes nothing and tells nobody.
   */
  update(tenant: Tenant, campaignKey: string, body: UpdateCampaignDto): Promise<CampaignResponse> {
    return this.store.change(tenant, campaignKey, async (em, campaign) => {
      const target = campaign as unknown as Record<EditableField, unknown>;
      let changed = false;
      for (const field of EDITABLE_FIELDS) {
        const value = body[field];
        if (value === undefined || sameValue(target[field], value)) continue;
        target[field] = value;
        changed = true;
      }
      checkSchedule(campaign);
      const userCount = await this.counter.count(campaign.id);
      if (!changed) return { result: toCampaignResponse(campaign, userCount, { description: true }), events: [] };
      campaign.updatedAt = new Date();
      const { customer: _omit, ...columns } = campaign;
      await em.update(Campaign, { id: campaign.id }, columns);
      const record = toCampaignResponse(campaign, userCount, { description: true });
      return { result: record, events: [{ type: 'campaign.update', payload: { campaign: { ...record } } }] };
    });
  }

  setStatus(tenant: Tenant, campaignKey: string, body: CampaignStatusDto): Promise<CampaignResponse> {
    return this.store.change(tenant, campaignKey, async (em, campaign) => {
      if (NEXT[campaign.campaignStatus] !== body.campaignStatus) {
        throw new ApiException(
          ErrorCode.InvalidTransition,
          `${campaign.campaignStatus === 'ONAIR' ? 'An' : 'A'} ${campaign.campaignStatus} campaign cannot become ${body.campaignStatus} (READY → ONAIR → CLOSED only)`,
        );
      }
      const now = new Date();
      const previousStatus = campaign.campaignStatus as 'READY' | 'ONAIR';
      campaign.campaignStatus = body.campaignStatus;
      if (body.campaignStatus === 'ONAIR') campaign.startedAt = now;
      if (body.campaignStatus === 'CLOSED') campaign.endedAt = now;
      campaign.updatedAt = now;
      await em.update(
        Campaign,
        { id: campaign.id },
        { campaignStatus: campaign.campaignStatus, startedAt: campaign.startedAt, endedAt: campaign.endedAt, updatedAt: now },
      );
      await this.webhooks.record(tenant.id, em, 'campaign.status', {
        campaignKey,
        campaignStatus: body.campaignStatus as 'ONAIR' | 'CLOSED',
        previousStatus,
        startedAt: campaign.startedAt?.getTime() ?? null,
        endedAt: campaign.endedAt?.getTime() ?? null,
      });
      const event: PendingEvent = {
        type: 'campaign.status',
        payload: { campaignStatus: campaign.campaignStatus, startedAt: campaign.startedAt?.getTime() ?? null, endedAt: campaign.endedAt?.getTime() ?? null },
      };
      return { result: toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true }), events: [event] };
    });
  }

  /** Deletes the campaign; its viewers get a last campaign.status NOT_EXIST and are disconnected. */
  async remove(tenant: Tenant, campaignKey: string): Promise<void> {
    const campaign = await this.db.run(async (em) => {
      const found = await this.store.find(em, tenant, campaignKey, true);
      await em.delete(Campaign, { id: found.id });
      return found;
    });
    this.store.changed(tenant.id, campaign.id);
    this.store.publish([
      {
        campaignId: campaign.id,
        seq: campaign.lastSeq + 1,
        type: 'campaign.status',
        payload: {
          seq: campaign.lastSeq + 1,
          campaignStatus: 'NOT_EXIST',
          startedAt: campaign.startedAt?.getTime() ?? null,
          endedAt: campaign.endedAt?.getTime() ?? null,
        },
      },
    ]);
    setTimeout(() => this.notifier.disconnectCampaign(campaign.id), 200).unref();
  }

  /** A chat line, or (pinned) the notice; an empty pinned message unpins. */
  chat(tenant: Tenant, campaignKey: string, body: ChatDto): Promise<ChatResult> {
    return this.store.change<ChatResult>(tenant, campaignKey, async (em, campaign) => {
      const adminName = adminNameOf(body.name, campaign, tenant);
      const message = body.message.trim();
      const now = new Date();
      if (body.pinned) {
        const notice = await this.pinNotice(em, campaign, message, adminName, now);
        return { result: { notice: noticeOf(campaign), _s: 0 }, events: [notice] };
      }
      if (!message) throw ApiException.invalid('Invalid argument: message must not be empty', [{ field: 'message', message: 'message must not be empty' }]);
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
}
