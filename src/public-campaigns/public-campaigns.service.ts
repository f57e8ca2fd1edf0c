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
import { CachedAnswer, FreshAnswer, KeptAnswer, PublicAnswerCache, SerializedAnswer, withCounts } from './public-answer-cache';
import { ApiException } from '../common/errors/api.exception';
import { TimeSlicer } from '../common/util/time-slicer';
import { WorkGate, WorkGateError } from '../common/util/work-gate';
import { Metrics } from '../metrics/metrics.service';
import { RateLimiter } from '../rate-limit/rate-limiter';

/** Public answers with goods a node builds at once (see PublicCampaignsService.gated). */
export const PUBLIC_BUILDS_AT_ONCE = 2;
/** Public answers with goods that may wait for a turn to be built. */
export const PUBLIC_BUILDS_WAITING = 32;
/** Of those, the most that may be one customer's (so that the requests of one customer's pages never fill the line). */
export const PUBLIC_BUILDS_WAITING_PER_CUSTOMER = 16;
/** How long a public answer with goods may wait for its turn and be built. */
export const PUBLIC_BUILD_DEADLINE_MS = 10_000;

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
  private readonly builds = new WorkGate(PUBLIC_BUILDS_AT_ONCE, PUBLIC_BUILDS_WAITING, Infinity, PUBLIC_BUILDS_WAITING_PER_CUSTOMER);

  constructor(
    private readonly db: Transactions,
    private readonly customers: CustomersService,
    private readonly views: CampaignViews,
    private readonly counter: ViewerCounter,
    private readonly cache: PublicAnswerCache,
    private readonly metrics: Metrics,
    private readonly limiter: RateLimiter,
  ) {
    metrics.countGate('public-answer', this.builds);
  }

  /** `client`: the caller's address as the per-address limits count it (RATE_LIMIT_PUBLIC_BUILDS). */
  async answerList(accessKey: string, baseUrl: string, query: PublicCampaignListQuery, client: string): Promise<CachedAnswer> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return this.withCounts(await PublicAnswerCache.kept(await this.list(accessKey, baseUrl, query), []));
    const status = query.status?.length ? [...new Set(query.status)].sort().join(',') : '*';
    const key = ['list', baseUrl, status, query.from?.getTime() ?? '', query.to?.getTime() ?? '', query.page, query.count, query.detail ? 1 : 0].join('\u0000');
    const build = async (): Promise<FreshAnswer> => {
      const slicer = TimeSlicer.forRequest();
      const body = await this.list(accessKey, baseUrl, query, query.detail ? slicer : undefined);
      const campaignIds = body.results.map((c) => Number(c.campaignId));
      const goodsIds = goodsIdsOf(body.results);
      if (!query.detail) return { body, campaignId: null, campaignIds, goodsIds };
      // Written a campaign at a time (JSON.stringify of 20 campaigns of 1,000 goods is 15 MB in one go),
      // and kept in those pieces (see PublicAnswerCache.kept).
      const pieces = ['{"results":['];
      for (const [i, result] of body.results.entries()) {
        pieces.push(`${i ? ',' : ''}${JSON.stringify(result)}`);
        await slicer.pause();
      }
      pieces.push(`],"totalCount":${body.totalCount},"_s":0}`);
      return { body: new SerializedAnswer(pieces), campaignId: null, campaignIds, goodsIds, slicer };
    };
    // Only lists with goods are costly to build.
    const kept = await this.cache.answer(customer.id, key, query.detail ? () => this.gated(customer.id, client, build) : build);
    return this.withCounts(kept);
  }

  async answerOne(accessKey: string, campaignKey: string, baseUrl: string, client: string): Promise<CachedAnswer> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return this.withCounts(await PublicAnswerCache.kept(await this.one(accessKey, campaignKey, baseUrl), []));
    const kept = await this.cache.answer(customer.id, ['one', baseUrl, campaignKey].join('\u0000'), () =>
      this.gated(customer.id, client, async (): Promise<FreshAnswer> => {
        const campaign = await findCampaignByKey(this.db.manager, customer.id, campaignKey);
        if (!campaign) return { body: { campaignKey, campaignStatus: 'NOT_EXIST' }, campaignId: null, campaignIds: [], goodsIds: [], keep: false };
        const body = await this.detail(campaign, customer.currency, baseUrl);
        return { body, campaignId: campaign.id, campaignIds: [campaign.id], goodsIds: goodsIdsOf([body]) };
      }),
    );
    return this.withCounts(kept);
  }

  async answerUpcoming(accessKey: string, baseUrl: string, query: UpcomingQuery, client: string): Promise<CachedAnswer> {
    const customer = await this.customers.findByAccessKey(accessKey);
    if (!customer) return this.withCounts(await PublicAnswerCache.kept(await this.upcoming(accessKey, baseUrl, query), []));
    const kept = await this.cache.answer(customer.id, ['upcoming', baseUrl, query.includeOnAir !== false ? 1 : 0].join('\u0000'), () =>
      this.gated(customer.id, client, async (): Promise<FreshAnswer> => {
        const body = await this.upcoming(accessKey, baseUrl, query);
        return { body, campaignId: null, campaignIds: 'campaignId' in body ? [Number(body.campaignId)] : [], goodsIds: goodsIdsOf([body]) };
      }),
    );
    return this.withCounts(kept);
  }

  /**
   * Builds an answer that carries campaigns' goods in a turn of the node's build gate: anyone may ask
   * for them (no token), each new query value is a new answer, and one answer may hold up to 100
   * campaigns of CAMPAIGN_MAX_GOODS goods each, so at most PUBLIC_BUILDS_AT_ONCE are built at a time
   * (what they hold in memory while built is bounded so), PUBLIC_BUILDS_WAITING more wait, and past
   * that, or after PUBLIC_BUILD_DEADLINE_MS, the request is 503 with Retry-After. Each build counts
   * against its client's RATE_LIMIT_PUBLIC_BUILDS first (a new query value each time would otherwise
   * keep the node building for one address: 429 past it); a kept answer costs no build and counts nothing.
   * The gate is fair between the customers whose pages are asked for: a free turn goes to the customer
   * with the fewest builds running, and one customer's answers take at most
   * PUBLIC_BUILDS_WAITING_PER_CUSTOMER places in the line (a flood of new query values on one customer's
   * pages, from a single address, had every other customer's answers wait 10 s and then 503).
   */
  private async gated(customerId: number, client: string, build: () => Promise<FreshAnswer>): Promise<FreshAnswer> {
    const verdict = await this.limiter.hit('public-builds', client);
    if (!verdict.allowed) {
      throw ApiException.rateLimited(
        `Too many public answers with goods built for your address (${this.limiter.publicBuildsLimit}); ask for ones already answered, or retry after ${verdict.retryAfterSeconds} s`,
        verdict.retryAfterSeconds,
      );
    }
    try {
      return await this.builds.run(Date.now() + PUBLIC_BUILD_DEADLINE_MS, build, customerId);
    } catch (err) {
      if (!(err instanceof WorkGateError)) throw err;
      this.metrics.workRefusals.inc({ work: 'public-answer', reason: err.reason });
      throw ApiException.unavailable('The server is building other public campaign answers right now; try again shortly', 2);
    }
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

  /** The list; with `slicer`, the campaigns' goods are read one campaign after another, between turns of the event loop. */
  async list(accessKey: string, baseUrl: string, query: PublicCampaignListQuery, slicer?: TimeSlicer): Promise<CampaignListResponse> {
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
    // With detail, one campaign's goods after another (not a read per campaign all at once, which took as
    // many pooled connections as the page has campaigns), yielding between them, and between reads of a
    // few hundred of their goods, when sliced.
    const results: CampaignResponse[] = [];
    for (const c of rows) {
      const goods = query.detail ? await this.views.summaries(this.db.manager, c.id, customer.currency, baseUrl, c.showStock, slicer) : undefined;
      results.push(toCampaignResponse(c, counts.get(c.id) ?? 0, { description: !!query.detail, goods }));
      await slicer?.pause();
    }
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
    // Up to CAMPAIGN_MAX_GOODS goods: read a few hundred at a time.
    const goods = await this.views.summaries(this.db.manager, campaign.id, currency, baseUrl, campaign.showStock, TimeSlicer.forRequest());
    return toCampaignResponse(campaign, await this.counter.count(campaign.id), { description: true, goods });
  }
}
