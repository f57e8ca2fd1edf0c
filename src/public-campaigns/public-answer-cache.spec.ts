import { CampaignChanges } from '../campaigns/campaign-changes';
import { GoodsChangeHooks } from '../goods/goods-changes';
import { FreshAnswer, MAX_ENTRIES, PUBLIC_MAX_AGE_SECONDS, PublicAnswerCache, withCounts } from './public-answer-cache';

function cache(): PublicAnswerCache {
  const c = new PublicAnswerCache(new CampaignChanges(), new GoodsChangeHooks());
  c.onModuleInit();
  return c;
}

const campaign = (id: number, title: string, goods: number[] = []): FreshAnswer => ({
  body: { campaignId: String(id), title, userCount: 0, goods: goods.map((g) => ({ goodsId: String(g), name: '"userCount":7' })) },
  campaignId: id,
  campaignIds: [id],
  goodsIds: goods,
});

describe('PublicAnswerCache', () => {
  afterEach(() => jest.restoreAllMocks());

  it('keeps an answer for the max-age, then builds it again', async () => {
    const c = cache();
    let built = 0;
    const build = () => Promise.resolve(campaign(1, `v${++built}`));
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now);
    const title = async () => (JSON.parse(withCounts(await c.answer(9, 'one', build), [0]).json) as { title: string }).title;
    expect(await title()).toBe('v1');
    expect(await title()).toBe('v1');
    jest.spyOn(Date, 'now').mockReturnValue(now + PUBLIC_MAX_AGE_SECONDS * 1000 - 1);
    expect(await title()).toBe('v1');
    jest.spyOn(Date, 'now').mockReturnValue(now + PUBLIC_MAX_AGE_SECONDS * 1000);
    expect(await title()).toBe('v2');
  });

  it("drops a campaign's answers and the customer's lists on its change, and answers showing a changed goods item", async () => {
    const c = cache();
    let n = 0;
    const get = async (customer: number, key: string, fresh: () => FreshAnswer) => (await c.answer(customer, key, () => Promise.resolve(fresh()))).parts[0];
    const ask = async () => [
      await get(9, 'one1', () => campaign(1, `a${++n}`, [100])),
      await get(9, 'one2', () => campaign(2, `b${++n}`, [200])),
      await get(9, 'list', () => ({ ...campaign(1, `l${++n}`), campaignId: null })),
      await get(8, 'one3', () => campaign(3, `c${++n}`)),
    ];
    const before = await ask();
    c.campaignChanged(9, 1);
    const after = await ask();
    expect(after.map((a, i) => a === before[i])).toEqual([false, true, false, true]);
    c.goodsChanged(9, [200]);
    const later = await ask();
    expect(later.map((a, i) => a === after[i])).toEqual([true, false, true, true]);
  });

  it('does not keep an answer built while its customer changed', async () => {
    const c = cache();
    let built = 0;
    const answer = c.answer(9, 'one', () => {
      built += 1;
      c.campaignChanged(9, 1); // committed while the answer was being read
      return Promise.resolve(campaign(1, 'old'));
    });
    await answer;
    await c.answer(9, 'one', () => Promise.resolve(campaign(1, 'new')));
    expect(built).toBe(1);
    expect(c.size.entries).toBe(1);
  });

  it(`keeps at most ${MAX_ENTRIES} answers, the least recently used dropped first`, async () => {
    const c = cache();
    for (let i = 0; i <= MAX_ENTRIES; i += 1) await c.answer(9, `k${i}`, () => Promise.resolve(campaign(i, 't')));
    expect(c.size.entries).toBe(MAX_ENTRIES);
    let rebuilt = false;
    await c.answer(9, 'k0', () => {
      rebuilt = true;
      return Promise.resolve(campaign(0, 't'));
    });
    expect(rebuilt).toBe(true);
  });

  it('answers the current userCount of each campaign, and an ETag that follows it; a userCount text in a string is left alone', async () => {
    const c = cache();
    const kept = await c.answer(9, 'one', () => Promise.resolve(campaign(1, 't', [5])));
    const a = withCounts(kept, [3]);
    const b = withCounts(kept, [4]);
    expect(JSON.parse(a.json)).toEqual({ campaignId: '1', title: 't', userCount: 3, goods: [{ goodsId: '5', name: '"userCount":7' }] });
    expect(JSON.parse(b.json).userCount).toBe(4);
    expect(a.etag).not.toBe(b.etag);
    expect(withCounts(kept, [3]).etag).toBe(a.etag);
  });
});
