import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { WorkGate, WorkGateError } from '../common/util/work-gate';
import { Transactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics.service';
import type { Goods } from '../goods/entities/goods.entity';
import { normalizeForSearch } from '../goods/goods-keys';
import { pageAfter } from '../goods/goods-list.queries';
import { ExportQuery } from './dto/export-query.dto';
import { csvExport, ExportFormat, GoodsPages, xlsxExport } from './goods-export';
import { XLSX_CONTENT_TYPE } from './goods-template';

/** Goods read per query while exporting. */
export const EXPORT_PAGE = 1000;
/** Exports a node streams at once, all customers together; one customer's at most EXPORTS_PER_CUSTOMER. */
export const EXPORTS_AT_ONCE = 2;
export const EXPORTS_PER_CUSTOMER = 1;
/** Exports that may wait for a turn, and of them one customer's at most. */
export const EXPORTS_WAITING = 16;
export const EXPORTS_WAITING_PER_CUSTOMER = 4;
/** How long an export may wait for its turn before it is 503. */
export const EXPORT_WAIT_MS = 30_000;
/**
 * How long an export holds its turn at most: a client reading fast gets a whole catalog well within it
 * (the costly case), and one reading slowly or not at all (which costs next to nothing) goes on without
 * its turn rather than keeping other customers' exports waiting until it is cut.
 */
export const EXPORT_TURN_MS = 30_000;

export interface GoodsExport {
  stream: Readable;
  contentType: string;
  filename: string;
}

/** `goods-20260301-120000.xlsx`: the export's time (UTC) in the name, so that downloads do not collide. */
export function exportFilename(format: ExportFormat, now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');
  return `goods-${stamp}.${format}`;
}

/**
 * GET /excel/export: the catalog (or the matches of a keyword, as the list matches) in the template's
 * columns, streamed. The catalog is read in keyset pages by id (never OFFSET), one page ahead of what
 * the client has taken: memory stays bounded whatever the catalog size. The first page is read before
 * anything is sent, so a database outage is still a proper 503; a failure later breaks the transfer.
 */
@Injectable()
export class ExcelExportService {
  /**
   * Exports streamed at once: each costs a core's share for as long as its client reads (about 20 µs a
   * row for .xlsx), so four to eight whole-catalog exports of one customer at once stalled the event loop
   * 150-650 ms at a time for everyone. An export holds its turn until its stream has closed, or for
   * EXPORT_TURN_MS at most; a customer's second waits for its first's turn, and one that gets no turn
   * within EXPORT_WAIT_MS is 503 with Retry-After.
   */
  private readonly gate = new WorkGate(EXPORTS_AT_ONCE, EXPORTS_WAITING, EXPORTS_PER_CUSTOMER, EXPORTS_WAITING_PER_CUSTOMER);
  /** EXPORT_TURN_MS (a spec shortens it). */
  protected turnMs = EXPORT_TURN_MS;

  constructor(
    private readonly transactions: Transactions,
    private readonly metrics: Metrics,
  ) {
    metrics.countGate('export', this.gate);
  }

  /** The export, opened in a turn of the node's export gate, which it holds until its stream has closed (EXPORT_TURN_MS at most). */
  async export(tenant: Tenant, query: ExportQuery): Promise<GoodsExport> {
    let opened!: (file: GoodsExport) => void;
    const file = new Promise<GoodsExport>((resolve) => (opened = resolve));
    const turn = this.gate.run(
      Infinity,
      async () => {
        const exported = await this.open(tenant, query);
        const closed = once(exported.stream, 'close');
        opened(exported);
        await Promise.race([closed, delay(this.turnMs, undefined, { ref: false })]);
      },
      tenant.id,
      Date.now() + EXPORT_WAIT_MS,
    );
    // Whichever settles first: the file once open, or the turn's failure (no turn, or opening failed).
    return Promise.race([
      file,
      turn.then(
        () => file,
        (err: unknown) => {
          if (!(err instanceof WorkGateError)) throw err;
          this.metrics.workRefusals.inc({ work: 'export', reason: err.reason });
          throw ApiException.unavailable(
            err.reason === 'full'
              ? 'Too many exports are waiting on this server (or of this catalog); try again when yours have ended'
              : `No turn to export within ${EXPORT_WAIT_MS / 1000} s: this server is streaming other exports (yours included, one at a time per customer); try again shortly`,
            10,
          );
        },
      ),
    ]);
  }

  private async open(tenant: Tenant, query: ExportQuery): Promise<GoodsExport> {
    const keyword = query.searchKeyword ? normalizeForSearch(query.searchKeyword.trim()) : '';
    const first = await this.page(tenant, keyword, 0);
    const pages = this.pages(tenant, keyword, first);
    const format = query.format ?? 'xlsx';
    const stream = format === 'csv' ? csvExport(pages) : await xlsxExport(pages);
    return {
      stream,
      contentType: format === 'csv' ? 'text/csv; charset=utf-8' : XLSX_CONTENT_TYPE,
      filename: exportFilename(format, new Date()),
    };
  }

  private page(tenant: Tenant, keyword: string, afterId: number): Promise<Goods[]> {
    return pageAfter(this.transactions.manager, tenant.id, keyword, afterId, EXPORT_PAGE);
  }

  /** The pages in id order: `first`, then each next one read when the previous has been taken. */
  private async *pages(tenant: Tenant, keyword: string, first: Goods[]): GoodsPages {
    let page = first;
    for (;;) {
      yield page;
      if (page.length < EXPORT_PAGE) return;
      page = await this.page(tenant, keyword, page[page.length - 1].id);
    }
  }
}
