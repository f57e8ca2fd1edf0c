import { Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import type { Tenant } from '../auth/decorators';
import { Transactions } from '../database/transactions';
import type { Goods } from '../goods/entities/goods.entity';
import { normalizeForSearch } from '../goods/goods-keys';
import { pageAfter } from '../goods/goods-list.queries';
import { ExportQuery } from './dto/export-query.dto';
import { csvExport, ExportFormat, GoodsPages, xlsxExport } from './goods-export';
import { XLSX_CONTENT_TYPE } from './goods-template';

/** Goods read per query while exporting. */
export const EXPORT_PAGE = 1000;

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
  constructor(private readonly transactions: Transactions) {}

  async export(tenant: Tenant, query: ExportQuery): Promise<GoodsExport> {
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
