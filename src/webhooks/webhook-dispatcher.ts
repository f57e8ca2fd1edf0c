import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { In, IsNull, LessThan, LessThanOrEqual, Not } from 'typeorm';
import { finishedWithin } from '../common/util/finished-within';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { requestContext } from '../logging/request-context';
import { Metrics } from '../metrics/metrics.service';
import { WebhookDelivery } from './entities/webhook-delivery.entity';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { nextAttemptAt } from './webhook-backoff';
import { WebhookSender } from './webhook-sender';
import { DELIVERY_ID_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signatureHeader } from './webhook-signature';

interface Outcome {
  id: number;
  claimToken: string;
  change: Partial<WebhookDelivery>;
  label: 'delivered' | 'retry' | 'failed';
  done: (err?: Error) => void;
}

/**
 * A claim takes up to this many times WEBHOOK_CONCURRENCY rows, queued on the node and sent at most
 * WEBHOOK_CONCURRENCY at a time: claims are write transactions, and on a busy SQLite each waits its turn
 * among the request's writes, so claiming little at a time would bound the delivery rate.
 */
const CLAIM_FACTOR = 4;
/** Most outcomes written in one transaction. */
const OUTCOME_BATCH = 200;
/** Longest wait for the sends in flight (and their outcomes) when the node shuts down. */
const SHUTDOWN_WAIT_MS = 5000;
/** Rows deleted per statement when pruning the delivery log. */
const PRUNE_CHUNK = 1000;
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Sends the outbox (webhook_deliveries) on every node. A node claims due rows (pending, or sending with an
 * expired claim) in a short transaction: on MySQL with `SELECT … FOR UPDATE SKIP LOCKED`, so two nodes
 * never take the same row and never wait for each other; on SQLite (one process) with a conditional
 * UPDATE. A claim sets state sending, a random claim token and nextAttemptAt = the lease's end (well past
 * the send timeout): a node killed mid-send leaves the row to be claimed again once its lease is over.
 * The send happens after the claim has committed (no network I/O in a transaction), at most
 * WEBHOOK_CONCURRENCY at a time per node; its outcome is written only while the claim token still matches.
 *
 * It looks for due rows right after a commit of this node recorded some (wake), every WEBHOOK_POLL_MS
 * (for the other nodes' events and for retries), and again as soon as half its slots are free after a
 * full claim. On shutdown it stops claiming and waits up to 5 s for the sends in flight.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly inFlight = new Set<Promise<void>>();
  /** Outcomes of finished sends waiting to be written (see writeOutcome). */
  private readonly outcomes: Outcome[] = [];
  /** Rows this node claimed and has not started sending (at most CLAIM_FACTOR × WEBHOOK_CONCURRENCY with the sends). */
  private readonly queue: WebhookDelivery[] = [];
  /** Outcome writes under way. */
  private readonly writing = new Set<Promise<void>>();
  private readonly leaseMs: number;
  private pollTimer?: NodeJS.Timeout;
  private pruneTimer?: NodeJS.Timeout;
  private stopping = false;
  private started = false;
  /** The claim loop running now, if any. */
  private claiming: Promise<void> | null = null;
  private again = false;
  /** The last claim took all it asked for: there may be more due rows. */
  private saturated = false;

  constructor(
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly sender: WebhookSender,
    private readonly metrics: Metrics,
  ) {
    // A claimed row may wait behind CLAIM_FACTOR rounds of sends before its own: the lease covers them all.
    this.leaseMs = config.webhooks.timeoutMs * (CLAIM_FACTOR + 1) + 30_000;
  }

  onApplicationBootstrap(): void {
    this.started = true;
    this.pollTimer = setInterval(() => this.wake(), this.config.webhooks.pollMs);
    this.pruneTimer = setInterval(
      () => void this.prune().catch((err: Error) => this.logger.warn(`pruning the delivery log failed: ${err.message}`)),
      PRUNE_EVERY_MS,
    );
    this.pollTimer.unref();
    this.pruneTimer.unref();
    this.wake();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.pollTimer);
    clearInterval(this.pruneTimer);
    // A claim that is under way ends first; what it took and has not started is handed back at once.
    await this.claiming;
    await this.release(this.queue.splice(0)).catch((err: Error) => this.logger.warn(`handing back claimed webhook deliveries failed: ${err.message}`));
    if (!this.inFlight.size && !this.writing.size) return;
    const settled = (async () => {
      await Promise.allSettled([...this.inFlight]);
      await Promise.allSettled([...this.writing]);
    })();
    await finishedWithin(settled, SHUTDOWN_WAIT_MS);
    if (this.inFlight.size) this.logger.warn(`${this.inFlight.size} webhook sends still in flight at shutdown; they are claimed again when their lease ends`);
  }

  /** Looks for due deliveries soon (after the current turn); never throws. */
  wake(): void {
    if (!this.started || this.stopping) return;
    // Outside the request that woke it: the dispatcher's log lines belong to no request.
    requestContext.exit(() => setImmediate(() => void this.claimAndSend()));
  }

  private claimAndSend(): Promise<void> {
    if (this.claiming) {
      this.again = true;
      return this.claiming;
    }
    this.claiming = this.claimLoop().finally(() => {
      this.claiming = null;
    });
    return this.claiming;
  }

  private async claimLoop(): Promise<void> {
    try {
      do {
        this.again = false;
        const room = this.config.webhooks.concurrency * CLAIM_FACTOR - this.inFlight.size - this.queue.length;
        if (room <= 0 || this.stopping) break;
        const claimed = await this.claim(room);
        this.saturated = claimed.length === room;
        this.queue.push(...claimed);
        this.pump();
      } while (this.again && !this.stopping);
    } catch (err) {
      this.logger.warn(`claiming webhook deliveries failed: ${(err as Error).message}`);
    }
  }

  /** Starts queued sends while slots are free; asks for more rows when the queue runs low after a full claim. */
  private pump(): void {
    const { concurrency, timeoutMs } = this.config.webhooks;
    while (this.inFlight.size < concurrency && this.queue.length) {
      const delivery = this.queue.shift() as WebhookDelivery;
      // Too little of its lease left to send and write back in time: left for a later claim.
      if (delivery.nextAttemptAt.getTime() - Date.now() < timeoutMs + 10_000) continue;
      this.start(delivery);
    }
    if (this.saturated && this.queue.length <= concurrency) {
      this.saturated = false;
      this.wake();
    }
  }

  /** Hands claimed rows that were never sent back (due now, the claim's try not counted). */
  private async release(deliveries: WebhookDelivery[]): Promise<void> {
    if (!deliveries.length) return;
    await this.transactions.run(async (em) => {
      for (const d of deliveries) {
        await em.update(
          WebhookDelivery,
          { id: d.id, claimToken: d.claimToken as string },
          { state: 'pending', claimToken: null, nextAttemptAt: new Date(), attempts: d.attempts - 1 },
        );
      }
    });
  }

  private start(delivery: WebhookDelivery): void {
    // The slot is free once the send is over; the outcome is written apart (the row stays claimed by
    // this node until then, so nobody else takes it).
    const task: Promise<void> = this.deliver(delivery)
      .then((outcome) => {
        if (!outcome) return;
        const write: Promise<void> = this.writeOutcome(outcome)
          .catch((err: Error) =>
            this.logger.warn(`webhook delivery ${delivery.id}: its outcome could not be written (${err.message}); it is sent again after its lease`),
          )
          .finally(() => this.writing.delete(write));
        this.writing.add(write);
      })
      .catch((err: Error) => this.logger.warn(`webhook delivery ${delivery.id} failed: ${err.message}`))
      .finally(() => {
        this.inFlight.delete(task);
        if (!this.stopping) this.pump();
      });
    this.inFlight.add(task);
  }

  /** Claims up to `limit` due deliveries for this node (committed before anything is sent). */
  private async claim(limit: number): Promise<WebhookDelivery[]> {
    // A plain indexed read first: most polls find nothing due and then open no write transaction (on
    // SQLite, none that would take a turn among the writers).
    const dueNow = () => ({ state: In(['pending', 'sending']), nextAttemptAt: LessThanOrEqual(new Date()) });
    if (!(await this.transactions.manager.findOne(WebhookDelivery, { select: { id: true }, where: dueNow() }))) return [];
    // READ COMMITTED (MySQL): the claim locks only the rows it takes, not the gaps of the due index, so it
    // never deadlocks with the requests inserting new deliveries into it.
    return this.transactions.run(async (em) => {
      const now = new Date();
      const due = { state: In(['pending', 'sending']), nextAttemptAt: LessThanOrEqual(now) };
      const qb = em.createQueryBuilder(WebhookDelivery, 'd').select('d.id', 'id').where(due).orderBy('d.nextAttemptAt', 'ASC').limit(limit);
      if (this.transactions.isMysql) qb.setLock('pessimistic_write').setOnLocked('skip_locked');
      const ids = (await qb.getRawMany<{ id: number | string }>()).map((r) => Number(r.id));
      if (!ids.length) return [];
      const token = randomUUID();
      await em
        .createQueryBuilder()
        .update(WebhookDelivery)
        .set({ state: 'sending', claimToken: token, nextAttemptAt: new Date(now.getTime() + this.leaseMs), attempts: () => 'attempts + 1', lastAttemptAt: now })
        .where({ id: In(ids), ...due })
        .execute();
      return em.find(WebhookDelivery, { where: { claimToken: token } });
    }, 'READ COMMITTED');
  }

  /** One try of one claimed delivery, then its outcome (only if the claim is still ours). */
  /** One try of one claimed delivery; answers its outcome to write (null when the endpoint is gone). */
  private async deliver(delivery: WebhookDelivery): Promise<Omit<Outcome, 'done'> | null> {
    const endpoint = await this.transactions.manager.findOne(WebhookEndpoint, { where: { id: delivery.endpointId } });
    const now = () => new Date();
    if (!endpoint) return null; // deleted meanwhile: its deliveries went with it
    const timestamp = Math.floor(Date.now() / 1000);
    const outcome = !endpoint.active
      ? { statusCode: null, durationMs: 0, error: 'the endpoint is inactive' }
      : await this.sender.send(
          endpoint.url,
          {
            [SIGNATURE_HEADER]: signatureHeader(endpoint.secret, timestamp, delivery.body),
            [EVENT_ID_HEADER]: delivery.eventId,
            [EVENT_TYPE_HEADER]: delivery.eventType,
            [DELIVERY_ID_HEADER]: String(delivery.id),
          },
          delivery.body,
        );
    this.metrics.webhookSendDuration.observe(outcome.durationMs / 1000);
    const result = {
      lastStatusCode: outcome.statusCode,
      lastDurationMs: outcome.durationMs,
      lastError: outcome.error?.slice(0, 500) ?? null,
      claimToken: null,
    };
    let outcomeLabel: 'delivered' | 'retry' | 'failed';
    let change: Partial<WebhookDelivery>;
    if (!outcome.error) {
      outcomeLabel = 'delivered';
      change = { ...result, state: 'delivered', finishedAt: now() };
    } else {
      const next = nextAttemptAt(delivery.createdAt, delivery.attempts, now(), this.schedule());
      outcomeLabel = next ? 'retry' : 'failed';
      change = next ? { ...result, state: 'pending', nextAttemptAt: next } : { ...result, state: 'failed', finishedAt: now() };
    }
    return { id: delivery.id, claimToken: delivery.claimToken as string, change, label: outcomeLabel };
  }

  /**
   * Outcomes are written in batches: the ones that finished in the same turn of the event loop share one
   * transaction (on SQLite, one turn among the writers instead of one per delivery). Resolves once this
   * one is written.
   */
  private writeOutcome(outcome: Omit<Outcome, 'done'>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.outcomes.push({ ...outcome, done: (err) => (err ? reject(err) : resolve()) });
      if (this.outcomes.length === 1) setImmediate(() => void this.flushOutcomes());
    });
  }

  private async flushOutcomes(): Promise<void> {
    const batch = this.outcomes.splice(0, OUTCOME_BATCH);
    if (this.outcomes.length) setImmediate(() => void this.flushOutcomes());
    if (!batch.length) return;
    try {
      const applied = await this.transactions.run(async (em) => {
        const written: boolean[] = [];
        for (const o of batch) written.push(!!(await em.update(WebhookDelivery, { id: o.id, claimToken: o.claimToken }, o.change)).affected);
        return written;
      });
      batch.forEach((o, i) => {
        if (applied[i]) this.metrics.webhookDeliveries.inc({ outcome: o.label });
        o.done();
      });
    } catch (err) {
      for (const o of batch) o.done(err as Error);
    }
  }

  private schedule() {
    const w = this.config.webhooks;
    return { baseMs: w.retryBaseMs, maxDelayMs: w.retryMaxDelayMs, windowMs: w.retryWindowMs };
  }

  /** Deletes delivered and failed deliveries older than WEBHOOK_RETENTION_DAYS, in chunks. */
  async prune(): Promise<number> {
    const before = new Date(Date.now() - this.config.webhooks.retentionDays * 86_400_000);
    let total = 0;
    for (;;) {
      const rows = await this.transactions.manager.find(WebhookDelivery, {
        select: { id: true },
        where: { finishedAt: LessThan(before), state: In(['delivered', 'failed']) },
        take: PRUNE_CHUNK,
      });
      if (!rows.length) return total;
      await this.transactions.run((em) => em.delete(WebhookDelivery, { id: In(rows.map((r) => r.id)), finishedAt: Not(IsNull()) }));
      total += rows.length;
      if (rows.length < PRUNE_CHUNK || this.stopping) return total;
    }
  }
}
