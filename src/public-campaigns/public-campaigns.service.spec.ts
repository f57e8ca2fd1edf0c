import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { CampaignChanges } from '../campaigns/campaign-changes';
import type { CampaignViews } from '../campaigns/campaign-views';
import type { CustomersService } from '../customers/customers.service';
import type { Transactions } from '../database/transactions';
import { GoodsChangeHooks } from '../goods/goods-changes';
import type { ViewerCounter } from '../live/viewer-counter';
import type { Metrics } from '../metrics/metrics.service';
import { PublicAnswerCache, SerializedAnswer } from './public-answer-cache';
import { PUBLIC_BUILDS_AT_ONCE, PUBLIC_BUILDS_WAITING, PublicCampaignsService } from './public-campaigns.service';

/**
 * The build gate of public answers with goods: anyone may ask for them with ever new query values or
 * campaign keys, each a new answer to build, so at most PUBLIC_BUILDS_AT_ONCE are built at a time and
 * PUBLIC_BUILDS_WAITING more wait; past that a request is 503, not one more build in memory.
 */
describe('PublicCampaignsService: the build gate', () => {
  it(`builds ${PUBLIC_BUILDS_AT_ONCE} at once, lets ${PUBLIC_BUILDS_WAITING} wait, and answers 503 past that`, async () => {
    const reads: Array<() => void> = [];
    // Each campaign read waits until the test lets it go.
    const getOne = jest.fn(() => new Promise<null>((resolve) => reads.push(() => resolve(null))));
    const qb = { where: () => qb, andWhere: () => qb, setLock: () => qb, getOne };
    const db = { manager: { createQueryBuilder: () => qb } } as unknown as Transactions;
    const customers = { findByAccessKey: () => Promise.resolve({ id: 1, currency: 'KRW' }) } as unknown as CustomersService;
    const refusals: unknown[] = [];
    const metrics = { countGate: jest.fn(), workRefusals: { inc: (labels: unknown) => refusals.push(labels) } } as unknown as Metrics;
    const cache = new PublicAnswerCache(new CampaignChanges(), new GoodsChangeHooks());
    const service = new PublicCampaignsService(
      db,
      customers,
      {} as CampaignViews,
      { counts: () => Promise.resolve(new Map()) } as unknown as ViewerCounter,
      cache,
      metrics,
    );

    // Every key a new one (no two requests share a build).
    const asked = Array.from({ length: PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING }, (_, i) => service.answerOne('ak', `key${i}`, 'http://h'));
    await new Promise((r) => setImmediate(r));
    expect(getOne).toHaveBeenCalledTimes(PUBLIC_BUILDS_AT_ONCE);
    const refused = await service.answerOne('ak', 'one-too-many', 'http://h').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ApiException);
    expect({ code: (refused as ApiException).code, headers: (refused as ApiException).headers }).toEqual({
      code: ErrorCode.Unavailable,
      headers: { 'Retry-After': '2' },
    });
    expect(refusals).toEqual([{ work: 'public-answer', reason: 'full' }]);
    // The waiting ones are built as turns free up, and all answered.
    while (reads.length) {
      (reads.shift() as () => void)();
      await new Promise((r) => setImmediate(r));
    }
    const answers = await Promise.all(asked);
    expect(answers).toHaveLength(PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING);
    expect(JSON.parse(answers[5].json)).toEqual({ campaignKey: 'key5', campaignStatus: 'NOT_EXIST' });
    expect(getOne).toHaveBeenCalledTimes(PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING);
  });

  it('an answer written ahead as JSON is kept as the same answer JSON.stringify would give', () => {
    const body = { results: [{ campaignId: '1', userCount: 0, title: 'a' }], totalCount: 1, _s: 0 };
    expect(PublicAnswerCache.kept(new SerializedAnswer(JSON.stringify(body)), [1])).toEqual(PublicAnswerCache.kept(body, [1]));
  });
});
