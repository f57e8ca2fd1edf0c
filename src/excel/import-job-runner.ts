import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Tenant, tenantOf } from '../auth/decorators';
import { chunked } from '../common/util/chunks';
import { AppConfig } from '../config/app-config';
import { Customer } from '../customers/entities/customer.entity';
import { insertRows, pipelined } from '../database/bulk-sql';
import { isDatabaseUnavailable } from '../database/database-errors';
import { Transactions } from '../database/transactions';
import { Lifecycle } from '../lifecycle/lifecycle.service';
import { LiveNotifier } from '../live/live-notifier';
import { SyncResponse, UploadGoodsRowResult } from '../sync/dto/sync-response.dto';
import { BatchElement, ParsedElement } from '../sync/element-parser';
import { GoodsBatchWriter } from '../sync/goods-batch-writer';
import { ImportJobResult } from './entities/import-job-result.entity';
import { ImportJob } from './entities/import-job.entity';
import { SheetFile, SheetLimits } from './goods-sheet.parser';
import { JobSheet, readJobSheet } from './sheet-reader';
import { WebhookEvents } from '../webhooks/webhook-events';
import { ImportJobQueue, QueueVerdict } from './import-job-queue';
import { SheetError } from './sheet-error';
import { packResults } from './job-results';
import type { XlsxRowCount } from './xlsx-row-count';

/** Least time between two progress events of one job (final states are always sent). */
export const PROGRESS_INTERVAL_MS = 500;
/** Pieces of packed results per INSERT (up to 60 kB each: well under MySQL's default max_allowed_packet). */
const RESULT_PARTS_PER_INSERT = 16;
/** A stored row result longer than this (JSON, bytes) has its long texts cut (a FAIL row echoes the values as sent, however long). */
const MAX_RESULT_BYTES = 60_000;
/** An upload file in DATA_DIR/imports that no queued or running job names is removed after this long. */
const ORPHAN_AGE_MS = 60 * 60 * 1000;

/** Reads of the queue one poll makes while other nodes win the claims (the next poll tries again). */
const MAX_CLAIM_ATTEMPTS = 5;

/**
 * The SQL condition of a job that may run now: queued, or running under a lease that ran out (`:now`);
 * its columns under `alias` (none in an UPDATE).
 */
function mayRun(alias?: string): string {
  const c = alias ? `${alias}.` : '';
  return `(${c}state = 'queued' OR (${c}state = 'running' AND (${c}leaseUntil IS NULL OR ${c}leaseUntil < :now)))`;
}

/** The node's claim on the job was lost (its lease ran out and another node took it): stop, write nothing more. */
class LeaseLost extends Error {}

/** The file name under DATA_DIR/imports of a job's upload (multer names it; see SpreadsheetUploadInterceptor). */
export function isUploadName(name: string): boolean {
  return /^[0-9a-f-]{36}\.upload$/.test(name);
}

/** A row result as stored: the JSON the synchronous import answers, long texts cut when it would not fit. */
export function storedResult(result: UploadGoodsRowResult): string {
  const json = JSON.stringify(result);
  if (Buffer.byteLength(json) <= MAX_RESULT_BYTES) return json;
  const cut: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(result)) cut[key] = typeof value === 'string' && value.length > 1000 ? `${value.slice(0, 1000)}…` : value;
  return JSON.stringify(cut);
}

/** A chunk of sheet rows as sync elements, validated by the sheet reader. */
interface ValidatedChunk {
  lastRow: number;
  elements: BatchElement[];
  parsed: Promise<ParsedElement[]>;
}

