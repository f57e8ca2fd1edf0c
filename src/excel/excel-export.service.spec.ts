import { PassThrough } from 'node:stream';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import type { Transactions } from '../database/transactions';
import type { Metrics } from '../metrics/metrics.service';
import { EXPORTS_AT_ONCE, EXPORTS_WAITING_PER_CUSTOMER, ExcelExportService, GoodsExport } from './excel-export.service';

/** The export gate, with exports whose streams the test opens and closes (the catalog reads are the e2e tests'). */
function gatedExports() {
  const refusals: unknown[] = [];
  const metrics = { countGate: jest.fn(), workRefusals: { inc: (labels: unknown) => refusals.push(labels) } } as unknown as Metrics;
  const service = new ExcelExportService({} as Transactions, metrics);
  const streams: PassThrough[] = [];
  jest.spyOn(service as unknown as { open: () => Promise<GoodsExport> }, 'open').mockImplementation(() => {
    const stream = new PassThrough();
    streams.push(stream);
    return Promise.resolve({ stream, contentType: 'text/csv; charset=utf-8', filename: 'goods.csv' });
  });
  const exportOf = (customerId: number) => service.export({ id: customerId } as Tenant, { format: 'csv' });
  return { exportOf, streams, refusals, service };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Whether a promise has settled by now (after a turn of the event loop). */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await turn();
  return done;
}

describe('ExcelExportService: exports streamed at once', () => {
  it(`streams ${EXPORTS_AT_ONCE} at once, one per customer: a customer's second waits until its first has closed`, async () => {
    const { exportOf, streams } = gatedExports();
    const a1 = exportOf(1);
    expect(await settled(a1)).toBe(true);
    const a2 = exportOf(1);
    expect(await settled(a2)).toBe(false);
    // Another customer takes the node's other turn at once.
    const b1 = exportOf(2);
    expect(await settled(b1)).toBe(true);
    // A third customer waits for a turn of the node.
    const c1 = exportOf(3);
    expect(await settled(c1)).toBe(false);
    // Customer 1's first ends: the first waiting of the customers with nothing running gets its turn
    // (customer 1's second, which came first); customer 3 waits for the next.
    streams[0].destroy();
    await turn();
    expect(await settled(a2)).toBe(true);
    expect(await settled(c1)).toBe(false);
    streams[1].destroy();
    await turn();
    expect(await settled(c1)).toBe(true);
    for (const stream of streams) stream.destroy();
    expect((await a2).filename).toBe('goods.csv');
  });

  it(`answers 503 to a customer with ${EXPORTS_WAITING_PER_CUSTOMER} exports already waiting`, async () => {
    const { exportOf, streams, refusals } = gatedExports();
    const first = exportOf(1);
    await turn();
    const waiting = Array.from({ length: EXPORTS_WAITING_PER_CUSTOMER }, () => exportOf(1));
    const refused = await exportOf(1).then(
      () => undefined,
      (err: unknown) => err as ApiException,
    );
    expect(refused).toBeInstanceOf(ApiException);
    expect(refused?.code).toBe(ErrorCode.Unavailable);
    expect(refused?.headers).toEqual({ 'Retry-After': '10' });
    expect(refusals).toEqual([{ work: 'export', reason: 'full' }]);
    (await first).stream.destroy();
    for (const next of waiting) {
      await turn();
      (await next).stream.destroy();
    }
    expect(streams).toHaveLength(1 + EXPORTS_WAITING_PER_CUSTOMER);
  });

  it('gives the turn back after EXPORT_TURN_MS even while the export goes on (a slow reader keeps no other customer waiting)', async () => {
    const { exportOf, streams, service } = gatedExports();
    (service as unknown as { turnMs: number }).turnMs = 50;
    const a = await exportOf(1);
    const b = await exportOf(2);
    const c = exportOf(3);
    expect(await settled(c)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await settled(c)).toBe(true);
    // The first two are still open: their clients go on reading without a turn.
    expect(a.stream.destroyed || b.stream.destroyed).toBe(false);
    for (const stream of streams) stream.destroy();
  });
});
