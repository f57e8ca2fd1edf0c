import { rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import type { UploadGoodsRowResult } from '../sync/dto/sync-response.dto';
import { ImportJobDetailResponse, ImportJobListResponse, ImportJobResponse, toImportJobResponse, toImportJobSummary } from './dto/import-job.dto';
import { ImportJobResult } from './entities/import-job-result.entity';
import { ImportJob } from './entities/import-job.entity';
import { ImportJobRunner } from './import-job-runner';
import { unpackResults } from './job-results';
import type { XlsxRowCount } from './xlsx-row-count';

/** A spreadsheet stored on disk by the upload (multer disk storage under DATA_DIR/imports). */
export interface StoredUpload {
  path: string;
  originalname?: string;
  mimetype?: string;
  size: number;
}

/** Stored result pieces of a pruned job deleted per statement. */
const PRUNE_ROWS = 500;
/** Groups of results holding FAIL rows read per query while the failures CSV streams (about 50 kB each, packed). */
const FAILURE_GROUPS = 20;
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

/** Stored pieces in (seq, part) order, as the groups they make up. */
function groupsOf(pieces: ImportJobResult[]): Array<{ seq: number; parts: Buffer[] }> {
  const groups: Array<{ seq: number; parts: Buffer[] }> = [];
  for (const piece of pieces) {
    const last = groups[groups.length - 1];
    if (last && last.seq === piece.seq) last.parts.push(piece.data);
    else groups.push({ seq: piece.seq, parts: [piece.data] });
  }
  return groups;
}

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
            stalledClaims: 0,
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
    return { results: jobs.map(toImportJobSummary), totalCount, _s: 0 };
  }

  /** The job with page `page` of its row results (those committed so far). */
  async get(tenant: Tenant, jobId: number, page: number, count: number): Promise<ImportJobDetailResponse> {
    const from = (page - 1) * count;
    const to = from + count;
    const { job, pieces } = await this.transactions.consistentRead(async (em) => {
      const found = await em.findOneBy(ImportJob, { id: jobId, customerId: tenant.id });
      if (!found) throw ApiException.notFound(`Import job ${jobId} not found`);
      // The results are stored in groups (a chunk's each): from the group holding result `from` to `to`.
      const start = await em
        .createQueryBuilder(ImportJobResult, 'r')
        .select('MAX(r.seq)', 'seq')
        .where('r.jobId = :jobId AND r.seq <= :from', { jobId, from })
        .getRawOne<{ seq: number | string | null }>();
      const rows = await em
        .createQueryBuilder(ImportJobResult, 'r')
        .select(['r.seq', 'r.part', 'r.data'])
        .where('r.jobId = :jobId AND r.seq >= :first AND r.seq < :to', { jobId, first: Number(start?.seq ?? 0), to })
        .orderBy('r.seq', 'ASC')
        .addOrderBy('r.part', 'ASC')
        .getMany();
      return { job: found, pieces: rows };
    });
    const results: UploadGoodsRowResult[] = [];
    for (const group of groupsOf(pieces)) {
      const lines = await unpackResults(group.parts);
      for (let at = Math.max(from, group.seq); at < Math.min(to, group.seq + lines.length); at++) {
        results.push(JSON.parse(lines[at - group.seq]) as UploadGoodsRowResult);
      }
    }
    return { ...toImportJobResponse(job), results, page, count };
  }

  /** The job (checked first: a job of another customer is 404) and its FAIL rows as CSV lines, read group by group. */
  async failures(tenant: Tenant, jobId: number): Promise<{ job: ImportJob; lines: AsyncGenerator<string> }> {
    const job = await this.transactions.manager.findOneBy(ImportJob, { id: jobId, customerId: tenant.id });
    if (!job) throw ApiException.notFound(`Import job ${jobId} not found`);
    const em = this.transactions.manager;
    async function* lines(): AsyncGenerator<string> {
      // A BOM, so that Excel opens the UTF-8 file with its Hangul intact.
      yield `\uFEFF${FAILURE_COLUMNS.join(',')}\r\n`;
      for (let after = -1; ;) {
        // The next groups holding FAIL results (groups without any are skipped).
        const groups = await em
          .createQueryBuilder(ImportJobResult, 'r')
          .select('r.seq', 'seq')
          .where('r.jobId = :jobId AND r.part = 0 AND r.failCount > 0 AND r.seq > :after', { jobId, after })
          .orderBy('r.seq', 'ASC')
          .limit(FAILURE_GROUPS)
          .getRawMany<{ seq: number | string }>();
        if (!groups.length) return;
        // Their pieces in one query; each group is then unpacked and written out on its own.
        const pieces = await em
          .createQueryBuilder(ImportJobResult, 'r')
          .select(['r.seq', 'r.part', 'r.data'])
          .where('r.jobId = :jobId AND r.seq IN (:...seqs)', { jobId, seqs: groups.map((g) => Number(g.seq)) })
          .orderBy('r.seq', 'ASC')
          .addOrderBy('r.part', 'ASC')
          .getMany();
        for (const group of groupsOf(pieces)) {
          let text = '';
          for (const line of await unpackResults(group.parts)) {
            const result = JSON.parse(line) as Record<string, unknown>;
            if (result.status === 'FAIL') text += `${FAILURE_COLUMNS.map((c) => csvCell(result[c])).join(',')}\r\n`;
          }
          yield text;
        }
        after = Number(groups[groups.length - 1].seq);
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
    // A large job's results are many rows (with a small IMPORT_JOB_CHUNK_ROWS): they go PRUNE_ROWS at a time, each delete a short transaction
    // of its own (on SQLite a statement holds the event loop), then the job.
    for (const { id } of old) {
      const jobId = Number(id);
      for (let deleted = PRUNE_ROWS; deleted >= PRUNE_ROWS;) {
        deleted = await this.transactions.run(async (tx) => {
          const next = await tx
            .createQueryBuilder(ImportJobResult, 'r')
            .select('r.seq', 'seq')
            .where('r.jobId = :jobId', { jobId })
            .orderBy('r.seq', 'ASC')
            .offset(PRUNE_ROWS - 1)
            .limit(1)
            .getRawOne<{ seq: number }>();
          const result = await tx
            .createQueryBuilder()
            .delete()
            .from(ImportJobResult)
            .where(next ? 'jobId = :jobId AND seq <= :last' : 'jobId = :jobId', { jobId, last: next?.seq })
            .execute();
          return next ? (result.affected ?? PRUNE_ROWS) : 0;
        });
      }
      await this.transactions.run((tx) => tx.delete(ImportJob, { id: jobId, customerId: tenant.id }));
    }
  }
}