/**
 * Runs spreadsheet import jobs in the background, on every node, from the database (the embedded
 * default; docs/decisions/0009): an idle node polls for a queued job (or a running one whose lease ran
 * out: its node died) and claims it with a conditional UPDATE, so exactly one node runs it. At most
 * IMPORT_JOB_CONCURRENCY jobs run per process, and never two of one customer at once (a customer's
 * second job waits while others' jobs run). The next job is chosen fairly, not oldest first: the oldest of
 * the customer served least recently (see claimable), so customers who wait take turns.
 *
 * A job's file is read on a worker thread (readJobSheet, docs/decisions/0013): first checked whole (type,
 * header, limits, row count; nothing written, so a refused file writes nothing), then its rows, handed
 * over while the previous ones are written and applied IMPORT_JOB_CHUNK_ROWS at a time by the sync's
 * batch writer. Each chunk's transaction also records the job's progress (the last sheet row applied, the
 * counts, the row results) under the condition that this node still owns the job and that nobody moved
 * its progress meanwhile: a chunk commits together with its progress or not at all, so a job resumed
 * after a crash or a restart goes on after the last committed chunk and applies every row exactly once.
 */
@Injectable()
export class ImportJobRunner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ImportJobRunner.name);
  /** This process's id in `owner`. */
  readonly nodeId = randomUUID();
  private readonly running = new Map<number, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private stopping = false;
  private readonly lastProgress = new Map<number, number>();
  /** With REDIS_URL: BullMQ hands the jobs out; without, this node polls the database. */
  private queue: ImportJobQueue | null = null;
  /**
   * With BullMQ: since when (ms) each job could be claimed while this node had a slot free. One the queue
   * has not handed out within IMPORT_JOB_LEASE_MS is claimed from the database (see claimOverdue).
   */
  private readonly claimableSince = new Map<number, number>();

  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly writer: GoodsBatchWriter,
    private readonly notifier: LiveNotifier,
    private readonly lifecycle: Lifecycle,
    private readonly webhooks: WebhookEvents,
  ) {}

  get dir(): string {
    return this.config.importJobs.dir;
  }

  async onApplicationBootstrap(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const { url, prefix } = this.config.redis;
    if (url) {
      this.queue = new ImportJobQueue(url, `${prefix}:bull`, this.config.importJobs.leaseMs);
      this.queue.start(this.config.importJobs.concurrency, (jobId) => this.process(jobId));
    }
    // With BullMQ the timer enqueues what the database holds (a job whose enqueue failed, one left by a
    // shutdown or a crash); without it, it claims jobs itself.
    this.timer = setInterval(() => this.kick(), this.queue ? Math.max(this.config.importJobs.pollMs, 2000) : this.config.importJobs.pollMs);
    this.timer.unref();
    this.kick();
    this.removeOrphans().catch((err: unknown) => this.logger.warn(`orphan upload clean-up failed: ${String(err)}`));
  }

  /** Shutdown: take no more jobs; the jobs running stop after their current chunk and go back to the queue. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.running.size) this.logger.log(`waiting for ${this.running.size} import job(s) to commit their current chunk`);
    await Promise.allSettled([...this.running.values()]);
    await this.queue?.close();
  }

  /** A job was queued in the database: hand it to BullMQ, or look for work now. */
  submitted(jobId: number): void {
    if (!this.queue) {
      this.kick();
      return;
    }
    // Should Redis not take it now, the timer enqueues it later (the database keeps it queued).
    this.queue
      .add(jobId)
      .catch((err: unknown) => this.logger.warn(`import job ${jobId} not enqueued yet: ${err instanceof Error ? err.message : String(err)}`));
  }

  /** Looks for work now (after an upload, when a job ends, and on the timer). */
  kick(): void {
    if (this.polling || this.stopped) return;
    this.polling = true;
    (this.queue ? this.enqueueWaiting() : this.fill())
      .catch((err: unknown) => {
        if (!isDatabaseUnavailable(err)) this.logger.warn(`import job poll failed: ${err instanceof Error ? err.message : String(err)}`);
      })
      .finally(() => {
        this.polling = false;
      });
  }

  private get stopped(): boolean {
    return this.stopping || this.lifecycle.isDraining;
  }

  private async fill(): Promise<void> {
    while (!this.stopped && this.running.size < this.config.importJobs.concurrency) {
      const job = await this.claim();
      if (!job) return;
      void this.start(job);
    }
  }

  /** Runs a claimed job, known to shutdown until it ends. */
  private start(job: ImportJob): Promise<void> {
    const run = this.run(job)
      .catch((err: unknown) => this.logger.error(`import job ${job.id} stopped: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`))
      .finally(() => {
        this.running.delete(job.id);
        this.lastProgress.delete(job.id);
        if (!this.queue) this.kick();
      });
    this.running.set(job.id, run);
    return run;
  }

  /** Jobs that may run now (queued, or running under a lease that ran out), oldest first. */
  private waiting(now: number): Promise<ImportJob[]> {
    return this.transactions.manager.createQueryBuilder(ImportJob, 'j').where(mayRun('j'), { now }).orderBy('j.id', 'ASC').limit(50).getMany();
  }

  /**
   * Jobs that may be claimed now, fairest first: those of customers with no job running under a live
   * lease (a customer's second job waits while its first runs), the customer served least recently first
   * (never served, then the oldest last claim: round-robin over the customers waiting), each customer's
   * oldest job first. So a customer who queued many big jobs holds up another's job by at most one of
   * them per slot, not by all of them.
   */
  private claimable(now: number, limit: number): Promise<ImportJob[]> {
    return (
      this.transactions.manager
        .createQueryBuilder(ImportJob, 'j')
        .where(mayRun('j'), { now })
        .andWhere((qb) => {
          const busy = qb.subQuery().select('b.customerId').from(ImportJob, 'b').where("b.state = 'running' AND b.leaseUntil >= :now", { now }).getQuery();
          return `j.customerId NOT IN ${busy}`;
        })
        // When the customer was last served: its latest claim (startedAt is set by every claim).
        .addSelect((qb) => qb.subQuery().select('MAX(s.startedAt)').from(ImportJob, 's').where('s.customerId = j.customerId'), 'servedAt')
        .orderBy('CASE WHEN servedAt IS NULL THEN 0 ELSE 1 END', 'ASC')
        .addOrderBy('servedAt', 'ASC')
        .addOrderBy('j.id', 'ASC')
        .limit(limit)
        .getMany()
    );
  }

  /**
   * Claims the fairest job that may run (see claimable). A claim lost to another node reads the queue
   * again: the job's customer is busy now, so its next job must not be taken on the strength of the
   * earlier read.
   */
  private async claim(): Promise<ImportJob | null> {
    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
      const now = Date.now();
      const [job] = await this.claimable(now, 1);
      if (!job) return null;
      const claimed = await this.tryClaim(job.id, now);
      if (claimed) return claimed;
    }
    return null;
  }

  /** The conditional UPDATE that lets exactly one node have the job; the job as claimed, or null. */
  private async tryClaim(jobId: number, now: number): Promise<ImportJob | null> {
    const leaseUntil = Date.now() + this.config.importJobs.leaseMs;
    const claimed = await this.transactions.run((tx) =>
      tx
        .createQueryBuilder()
        .update(ImportJob)
        .set({
          state: 'running',
          owner: this.nodeId,
          leaseUntil,
          attempts: () => 'attempts + 1',
          stalledClaims: () => 'stalledClaims + 1',
          startedAt: new Date(),
        })
        .where(`id = :id AND ${mayRun()}`, { id: jobId, now })
        .execute(),
    );
    if (claimed.affected !== 1) return null;
    const job = await this.transactions.manager.findOneBy(ImportJob, { id: jobId });
    if (!job || job.owner !== this.nodeId) return null;
    this.logger.log(`import job ${job.id} of customer ${job.customerId} claimed${job.lastRow ? ` (resuming after sheet row ${job.lastRow})` : ''}`);
    return job;
  }

  /**
   * BullMQ: claims from the database the jobs the queue has left waiting too long (claimOverdue), then puts
   * the jobs that may run into the queue (a no-op for those already there).
   */
  private async enqueueWaiting(): Promise<void> {
    const waiting = await this.waiting(Date.now());
    if (!waiting.length) {
      this.claimableSince.clear(); // nothing waits: the idle poll stays one query
      return;
    }
    await this.claimOverdue().catch((err: unknown) => {
      if (!isDatabaseUnavailable(err)) this.logger.warn(`import job claim failed: ${err instanceof Error ? err.message : String(err)}`);
    });
    for (const job of waiting) {
      if (this.stopped) return;
      if (this.running.has(job.id)) continue; // just claimed from the database
      await (this.queue as ImportJobQueue).add(job.id);
    }
  }

  /**
   * The database keeps every job; Redis only hands them out, and a queue can get stuck where the database
   * is not (a BullMQ worker that does not recover from a network partition, a job lost from Redis). So
   * while this node has a slot free, it notes since when each job could be claimed, and claims one that
   * could for longer than IMPORT_JOB_LEASE_MS straight from the database, fairest first as ever. (Claims are
   * atomic: should the queue hand the job out after all, it is found running or ended, and dropped.)
   */
  private async claimOverdue(): Promise<void> {
    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS && !this.stopped; attempt++) {
      if (this.running.size >= this.config.importJobs.concurrency) {
        this.claimableSince.clear(); // no slot here: nothing waits on this node
        return;
      }
      const now = Date.now();
      const claimable = await this.claimable(now, 50);
      const ids = new Set(claimable.map((job) => job.id));
      for (const id of this.claimableSince.keys()) if (!ids.has(id)) this.claimableSince.delete(id);
      for (const job of claimable) if (!this.claimableSince.has(job.id)) this.claimableSince.set(job.id, now);
      // Only the fairest: a job that can wait its turn is not taken before it.
      const [fairest] = claimable;
      if (!fairest || (this.claimableSince.get(fairest.id) as number) > now - this.config.importJobs.leaseMs) return;
      const claimed = await this.tryClaim(fairest.id, now);
      if (!claimed) continue;
      const waited = Math.round((now - (this.claimableSince.get(claimed.id) as number)) / 1000);
      this.claimableSince.delete(claimed.id);
      this.logger.warn(`import job ${claimed.id}: the queue had not handed it out after ${waited} s; claimed from the database (does every node reach Redis?)`);
      void this.start(claimed);
    }
  }

  /** BullMQ's worker: claims and runs the job, or asks the queue to hand it out again later. */
  private async process(jobId: number): Promise<QueueVerdict> {
    const retry = Math.max(500, this.config.importJobs.pollMs);
    if (this.stopped) return { kind: 'later', delayMs: retry };
    const now = Date.now();
    const job = await this.transactions.manager.findOneBy(ImportJob, { id: jobId });
    if (!job || job.state === 'succeeded' || job.state === 'failed') return { kind: 'done' };
    if (job.state === 'running' && job.leaseUntil !== null && job.leaseUntil >= now) {
      return { kind: 'later', delayMs: Math.max(retry, job.leaseUntil - now + 100) };
    }
    // This node's slots may have gone to jobs claimed from the database (claimOverdue).
    if (this.running.size >= this.config.importJobs.concurrency) return { kind: 'later', delayMs: retry };
    // BullMQ hands jobs out oldest first: one of another customer who was served less recently goes
    // first. (The fairest claimable job is never of a customer with a job running: so a customer's
    // second job waits, too.)
    const [fairest] = await this.claimable(now, 1);
    if (fairest?.customerId !== job.customerId) return { kind: 'later', delayMs: retry };
    const claimed = await this.tryClaim(jobId, now);
    if (!claimed) return { kind: 'later', delayMs: retry };
    await this.start(claimed);
    return { kind: 'done' };
  }

  private async run(job: ImportJob): Promise<void> {
    let lost = false;
    // The lease is renewed with every chunk; this keeps it while a chunk or the survey takes long.
    const renew = setInterval(
      () => {
        this.renewLease(job).then(
          (held) => {
            if (!held) lost = true;
          },
          () => undefined,
        );
      },
      Math.max(250, Math.floor(this.config.importJobs.leaseMs / 3)),
    );
    renew.unref();
    try {
      // Every run before this one since the last committed chunk ended without a trace: its node died
      // (a file that takes the process down would take every node that claims it down in turn).
      const stalled = job.stalledClaims - 1;
      if (stalled >= this.config.importJobs.maxAttempts) {
        await this.fail(
          job,
          `The job was started ${stalled} times ${job.lastRow ? `after sheet row ${job.lastRow} ` : ''}and each time the node ` +
            'running it stopped before it got further (the file may need more memory than a node has); it is not started again; ' +
            this.appliedSoFar(job),
        );
        return;
      }
      const customer = await this.transactions.manager.findOneBy(Customer, { id: job.customerId });
      if (!customer) return; // deleted with its customer
      const tenant = tenantOf(customer, job.baseUrl);
      const file: SheetFile = { path: join(this.dir, job.filePath), filename: job.fileName, mimetype: job.mimeType ?? undefined };
      if (!(await stat(file.path).catch(() => null))) {
        await this.fail(job, `The uploaded file is gone (was DATA_DIR shared by every node?); ${this.appliedSoFar(job)}`);
        return;
      }
      const limits: SheetLimits = {
        maxRows: this.config.importJobs.maxRows,
        maxUncompressedBytes: this.config.limits.excelMaxUncompressedBytes,
        timeoutMs: this.config.importJobs.readTimeoutMs,
      };
      let sheet: JobSheet;
      try {
        sheet = await readJobSheet(file, limits, job.lastRow, sheetCountOf(job));
      } catch (err) {
        if (err instanceof SheetError) {
          await this.fail(job, `${err.message}; ${this.appliedSoFar(job)}`);
          return;
        }
        throw err;
      }
      try {
        if (job.rowsTotal !== sheet.dataRows) {
          await this.update(job, { rowsTotal: sheet.dataRows });
          job.rowsTotal = sheet.dataRows;
        }
        this.progress(job, true);
        // The sheet reader's worker reads and validates the next rows while this chunk is written. (It
        // hands over only the rows after job.lastRow: those before were applied before a restart.)
        for await (const rows of chunksOf(sheet.rows, this.config.importJobs.chunkRows)) {
          if (lost) throw new LeaseLost();
          await this.applyChunk(job, tenant, this.validated(rows));
          if (this.stopped) {
            await this.release(job);
            return;
          }
        }
        // A total counted quickly (the rows holding values) becomes the exact number of data rows.
        const dataRows = sheet.finalDataRows;
        if (dataRows !== undefined && dataRows !== job.rowsTotal) {
          await this.update(job, { rowsTotal: dataRows });
          job.rowsTotal = dataRows;
        }
      } finally {
        await sheet.close();
      }
      await this.finish(job, 'succeeded', null);
    } catch (err) {
      if (err instanceof LeaseLost) {
        this.logger.warn(`import job ${job.id}: this node's claim ran out and another node took the job; stopped here`);
        return;
      }
      if (isDatabaseUnavailable(err)) {
        // Nothing of the chunk committed; the lease runs out and the job is resumed (here or elsewhere).
        this.logger.warn(`import job ${job.id} paused: the database is unavailable (${err instanceof Error ? err.message : String(err)})`);
        return;
      }
      if (err instanceof SheetError) {
        await this.fail(job, `${err.message}; ${this.appliedSoFar(job)}`);
        return;
      }
      this.logger.error(`import job ${job.id} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      await this.fail(job, `An unexpected error stopped the job; ${this.appliedSoFar(job)}`).catch(() => undefined);
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * A chunk of rows the sheet reader validated: as elements for the batch writer, each row's echo (its
   * values as sent; cut for a FAIL row) standing for its data.
   */
  private validated(rows: ParsedElement[]): ValidatedChunk {
    const elements = rows.map((r) => ({ row: r.row, data: r.echo }));
    return { lastRow: rows[rows.length - 1].row, elements, parsed: Promise.resolve(rows) };
  }

  /** One chunk of rows applied, with the job's progress and the rows' results in the same transaction. */
  private async applyChunk(job: ImportJob, tenant: Tenant, chunk: ValidatedChunk): Promise<void> {
    const { lastRow, elements } = chunk;
    let committed: SyncResponse | undefined;
    await this.writer.apply(tenant, elements, {
      validated: chunk.parsed,
      refreshMedia: job.refreshMedia,
      source: 'spreadsheet',
      beforeCommit: async (em, response) => {
        await this.recordChunk(em, job, lastRow, response);
        committed = response;
      },
    });
    if (!committed) return;
    job.rowsDone += committed.totalCount;
    job.createCount += committed.createCount;
    job.updateCount += committed.updateCount;
    job.failCount += committed.failCount;
    job.lastRow = lastRow;
    this.progress(job);
  }

  private async recordChunk(em: EntityManager, job: ImportJob, lastRow: number, response: SyncResponse): Promise<void> {
    const moved = await em
      .createQueryBuilder()
      .update(ImportJob)
      .set({
        lastRow,
        rowsDone: job.rowsDone + response.totalCount,
        createCount: job.createCount + response.createCount,
        updateCount: job.updateCount + response.updateCount,
        failCount: job.failCount + response.failCount,
        leaseUntil: Date.now() + this.config.importJobs.leaseMs,
        // The job got further: this run's claim is the only one since (see ImportJob.stalledClaims).
        stalledClaims: 1,
      })
      .where("id = :id AND owner = :owner AND state = 'running' AND lastRow = :previous", { id: job.id, owner: this.nodeId, previous: job.lastRow })
      .execute();
    if (moved.affected !== 1) throw new LeaseLost();
    // The chunk's results as one packed group (src/excel/job-results.ts), in as many rows as it has pieces.
    const parts = await packResults(response.results.map(storedResult));
    const rows = parts.map((data, part) =>
      Object.assign(new ImportJobResult(), { jobId: job.id, seq: job.rowsDone, part, rowCount: response.totalCount, failCount: response.failCount, data }),
    );
    await pipelined(
      em,
      chunked(rows, RESULT_PARTS_PER_INSERT),
      (group) => insertRows(em, ImportJobResult, group),
      () => undefined,
    );
  }

  private async renewLease(job: ImportJob): Promise<boolean> {
    const renewed = await this.transactions.run((em) =>
      em
        .createQueryBuilder()
        .update(ImportJob)
        .set({ leaseUntil: Date.now() + this.config.importJobs.leaseMs })
        .where("id = :id AND owner = :owner AND state = 'running'", { id: job.id, owner: this.nodeId })
        .execute(),
    );
    return renewed.affected === 1;
  }

  /** Changes this node's running job (only while it still owns it). */
  private async update(job: ImportJob, values: Partial<Pick<ImportJob, 'rowsTotal'>>): Promise<void> {
    const updated = await this.transactions.run((em) =>
      em
        .createQueryBuilder()
        .update(ImportJob)
        .set(values)
        .where("id = :id AND owner = :owner AND state = 'running'", { id: job.id, owner: this.nodeId })
        .execute(),
    );
    if (updated.affected !== 1) throw new LeaseLost();
  }

  /** Shutdown between two chunks: back to the queue, for this node after its restart or for another one. */
  private async release(job: ImportJob): Promise<void> {
    await this.transactions.run((em) =>
      em
        .createQueryBuilder()
        .update(ImportJob)
        // A claim handed back is no stalled run.
        .set({ state: 'queued', owner: null, leaseUntil: null, stalledClaims: () => 'stalledClaims - 1' })
        .where("id = :id AND owner = :owner AND state = 'running'", { id: job.id, owner: this.nodeId })
        .execute(),
    );
    this.logger.log(`import job ${job.id} left resumable after sheet row ${job.lastRow} (${job.rowsDone} rows applied)`);
  }

  private fail(job: ImportJob, error: string): Promise<void> {
    return this.finish(job, 'failed', error);
  }

  /** The job's final state, committed (only while this node owns it); then its file goes and the end is announced. */
  private async finish(job: ImportJob, state: 'succeeded' | 'failed', error: string | null): Promise<void> {
    const finishedAt = new Date();
    const done = await this.transactions.run(async (em) => {
      const result = await em
        .createQueryBuilder()
        .update(ImportJob)
        .set({ state, error, finishedAt, owner: null, leaseUntil: null })
        .where("id = :id AND owner = :owner AND state = 'running'", { id: job.id, owner: this.nodeId })
        .execute();
      // The webhook event commits with the final state, or not at all (the outbox, docs/webhooks.md).
      if (result.affected === 1) {
        await this.webhooks.record(job.customerId, em, 'import.completed', {
          source: 'job',
          jobId: job.id,
          state,
          fileName: job.fileName,
          total: job.rowsDone,
          created: job.createCount,
          updated: job.updateCount,
          failed: job.failCount,
          error,
          finishedAt: finishedAt.getTime(),
        });
      }
      return result;
    });
    if (done.affected !== 1) throw new LeaseLost();
    job.state = state;
    job.error = error;
    job.finishedAt = finishedAt;
    await rm(join(this.dir, job.filePath), { force: true }).catch((err: unknown) => this.logger.warn(`import job ${job.id}: file not removed: ${String(err)}`));
    this.logger.log(
      `import job ${job.id} ${state}: ${job.rowsDone} row(s) (${job.createCount} created, ${job.updateCount} updated, ${job.failCount} failed)${error ? `: ${error}` : ''}`,
    );
    this.progress(job, true);
  }

  private appliedSoFar(job: ImportJob): string {
    return job.rowsDone ? `the rows up to sheet row ${job.lastRow} (${job.rowsDone} rows) were applied, the rest not` : 'no row was applied';
  }

  /** `import.progress` to the customer's operators, at most every PROGRESS_INTERVAL_MS per job (final states always). */
  private progress(job: ImportJob, force = false): void {
    const now = Date.now();
    if (!force && now - (this.lastProgress.get(job.id) ?? 0) < PROGRESS_INTERVAL_MS) return;
    this.lastProgress.set(job.id, now);
    this.notifier.toOperators(job.customerId, 'import.progress', {
      jobId: job.id,
      state: job.state,
      rowsDone: job.rowsDone,
      rowsTotal: job.rowsTotal,
      createCount: job.createCount,
      updateCount: job.updateCount,
      failCount: job.failCount,
      error: job.error,
    });
  }

  /** Upload files left by a crash between the upload and its job's insert (or a lost clean-up). */
  private async removeOrphans(): Promise<void> {
    const names = (await readdir(this.dir)).filter(isUploadName);
    if (!names.length) return;
    const live = new Set(
      (
        await this.transactions.manager
          .createQueryBuilder(ImportJob, 'j')
          .select('j.filePath', 'filePath')
          .where("j.state IN ('queued', 'running')")
          .getRawMany<{ filePath: string }>()
      ).map((r) => r.filePath),
    );
    for (const name of names) {
      if (live.has(name)) continue;
      const info = await stat(join(this.dir, name)).catch(() => null);
      if (info && Date.now() - info.mtimeMs > ORPHAN_AGE_MS) await rm(join(this.dir, name), { force: true });
    }
  }
}

/** The quick count the upload took of the job's file (see ImportJob.sheetCount), if it holds one. */
function sheetCountOf(job: ImportJob): XlsxRowCount | undefined {
  if (!job.sheetCount) return undefined;
  try {
    const { rows, valueRows, hasLinks } = JSON.parse(job.sheetCount) as Partial<XlsxRowCount>;
    if (Number.isInteger(rows) && Number.isInteger(valueRows) && typeof hasLinks === 'boolean') return { rows, valueRows, hasLinks } as XlsxRowCount;
  } catch {
    // Not ours: the job counts the file itself.
  }
  return undefined;
}

/** The items in arrays of `size` (the last one shorter). */
async function* chunksOf<T>(items: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  for await (const item of items) {
    chunk.push(item);
    if (chunk.length < size) continue;
    yield chunk;
    chunk = [];
  }
  if (chunk.length) yield chunk;
}
