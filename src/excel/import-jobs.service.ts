import { rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import type { UploadGoodsRowResult } from '../sync/dto/sync-response.dto';
import { ImportJobDetailResponse, ImportJobListResponse, ImportJobResponse, toImportJobResponse } from './dto/import-job.dto';
import { ImportJobRow } from './entities/import-job-row.entity';
import { ImportJob } from './entities/import-job.entity';
import { ImportJobRunner } from './import-job-runner';
import type { XlsxRowCount } from './xlsx-row-count';

/** A spreadsheet stored on disk by the upload (multer disk storage under DATA_DIR/imports). */
export interface StoredUpload {
  path: string;
  originalname?: string;
  mimetype?: string;
  size: number;
}

/** Result rows of a pruned job deleted per statement. */
const PRUNE_ROWS = 5000;
/** FAIL rows read per query while the failures CSV streams. */
const FAILURES_PAGE = 500;
/** The columns of the failures CSV: the row, why it failed, then the goods fields as sent. */
const FAILURE_COLUMNS = [
  'row',
  'message',
  'id',
  'sku',
  'url',
  'name',
  'brand',
  'description',
  'mediaUrl',
  'originalPrice',
  'discountedPrice',
  'discountPercentage',
];

/** One CSV cell: quoted when needed; a text a spreadsheet would run as a formula gets a leading apostrophe. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * Import jobs as the API shows them: a stored upload becomes a queued job (ImportJobRunner applies it),
 * and a customer reads its jobs, their row results page by page, and the failed rows as CSV. Every read
 * filters on the customer: another customer's job id is "not found".
 */
@Injectable()
export class ImportJobsService {
  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly runner: ImportJobRunner,
  ) {}

  /** Queues a job for a stored upload; the file belongs to the job from here on (removed when it ends). */
  async create(tenant: Tenant, file: StoredUpload, options: { refreshMedia?: boolean; counted?: XlsxRowCount | null }): Promise<ImportJobResponse> {
    const limits = this.config.importJobs;
    let job: ImportJob;
    try {
      await this.prune(tenant);
      job = await this.transactions.run(async (em) => {
        const pending = await em.countBy(ImportJob, { customerId: tenant.id, state: In(['queued', 'running']) });
        if (pending >= limits.maxPendingPerCustomer) {
          throw ApiException.rateLimited(`${pending} import jobs are queued or running; upload more once one has finished`, 30);
        }
        return em.save(
          Object.assign(new ImportJob(), {
            customerId: tenant.id,
            state: 'queued',
            fileName: (file.originalname || 'upload').slice(0, 255),
            filePath: basename(file.path),
            fileBytes: file.size,
            mimeType: file.mimetype ? file.mimetype.slice(0, 64) : null,
            baseUrl: tenant.baseUrl.slice(0, 2048),
            refreshMedia: !!options.refreshMedia,
            rowsTotal: null,
            sheetCount: options.counted ? JSON.stringify(options.counted) : null,
            rowsDone: 0,
            lastRow: 0,
            createCount: 0,
            updateCount: 0,
            failCount: 0,
            error: null,
            owner: null,
            leaseUntil: null,
            attempts: 0,
            createdAt: new Date(),
            startedAt: null,
            finishedAt: null,
          }),
        );
      });
    } catch (err) {
      await rm(file.path, { force: true });
      throw err;
    }
    this.runner.submitted(job.id);
    return toImportJobResponse(job);
  }

  async list(tenant: Tenant, page: number, count: number): Promise<ImportJobListResponse> {
    const [jobs, totalCount] = await this.transactions.manager.findAndCount(ImportJob, {
      where: { customerId: tenant.id },
      order: { id: 'DESC' },
      skip: (page - 1) * count,
      take: count,
    });
    return { results: jobs.map(toImportJobResponse), totalCount, _s: 0 };
  }

  /** The job with page `page` of its row results (those committed so far). */
  async get(tenant: Tenant, jobId: number, page: number, count: number): Promise<ImportJobDetailResponse> {
    return this.transactions.consistentRead(async (em) => {
      const job = await em.findOneBy(ImportJob, { id: jobId, customerId: tenant.id });
      if (!job) throw ApiException.notFound(`Import job ${jobId} not found`);
      const from = (page - 1) * count;
      const rows = await em
        .createQueryBuilder(ImportJobRow, 'r')
        .select(['r.seq', 'r.result'])
        .where('r.jobId = :jobId AND r.seq >= :from AND r.seq < :to', { jobId, from, to: from + count })
        .orderBy('r.seq', 'ASC')
        .getMany();
      const results = rows.map((r) => JSON.parse(r.result) as UploadGoodsRowResult);
      return { ...toImportJobResponse(job), results, page, count };
    });
  }

  /** The job (checked first: a job of another customer is 404) and its FAIL rows as CSV lines, read page by page. */
  async failures(tenant: Tenant, jobId: number): Promise<{ job: ImportJob; lines: AsyncGenerator<string> }> {
    const job = await this.transactions.manager.findOneBy(ImportJob, { id: jobId, customerId: tenant.id });
    if (!job) throw ApiException.notFound(`Import job ${jobId} not found`);
    const em = this.transactions.manager;
    async function* lines(): AsyncGenerator<string> {
      // A BOM, so that Excel opens the UTF-8 file with its Hangul intact.
      yield `\uFEFF${FAILURE_COLUMNS.join(',')}\r\n`;
      for (let after = -1; ;) {
        const rows = await em
          .createQueryBuilder(ImportJobRow, 'r')
          .select(['r.seq', 'r.result'])
          .where("r.jobId = :jobId AND r.status = 'FAIL' AND r.seq > :after", { jobId, after })
          .orderBy('r.seq', 'ASC')
          .limit(FAILURES_PAGE)
          .getMany();
        if (!rows.length) return;
        let text = '';
        for (const r of rows) {
          const result = JSON.parse(r.result) as Record<string, unknown>;
          text += `${FAILURE_COLUMNS.map((c) => csvCell(result[c])).join(',')}\r\n`;
        }
        yield text;
        after = rows[rows.length - 1].seq;
      }
    }
    return { job, lines: lines() };
  }

  /** Keeps the customer's IMPORT_JOB_KEEP most recent finished jobs (their results go with them). */
  private async prune(tenant: Tenant): Promise<void> {
    const em = this.transactions.manager;
    const old = await em
      .createQueryBuilder(ImportJob, 'j')
      .select('j.id', 'id')
      .where("j.customerId = :customerId AND j.state IN ('succeeded', 'failed')", { customerId: tenant.id })
      .orderBy('j.id', 'DESC')
      .offset(this.config.importJobs.keepPerCustomer - 1)
      .limit(100)
      .getRawMany<{ id: number | string }>();
    if (!old.length) return;
    // A large job's results are many rows: they go PRUNE_ROWS at a time, each delete a short transaction
    // of its own (on SQLite a statement holds the event loop), then the job.
    for (const { id } of old) {
      const jobId = Number(id);
      for (let deleted = PRUNE_ROWS; deleted >= PRUNE_ROWS;) {
        deleted = await this.transactions.run(async (tx) => {
          const next = await tx
            .createQueryBuilder(ImportJobRow, 'r')
            .select('r.seq', 'seq')
            .where('r.jobId = :jobId', { jobId })
            .orderBy('r.seq', 'ASC')
            .offset(PRUNE_ROWS - 1)
            .limit(1)
            .getRawOne<{ seq: number }>();
          const result = await tx
            .createQueryBuilder()
            .delete()
            .from(ImportJobRow)
            .where(next ? 'jobId = :jobId AND seq <= :last' : 'jobId = :jobId', { jobId, last: next?.seq })
            .execute();
          return next ? (result.affected ?? PRUNE_ROWS) : 0;
        });
      }
      await this.transactions.run((tx) => tx.delete(ImportJob, { id: jobId, customerId: tenant.id }));
    }
  }
}
