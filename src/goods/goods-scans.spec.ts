import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import type { Transactions } from '../database/transactions';
import type { MediaService } from '../media/media.service';
import type { Metrics } from '../metrics/metrics.service';
import type { GoodsChangeHooks } from './goods-changes';
import type { GoodsDeletionHooks } from './goods-deletion';
import { GoodsListCache } from './goods-list-cache';
import type { GoodsSearchCorpus } from './goods-search-corpus';
import { GoodsService, SCANS_AT_ONCE, SCANS_PER_CUSTOMER, SCANS_WAITING_PER_CUSTOMER } from './goods.service';

/**
 * Keyword scans (searches the in-memory corpus cannot answer) go through the node's scan gate: a few at
 * once, one customer's at most SCANS_PER_CUSTOMER, so one customer's searches never take every database
 * connection. The catalog here answers every scan when the test says.
 */
function scanningService() {
  const scans: Array<{ customerId: number; end: () => void }> = [];
  const manager = {
    query: (sql: string, params: unknown[]) => {
      if (sql.startsWith('SELECT catalogVersion')) return Promise.resolve([{ v: 1 }]);
      if (sql.startsWith('SELECT id FROM goods')) {
        return new Promise((resolve) => scans.push({ customerId: params[0] as number, end: () => resolve([]) }));
      }
      throw new Error(`unexpected query: ${sql}`);
    },
  };
  const refusals: unknown[] = [];
  const metrics = { countGate: jest.fn(), workRefusals: { inc: (labels: unknown) => refusals.push(labels) } } as unknown as Metrics;
  const corpus = { match: () => Promise.resolve(undefined) } as unknown as GoodsSearchCorpus;
  const service = new GoodsService(
    { manager } as unknown as Transactions,
    new GoodsListCache(),
    corpus,
    {} as MediaService,
    {} as GoodsDeletionHooks,
    {} as GoodsChangeHooks,
    metrics,
  );
  const search = (customerId: number, keyword: string) => service.list({ id: customerId } as Tenant, { searchKeyword: keyword, page: 1, count: 30 });
  return { search, scans, refusals };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('GoodsService: keyword scans a few at a time', () => {
  it(`runs ${SCANS_AT_ONCE} scans at once, ${SCANS_PER_CUSTOMER} of one customer's, and refuses a customer's past ${SCANS_WAITING_PER_CUSTOMER} waiting`, async () => {
    const { search, scans, refusals } = scanningService();
    const mine = Array.from({ length: SCANS_PER_CUSTOMER + SCANS_WAITING_PER_CUSTOMER }, (_, i) => search(1, `keyword ${i}`));
    await turn();
    expect(scans.map((s) => s.customerId)).toEqual(Array(SCANS_PER_CUSTOMER).fill(1));
    const refused = await search(1, 'one too many').then(
      () => undefined,
      (err: unknown) => err as ApiException,
    );
    expect(refused?.code).toBe(ErrorCode.Unavailable);
    expect(refusals).toEqual([{ work: 'search-scan', reason: 'full' }]);
    // Another customer's search is scanned at once, beside customer 1's.
    const other = search(2, 'mine');
    await turn();
    expect(scans.map((s) => s.customerId)).toEqual([...Array(SCANS_PER_CUSTOMER).fill(1), 2]);
    while (scans.length) {
      (scans.shift() as { end: () => void }).end();
      await turn();
      await turn();
    }
    expect((await other).totalCount).toBe(0);
    expect(await Promise.all(mine)).toHaveLength(SCANS_PER_CUSTOMER + SCANS_WAITING_PER_CUSTOMER);
  });
});
