import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException } from '../common/errors/api.exception';
import type { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics.service';
import { ExcelService, SYNC_READS_AT_ONCE, SYNC_READS_WAITING, UploadedSheet } from './excel.service';
import * as parser from './goods-sheet.parser';

/**
 * Synchronous spreadsheet reads hold a workbook's shared strings on the main thread: at most
 * SYNC_READS_AT_ONCE run at once, SYNC_READS_WAITING more wait their turn, one more is 503 at once.
 */
describe('ExcelService: synchronous reads at once', () => {
  let dir: string;
  let afterTest = () => {};
  afterEach(() => {
    afterTest();
    jest.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`reads at most ${SYNC_READS_AT_ONCE} at once; ${SYNC_READS_WAITING} wait, the next is 503 -503 with Retry-After`, async () => {
    dir = mkdtempSync(join(tmpdir(), 'lg-sync-reads-'));
    const config = { limits: { excelParseTimeoutMs: 30_000, excelMaxRows: 10_000, excelMaxUncompressedBytes: 1 << 20 } } as unknown as AppConfig;
    const metrics = new Metrics();
    afterTest = () => metrics.onModuleDestroy();
    const service = new ExcelService(undefined as never, config, undefined as never, undefined as never, metrics);
    let running = 0;
    let most = 0;
    const finish: Array<() => void> = [];
    jest.spyOn(parser, 'parseGoodsSheet').mockImplementation(() => {
      running += 1;
      most = Math.max(most, running);
      return new Promise((resolve) =>
        finish.push(() => {
          running -= 1;
          resolve({ rows: [] } as unknown as parser.GoodsSheet);
        }),
      );
    });
    const read = (i: number): Promise<unknown> => {
      const path = join(dir, `${i}.csv`);
      writeFileSync(path, 'sku,url,name\n');
      const file = { path, originalname: `${i}.csv`, mimetype: 'text/csv', size: 13 } as UploadedSheet;
      return (service as unknown as { read(f: UploadedSheet): Promise<unknown> }).read(file);
    };
    const admitted = Array.from({ length: SYNC_READS_AT_ONCE + SYNC_READS_WAITING }, (_, i) => read(i));
    const refused = await read(999).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ApiException);
    expect({ code: (refused as ApiException).code, headers: (refused as ApiException).headers }).toEqual({ code: -503, headers: { 'Retry-After': '5' } });
    const counted = (await metrics.workRefusals.get()).values.map((v) => ({ ...v.labels, value: v.value }));
    expect(counted).toEqual([{ work: 'spreadsheet', reason: 'full', value: 1 }]);
    expect(await metrics.registry.getSingleMetricAsString('livegoods_work_slots')).toContain(
      `livegoods_work_slots{work="spreadsheet",state="waiting"} ${SYNC_READS_WAITING}`,
    );
    // The admitted ones are read, two at a time, as turns free up.
    let settled = 0;
    const all = Promise.all(admitted.map((p) => p.finally(() => (settled += 1))));
    while (settled < admitted.length) {
      await new Promise((r) => setTimeout(r, 1));
      finish.shift()?.();
    }
    expect(await all).toHaveLength(SYNC_READS_AT_ONCE + SYNC_READS_WAITING);
    expect(most).toBe(SYNC_READS_AT_ONCE);
  });
});
