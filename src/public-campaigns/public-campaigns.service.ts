import { Injectable } from '@nestjs/common';
import { Between, FindOptionsWhere, In, LessThanOrEqual, MoreThan, MoreThanOrEqual } from 'typeorm';
import { CampaignListResponse, CampaignResponse, NotExistResponse, toCampaignResponse } from '../campaigns/dto/campaign-response.dto';
import { findCampaignByKey } from '../campaigns/campaign-writer';
import { Campaign, CampaignStatus } from '../campaigns/entities/campaign.entity';
import { CustomersService } from '../customers/customers.service';
import { CampaignViews } from '../campaigns/campaign-views';
import { Transactions } from '../database/transactions';
import { ViewerCounter } from '../live/viewer-counter';
import { PublicCampaignListQuery, UpcomingQuery } from './dto/public-campaigns.query';
import { CachedAnswer, FreshAnswer, KeptAnswer, PublicAnswerCache, withCounts } from './public-answer-cache';

/** The goods ids an answer shows (its summaries give them as text). */
function goodsIdsOf(campaigns: Array<CampaignResponse | NotExistResponse>): number[] {
  return campaigns.flatMap((c) => ('goods' in c && c.goods ? c.goods.map((g) => Number(g.goodsId)) : []));
}

/**
 * Public broadcast information (no token). Only collection-visible campaigns are listed; a known key
 * answers even when private; an unknown one (or an unknown access key) is `NOT_EXIST`, with HTTP 200.
 * Answers are served from PublicAnswerCache for the max-age their Cache-Control announces (see there for
 * what drops them sooner); `answerList`, `answerOne` and `answerUpcoming` answer through it.
 */
@Injectable()
export class PublicCampaignsService {
  constructor(
    private readonly db: Transactions,
    private readonly customers: CustomersService,
    private readonly views: CampaignViews,
    private readonly counter: ViewerCounter,
    private readonly cache: PublicAnswerCache,
  ) {}

