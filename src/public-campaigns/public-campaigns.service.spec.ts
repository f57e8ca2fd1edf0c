import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { CampaignChanges } from '../campaigns/campaign-changes';
import type { CampaignViews } from '../campaigns/campaign-views';
import type { CustomersService } from '../customers/customers.service';
import type { Transactions } from '../database/transactions';
import { GoodsChangeHooks } from '../goods/goods-changes';
import type { ViewerCounter } from '../live/viewer-counter';
import type { Metrics } from '../metrics/metrics.service';
import type { RateLimiter } from '../rate-limit/rate-limiter';
import etag from 'etag';
import { TimeSlicer } from '../common/util/time-slicer';
import { PublicAnswerCache, SerializedAnswer, withCounts } from './public-answer-cache';
import { PUBLIC_BUILDS_AT_ONCE, PUBLIC_BUILDS_WAITING, PUBLIC_BUILDS_WAITING_PER_CUSTOMER, PublicCampaignsService } from './public-campaigns.service';

/**
 * The build gate of public answers with goods: anyone may ask for them with ever new query values or
 * campaign keys, each a new answer to build, so at most PUBLIC_BUILDS_AT_ONCE are built at a time and
 * PUBLIC_BUILDS_WAITING more wait; past that a request is 503, not one more build in memory.
 */
