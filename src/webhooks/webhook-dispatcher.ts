import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { In, IsNull, LessThan, LessThanOrEqual, Not } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics.service';
import { WebhookDelivery } from './entities/webhook-delivery.entity';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { nextAttemptAt } from './webhook-backoff';
import { WebhookSender } from './webhook-sender';
import { DELIVERY_ID_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signatureHeader } from './webhook-signature';

/** Longest wait for the sends in flight when the node shuts down. */
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
  private readonly leaseMs: number;
  private pollTimer?: NodeJS.Timeout;
  private pruneTimer?: NodeJS.Timeout;
  private stopping = false;
  private started = false;
  /** The claim loop running now, if any. */
  private claiming: Promise<void> | null = null;
  private again = false;
  /** The last claim filled every free slot: there may be more due rows. */
  private saturated = false;

  constructor(
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly sender: WebhookSender,
    private readonly metrics: Metrics,
  ) {
    this.leaseMs = config.webhooks.timeoutMs * 2 + 30_000;
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
    // A claim that is under way ends first: what it took is then in flight and waited for below.
    await this.claiming;
    if (!this.inFlight.size) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_WAIT_MS)))]);
    clearTimeout(timer);
    if (this.inFlight.size) this.logger.warn(`${this.inFlight.size} webhook sends still in flight at shutdown; they are claimed again when their lease ends`);
  }

  /** Looks for due deliveries soon (after the current turn); never throws. */
  wake(): void {
    if (!this.started || this.stopping) return;
    setImmediate(() => void this.claimAndSend());
  }

  /** Sends in flight on this node (for tests and the bench). */
  get sending(): number {
    return this.inFlight.size;
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
        const room = this.config.webhooks.concurrency - this.inFlight.size;
        if (room <= 0 || this.stopping) break;
        const claimed = await this.claim(room);
        this.saturated = claimed.length === room;
        for (const delivery of claimed) this.start(delivery);
      } while (this.again && !this.stopping);
    } catch (err) {
      this.logger.warn(`claiming webhook deliveries failed: ${(err as Error).message}`);
    }
  }

  private start(delivery: WebhookDelivery): void {
    const task: Promise<void> = this.deliver(delivery)
      .catch((err: Error) => this.logger.warn(`webhook delivery ${delivery.id} failed to record its outcome: ${err.message}`))
      .finally(() => {
        this.inFlight.delete(task);
        if (this.saturated && this.inFlight.size <= this.config.webhooks.concurrency / 2) {
          this.saturated = false;
          this.wake();
        }
      });
    this.inFlight.add(task);
  }

  /** Claims up to `limit` due deliveries for this node (committed before anything is sent). */
  private async claim(limit: number): Promise<WebhookDelivery[]> {
    // A plain indexed read first: most polls find nothing due and then open no write transaction (on
    // SQLite, none that would take a turn among the writers).
    const dueNow = () => ({ state: In(['pending', 'sending']), nextAttemptAt: LessThanOrEqual(new Date()) });
    if (!(await this.transactions.manager.findOne(WebhookDelivery, { select: { id: true }, where: dueNow() }))) return [];
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
    });
  }

  /** One try of one claimed delivery, then its outcome (only if the claim is still ours). */
  private async deliver(delivery: WebhookDelivery): Promise<void> {
    const endpoint = await this.transactions.manager.findOne(WebhookEndpoint, { where: { id: delivery.endpointId } });
    const now = () => new Date();
    if (!endpoint) return; // deleted meanwhile: its deliveries went with it
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
    const written = await this.transactions.run((em) => em.update(WebhookDelivery, { id: delivery.id, claimToken: delivery.claimToken as string }, change));
    if (written.affected) this.metrics.webhookDeliveries.inc({ outcome: outcomeLabel });
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