  async answerList(accessKey: string, baseUrl: string, query: PublicCampaignListQuery): Promise<CachedAnswer> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return this.withCounts(PublicAnswerCache.kept(await this.list(accessKey, baseUrl, query), []));
    const status = query.status?.length ? [...new Set(query.status)].sort().join(',') : '*';
    const key = ['list', baseUrl, status, query.from?.getTime() ?? '', query.to?.getTime() ?? '', query.page, query.count, query.detail ? 1 : 0].join('\u0000');
    const kept = await this.cache.answer(customer.id, key, async (): Promise<FreshAnswer> => {
      const body = await this.list(accessKey, baseUrl, query);
      return { body, campaignId: null, campaignIds: body.results.map((c) => Number(c.campaignId)), goodsIds: goodsIdsOf(body.results) };
    });
    return this.withCounts(kept);
  }

  async answerOne(accessKey: string, campaignKey: string, baseUrl: string): Promise<CachedAnswer> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return this.withCounts(PublicAnswerCache.kept(await this.one(accessKey, campaignKey, baseUrl), []));
    const kept = await this.cache.answer(customer.id, ['one', baseUrl, campaignKey].join('\u0000'), async (): Promise<FreshAnswer> => {
      const campaign = await findCampaignByKey(this.db.manager, customer.id, campaignKey);
      if (!campaign) return { body: { campaignKey, campaignStatus: 'NOT_EXIST' }, campaignId: null, campaignIds: [], goodsIds: [], keep: false };
      const body = await this.detail(campaign, customer.currency, baseUrl);
      return { body, campaignId: campaign.id, campaignIds: [campaign.id], goodsIds: goodsIdsOf([body]) };
    });
    return this.withCounts(kept);
  }

  async answerUpcoming(accessKey: string, baseUrl: string, query: UpcomingQuery): Promise<CachedAnswer> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return this.withCounts(PublicAnswerCache.kept(await this.upcoming(accessKey, baseUrl, query), []));
    const kept = await this.cache.answer(
      customer.id,
      ['upcoming', baseUrl, query.includeOnAir !== false ? 1 : 0].join('\u0000'),
      async (): Promise<FreshAnswer> => {
        const body = await this.upcoming(accessKey, baseUrl, query);
        return { body, campaignId: null, campaignIds: 'campaignId' in body ? [Number(body.campaignId)] : [], goodsIds: goodsIdsOf([body]) };
      },
    );
    return this.withCounts(kept);
  }

  /** The kept answer with the current viewer counts of its campaigns (read on every request, as before the cache). */
  private async withCounts(kept: KeptAnswer): Promise<CachedAnswer> {
    if (!kept.campaignIds.length) return withCounts(kept, []);
    const counts = await this.counter.counts(kept.campaignIds);
    return withCounts(
      kept,
      kept.campaignIds.map((id) => counts.get(id) ?? 0),
    );
  }

  async list(accessKey: string, baseUrl: string, query: PublicCampaignListQuery): Promise<CampaignListResponse> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return { results: [], totalCount: 0, _s: 0 };
    const where: FindOptionsWhere<Campaign> = { customerId: customer.id, collectionVisible: true };
    if (query.status?.length) where.campaignStatus = In(query.status as CampaignStatus[]);
    if (query.from && query.to) where.scheduledAt = Between(query.from, query.to);
    else if (query.from) where.scheduledAt = MoreThanOrEqual(query.from);
    else if (query.to) where.scheduledAt = LessThanOrEqual(query.to);
    // By scheduledAt, soonest first; campaigns without a schedule come last (then by creation, oldest first).
    const [rows, totalCount] = await this.db.manager
      .createQueryBuilder(Campaign, 'c')
      .where(where)
      .addSelect('CASE WHEN c.scheduledAt IS NULL THEN 1 ELSE 0 END', 'unscheduled')
      .orderBy('unscheduled', 'ASC')
      .addOrderBy('c.scheduledAt', 'ASC')
      .addOrderBy('c.id', 'ASC')
      .offset((query.page - 1) * query.count)
      .limit(query.count)
      .getManyAndCount();
    const counts = await this.counter.counts(rows.map((c) => c.id));
    // With detail, the goods of every campaign of the page in one read (not a read per campaign at once,
    // which took as many pooled connections as the page has campaigns); goods they share are read once.
    const goods = query.detail
      ? await this.views.summariesOf(
          this.db.manager,
          rows.map((c) => c.id),
          customer.currency,
          baseUrl,
          new Set(rows.filter((c) => c.showStock).map((c) => c.id)),
        )
      : undefined;
    const results = rows.map((c) => toCampaignResponse(c, counts.get(c.id) ?? 0, { description: !!query.detail, goods: goods?.get(c.id) }));
    return { results, totalCount, _s: 0 };
  }

  async one(accessKey: string, campaignKey: string, baseUrl: string): Promise<CampaignResponse | NotExistResponse> {
    const customer = await this.customers.findByAccessKey(accessKey);
    const campaign = customer ? await findCampaignByKey(this.db.manager, customer.id, campaignKey) : null;
    if (!customer || !campaign) return { campaignKey, campaignStatus: 'NOT_EXIST' };
    return this.detail(campaign, customer.currency, baseUrl);
  }

  /**
   * The running campaign (includeOnAir) or else the soonest READY one scheduled after now; only
   * collection-visible campaigns, whatever the parameters (no token here).
   */
  async upcoming(accessKey: string, baseUrl: string, query: UpcomingQuery): Promise<CampaignResponse | NotExistResponse> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return { campaignStatus: 'NOT_EXIST' };
    const em = this.db.manager;
    let campaign: Campaign | null = null;
    if (query.includeOnAir !== false) {
      campaign = await em.findOne(Campaign, {
        where: { customerId: customer.id, campaignStatus: 'ONAIR', collectionVisible: true },
        order: { startedAt: 'DESC', id: 'DESC' },
      });
    }
    campaign ??= await em.findOne(Campaign, {
      where: { customerId: customer.id, campaignStatus: 'READY', scheduledAt: MoreThan(new Date()), collectionVisible: true },
      order: { scheduledAt: 'ASC', id: 'ASC' },
    });
    if (!campaign) return { campaignStatus: 'NOT_EXIST' };
    return this.detail(campaign, customer.currency, baseUrl);
  }

  private async detail(campaign: Campaign, currency: string, baseUrl: string): Promise<CampaignResponse> {
    const goods = await this.views.summaries(this.db.manager, campaign.id, currency, baseUrl, campaign.showStock);
    return toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true, goods });
  }
}