describe('PublicCampaignsService: the build gate', () => {
  /** A service whose campaign reads wait until the test lets them go; access key `akN` is customer N. */
  function gatedService() {
    const reads: Array<() => void> = [];
    const started: string[] = [];
    let asked = '';
    const getOne = jest.fn(() => {
      started.push(asked);
      return new Promise<null>((resolve) => reads.push(() => resolve(null)));
    });
    const qb = { where: () => qb, andWhere: (_sql: string, params: { campaignKey: string }) => ((asked = params.campaignKey), qb), setLock: () => qb, getOne };
    const db = { manager: { createQueryBuilder: () => qb } } as unknown as Transactions;
    const customers = { findByAccessKey: (ak: string) => Promise.resolve({ id: Number(ak.slice(2)), currency: 'KRW' }) } as unknown as CustomersService;
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
      { hit: () => Promise.resolve({ allowed: true, retryAfterSeconds: 0 }) } as unknown as RateLimiter,
    );
    const refusalOf = (answer: Promise<unknown>) =>
      answer.then(
        () => undefined,
        (err: unknown) => err as ApiException,
      );
    const releaseAll = async () => {
      while (reads.length) {
        (reads.shift() as () => void)();
        await new Promise((r) => setImmediate(r));
      }
    };
    return { service, reads, started, getOne, refusals, refusalOf, releaseAll };
  }
  const turn = () => new Promise((r) => setImmediate(r));

  it(`builds ${PUBLIC_BUILDS_AT_ONCE} at once, lets ${PUBLIC_BUILDS_WAITING} wait, and answers 503 past that; a full line makes room for a customer with fewer waiting`, async () => {
    const { service, getOne, refusals, refusalOf, releaseAll } = gatedService();
    // Every key a new one (no two requests share a build), the waiting ones of two customers.
    const first = Array.from({ length: PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING_PER_CUSTOMER }, (_, i) =>
      service.answerOne('ak1', `key${i}`, 'http://h', '127.0.0.1'),
    );
    const second = Array.from({ length: PUBLIC_BUILDS_WAITING - PUBLIC_BUILDS_WAITING_PER_CUSTOMER }, (_, i) =>
      service.answerOne('ak2', `other${i}`, 'http://h', '127.0.0.1'),
    );
    await turn();
    expect(getOne).toHaveBeenCalledTimes(PUBLIC_BUILDS_AT_ONCE);
    // The line is full: one more of customer 2's is 503 at once.
    const refused = await refusalOf(service.answerOne('ak2', 'one-too-many', 'http://h', '127.0.0.1'));
    expect(refused).toBeInstanceOf(ApiException);
    expect({ code: refused?.code, headers: refused?.headers }).toEqual({ code: ErrorCode.Unavailable, headers: { 'Retry-After': '2' } });
    expect(refusals).toEqual([{ work: 'public-answer', reason: 'full' }]);
    // A third customer's takes the place of the newest of customer 1's (the first with the most waiting).
    const third = service.answerOne('ak3', 'third', 'http://h', '127.0.0.1');
    const evicted = await refusalOf(first[first.length - 1]);
    expect(evicted?.code).toBe(ErrorCode.Unavailable);
    expect(refusals).toHaveLength(2);
    // The waiting ones are built as turns free up, and all answered.
    await releaseAll();
    const answers = await Promise.all([...first.slice(0, -1), ...second, third]);
    expect(answers).toHaveLength(PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING);
    expect(JSON.parse(answers[5].json)).toEqual({ campaignKey: 'key5', campaignStatus: 'NOT_EXIST' });
    expect(JSON.parse(answers[answers.length - 1].json)).toEqual({ campaignKey: 'third', campaignStatus: 'NOT_EXIST' });
    expect(getOne).toHaveBeenCalledTimes(PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING);
  });

  it(`lets one customer's pages take ${PUBLIC_BUILDS_WAITING_PER_CUSTOMER} places in the line at most, and gives a free turn to another customer first`, async () => {
    const { service, started, refusalOf, releaseAll, reads } = gatedService();
    const flood = Array.from({ length: PUBLIC_BUILDS_AT_ONCE + PUBLIC_BUILDS_WAITING_PER_CUSTOMER }, (_, i) =>
      service.answerOne('ak1', `flood${i}`, 'http://h', '10.0.0.1'),
    );
    await turn();
    const refused = await refusalOf(service.answerOne('ak1', 'flood-more', 'http://h', '10.0.0.1'));
    expect(refused?.code).toBe(ErrorCode.Unavailable);
    // Another customer's answer still finds room, and takes the first turn that frees up.
    const other = service.answerOne('ak2', 'mine', 'http://h', '10.0.0.2');
    await turn();
    (reads.shift() as () => void)();
    await turn();
    await turn();
    expect(started.slice(PUBLIC_BUILDS_AT_ONCE, PUBLIC_BUILDS_AT_ONCE + 1)).toEqual(['mine']);
    await releaseAll();
    expect(JSON.parse((await other).json)).toEqual({ campaignKey: 'mine', campaignStatus: 'NOT_EXIST' });
    await Promise.all(flood);
  });

  it('an answer written ahead as JSON is kept as the same answer JSON.stringify would give', async () => {
    const body = { results: [{ campaignId: '1', userCount: 0, title: 'a' }], totalCount: 1, _s: 0 };
    expect(await PublicAnswerCache.kept(new SerializedAnswer([JSON.stringify(body)]), [1])).toEqual(await PublicAnswerCache.kept(body, [1]));
  });

  it('an answer written ahead in pieces, counts anywhere in them, is kept as the whole JSON would be, with the ETag Express gives it', async () => {
    const results = Array.from({ length: 5 }, (_, i) => ({
      campaignId: String(i),
      userCount: 0,
      title: `캠페인 ${i} "userCount":9`,
      goods: [{ name: '가'.repeat(i * 100) }],
    }));
    const body = { results, totalCount: 5, _s: 0 };
    const whole = JSON.stringify(body);
    // Pieces cut every 37 characters, except inside a userCount member (SerializedAnswer never cuts one).
    const members = [...whole.matchAll(/"userCount":\d+/g)].map((m) => [m.index, m.index + m[0].length]);
    const cuts = [0];
    for (let at = 37; at < whole.length; at += 37) if (!members.some(([from, to]) => at > from && at < to)) cuts.push(at);
    cuts.push(whole.length);
    const pieces = cuts.slice(1).map((end, i) => whole.slice(cuts[i], end));
    expect(pieces.length).toBeGreaterThan(20);
    const kept = await PublicAnswerCache.kept(new SerializedAnswer(pieces), [0, 1, 2, 3, 4], new TimeSlicer(0, 0));
    expect(kept).toEqual(await PublicAnswerCache.kept(body, [0, 1, 2, 3, 4]));
    expect(kept.etag).toBe(etag(whole, { weak: true }));
    const answer = withCounts(kept, [3, 1, 4, 1, 5]);
    expect(JSON.parse(answer.json)).toEqual({ ...body, results: results.map((r, i) => ({ ...r, userCount: [3, 1, 4, 1, 5][i] })) });
    expect(answer.length).toBe(Buffer.byteLength(answer.json));
    expect(Buffer.concat(answer.chunks).toString()).toBe(answer.json);
  });
});
