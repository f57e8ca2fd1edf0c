import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Between, EntityManager, In, IsNull, LessThan, LessThanOrEqual, Not } from 'typeorm';
import { finishedWithin } from '../common/util/finished-within';
import { AppConfig } from '../config/app-config';
import { utcDate } from '../database/column-transformers';
import { Transactions } from '../database/transactions';
import { requestContext } from '../logging/request-context';
import { Metrics } from '../metrics/metrics.service';
import { WebhookDelivery } from './entities/webhook-delivery.entity';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { nextAttemptAt } from './webhook-backoff';
import { afterTries, BREAKER_THRESHOLD } from './webhook-breaker';
import { DueEndpoint, Held, planClaim } from './webhook-fairness';
import { WebhookSender } from './webhook-sender';
import { DELIVERY_ID_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signatureHeader } from './webhook-signature';

interface Outcome {
  id: number;
  claimToken: string;
  endpointId: number;
  change: Partial<WebhookDelivery>;
  /** The try's outcome for the metric; null when no try was made (the endpoint was paused or inactive). */
  label: 'delivered' | 'retry' | 'failed' | null;
  /** For the endpoint's breaker: whether the receiver took it; null when no request was sent. */
  delivered: boolean | null;
  done: (err?: Error) => void;
}

/** The error of a delivery given up untried because its endpoint was paused past its retry window. */
export const PAUSED_PAST_WINDOW = 'not tried: the endpoint was paused past the retry window';
/** The error of a delivery given up untried because it came due after its retry window for another reason (a lease that ended after it). */
const WINDOW_ENDED = 'not tried: the retry window had ended';

/** Endpoints the claim's first read looks at (the oldest due first). */
const CLAIM_ENDPOINTS = 256;

const DUE_STATES = "d.state IN ('pending', 'sending') AND d.nextAttemptAt <= :now";

/**
 * The claim's first read, a plain one (no write transaction when nothing is due): the endpoints with due
 * deliveries that are not paused, oldest due first, with how many are due. Endpoints and customers that
 * hold all this node lets them are left out (`:...fullEndpoints`, `:...fullCustomers`), so that they
 * never crowd out the others of the CLAIM_ENDPOINTS.
 */
const DUE_ENDPOINTS_SQL = (fullEndpoints: boolean, fullCustomers: boolean) =>
  `SELECT d.endpointId AS endpointId, d.customerId AS customerId, COUNT(*) AS due, MAX(e.failureStreak) AS failureStreak
FROM webhook_deliveries d INNER JOIN webhook_endpoints e ON e.id = d.endpointId
WHERE ${DUE_STATES} AND (e.pausedUntil IS NULL OR e.pausedUntil <= :now)${fullEndpoints ? ' AND d.endpointId NOT IN (:...fullEndpoints)' : ''}${
    fullCustomers ? ' AND d.customerId NOT IN (:...fullCustomers)' : ''
  }
GROUP BY d.endpointId, d.customerId
ORDER BY MIN(d.nextAttemptAt)
LIMIT ${CLAIM_ENDPOINTS}`;

/**
 * Due rows the claim's first read counts one by one (DUE_ENDPOINTS_SQL); past that many it reads each
 * endpoint's oldest due row through the endpoint index instead (DUE_BY_ENDPOINT_SQL). Grouping every due
 * row costs a pass over all of them, on every poll and after every commit that records deliveries: with
 * 100,000 due rows behind one customer's dead receiver it took 57-110 ms of SQLite on the main thread.
 */
const DUE_SCAN_ROWS = 2000;

const DUE_COUNT_SQL = `SELECT COUNT(*) AS n FROM (SELECT 1 FROM webhook_deliveries d WHERE ${DUE_STATES} LIMIT ${DUE_SCAN_ROWS + 1}) t`;

/**
 * The claim's first read when many rows are due: each endpoint that is not paused (nor full) with its
 * oldest due row in each state, two seeks of the (endpointId, state, nextAttemptAt) index, so the cost
 * grows with the endpoints (at most 20 a customer), not with their backlog. How many are due is not
 * counted: an endpoint with any is taken to have as many as it may claim.
 */
const DUE_BY_ENDPOINT_SQL = (fullEndpoints: boolean, fullCustomers: boolean) => {
  const oldest = (state: string) =>
    `(SELECT d.nextAttemptAt FROM webhook_deliveries d WHERE d.endpointId = e.id AND d.state = '${state}' AND d.nextAttemptAt <= :now ORDER BY d.nextAttemptAt LIMIT 1)`;
  return `SELECT e.id AS endpointId, e.customerId AS customerId, e.failureStreak AS failureStreak, ${oldest('pending')} AS pendingAt, ${oldest('sending')} AS sendingAt
FROM webhook_endpoints e
WHERE (e.pausedUntil IS NULL OR e.pausedUntil <= :now)${fullEndpoints ? ' AND e.id NOT IN (:...fullEndpoints)' : ''}${fullCustomers ? ' AND e.customerId NOT IN (:...fullCustomers)' : ''}`;
};

/** Endpoints whose oldest due rows one claim statement reads (two index seeks each; SQLite takes at most 500 terms in a UNION). */
const CLAIM_ENDPOINTS_PER_STATEMENT = 100;

/**
 * The oldest `:most` due rows of each listed endpoint in each state, read through the (endpointId, state,
 * nextAttemptAt) index: a LIMIT per endpoint and state, so an endpoint's backlog is never read whole.
 */
const DUE_OF_ENDPOINTS_SQL = (endpoints: number) =>
  Array.from({ length: endpoints * 2 }, (_, i) => {
    const state = i % 2 === 0 ? 'pending' : 'sending';
    return `SELECT id, endpointId, nextAttemptAt FROM (SELECT d.id AS id, d.endpointId AS endpointId, d.nextAttemptAt AS nextAttemptAt FROM webhook_deliveries d WHERE d.endpointId = :e${i >> 1} AND d.state = '${state}' AND d.nextAttemptAt <= :now ORDER BY d.nextAttemptAt, d.id LIMIT :most) t${i}`;
  }).join('\nUNION ALL\n');

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
  /** Sends in flight per endpoint and per customer (for WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_CUSTOMER_CONCURRENCY). */
  private readonly sending: Held = { endpoint: new Map(), customer: new Map() };
  /** Outcome writes under way. */
  private readonly writing = new Set<Promise<void>>();
  /**
   * Per endpoint this node sends to: its failed tries in a row as last read or written (`streak`, taken
   * at tick `at` of `ticks`, so that a read begun before a write that committed does not overwrite it),
   * and the outcomes of its tries that have ended but are not written yet, in the order they ended.
   */
  private readonly breakers = new Map<number, { streak: number; at: number; unwritten: Array<Omit<Outcome, 'done'>> }>();
  private ticks = 0;
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
        const { claimed, more } = await this.claim(room);
        this.saturated = more;
        this.queue.push(...claimed);
        this.pump();
      } while (this.again && !this.stopping);
    } catch (err) {
      this.logger.warn(`claiming webhook deliveries failed: ${(err as Error).message}`);
    }
  }

  /**
   * Starts queued sends, oldest claim first, while slots are free: a row whose endpoint or customer already
   * holds all the slots it may (WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_CUSTOMER_CONCURRENCY) waits in the
   * queue and the rows behind it go first. Asks for more rows when the queue runs low, or slots are free,
   * after a claim that left due rows behind.
   */
  private pump(): void {
    const { concurrency, timeoutMs, endpointConcurrency, customerConcurrency } = this.config.webhooks;
    for (let i = 0; i < this.queue.length && this.inFlight.size < concurrency;) {
      const delivery = this.queue[i];
      // Too little of its lease left to send and write back in time: left for a later claim.
      if (delivery.nextAttemptAt.getTime() - Date.now() < timeoutMs + 10_000) {
        this.queue.splice(i, 1);
        continue;
      }
      if (
        (this.sending.endpoint.get(delivery.endpointId) ?? 0) >= endpointConcurrency ||
        (this.sending.customer.get(delivery.customerId) ?? 0) >= customerConcurrency ||
        this.mayOpenBreaker(delivery.endpointId)
      ) {
        i += 1;
        continue;
      }
      this.queue.splice(i, 1);
      this.start(delivery);
    }
    if (this.saturated && (this.queue.length <= concurrency || this.inFlight.size < concurrency)) {
      this.saturated = false;
      this.wake();
    }
  }

  /**
   * Whether tries of the endpoint that ended on this node and are not written yet could open its breaker
   * once they are (webhook-breaker.ts): then no try of it starts until they are written, and the pause
   * they open is seen by the next try's read (deliver). Without this, after a 5th failure in a row the
   * next queued row went out before the batch that records the pause was written.
   */
  private mayOpenBreaker(endpointId: number): boolean {
    const b = this.breakers.get(endpointId);
    if (!b?.unwritten.some((o) => o.delivered === false)) return false;
    let streak = b.streak;
    for (const o of b.unwritten) streak = o.delivered ? 0 : streak + 1;
    return streak >= BREAKER_THRESHOLD;
  }

  /** Notes an endpoint's failureStreak as read or written at tick `at` (a later tick's value wins). */
  private noteStreak(endpointId: number, streak: number, at: number): void {
    const b = this.breakers.get(endpointId);
    if (!b) this.breakers.set(endpointId, { streak, at, unwritten: [] });
    else if (at > b.at) Object.assign(b, { streak, at });
  }

  /** What this node holds per endpoint and per customer: sends in flight and claimed rows queued. */
  private held(): Held {
    const held: Held = { endpoint: new Map(this.sending.endpoint), customer: new Map(this.sending.customer) };
    for (const d of this.queue) {
      held.endpoint.set(d.endpointId, (held.endpoint.get(d.endpointId) ?? 0) + 1);
      held.customer.set(d.customerId, (held.customer.get(d.customerId) ?? 0) + 1);
    }
    return held;
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
    const bump = (m: Map<number, number>, key: number, by: number) => {
      const n = (m.get(key) ?? 0) + by;
      if (n > 0) m.set(key, n);
      else m.delete(key);
    };
    bump(this.sending.endpoint, delivery.endpointId, 1);
    bump(this.sending.customer, delivery.customerId, 1);
    // The slot is free once the send is over; the outcome is written apart (the row stays claimed by
    // this node until then, so nobody else takes it).
    const task: Promise<void> = this.deliver(delivery)
      .then((outcome) => {
        if (!outcome) return;
        // Known before this slot frees (and pump runs), so that the endpoint's next try waits if need be.
        if (outcome.delivered !== null) this.breakers.get(outcome.endpointId)?.unwritten.push(outcome);
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
        bump(this.sending.endpoint, delivery.endpointId, -1);
        bump(this.sending.customer, delivery.customerId, -1);
        if (!this.sending.endpoint.has(delivery.endpointId) && !this.breakers.get(delivery.endpointId)?.unwritten.length) {
          this.breakers.delete(delivery.endpointId);
        }
        if (!this.stopping) this.pump();
      });
    this.inFlight.add(task);
  }

  /**
   * Claims up to `room` due deliveries for this node (committed before anything is sent), fairly: a plain
   * read finds the endpoints with due rows (not paused, not already holding all this node lets them),
   * `planClaim` shares the room round-robin over their customers and endpoints, and the claim transaction
   * takes the oldest due rows of each planned endpoint. `more`: due rows were left behind.
   */
  private async claim(room: number): Promise<{ claimed: WebhookDelivery[]; more: boolean }> {
    const { endpointConcurrency, customerConcurrency } = this.config.webhooks;
    const limits = { room, perEndpoint: endpointConcurrency * CLAIM_FACTOR, perCustomer: customerConcurrency * CLAIM_FACTOR };
    const held = this.held();
    const fullEndpoints = [...held.endpoint].filter(([, n]) => n >= limits.perEndpoint).map(([id]) => id);
    const fullCustomers = [...held.customer].filter(([, n]) => n >= limits.perCustomer).map(([id]) => id);
    // A plain read first: most polls find nothing due and then open no write transaction (on SQLite, none
    // that would take a turn among the writers).
    const due = await this.dueEndpoints(this.transactions.manager, new Date(), fullEndpoints, fullCustomers);
    const plan = planClaim(due, held, limits);
    if (!plan.size) return { claimed: [], more: false };
    const dueTotal = due.reduce((sum, e) => sum + e.due, 0);
    // READ COMMITTED (MySQL): the claim locks only the rows it takes, not the gaps of the due index, so it
    // never deadlocks with the requests inserting new deliveries into it.
    const claimed = await this.transactions.runAgainOnDeadlock(async (em) => {
      const now = new Date();
      const most = Math.max(...plan.values());
      const planned = [...plan.keys()];
      const rows: Array<{ id: number; endpointId: number; at: number }> = [];
      for (let i = 0; i < planned.length; i += CLAIM_ENDPOINTS_PER_STATEMENT) {
        const chunk = planned.slice(i, i + CLAIM_ENDPOINTS_PER_STATEMENT);
        const named = Object.fromEntries(chunk.map((id, j) => [`e${j}`, id]));
        const [sql, parameters] = em.connection.driver.escapeQueryWithParameters(DUE_OF_ENDPOINTS_SQL(chunk.length), { ...named, now, most }, {});
        for (const r of await em.query<Array<{ id: number | string; endpointId: number | string; nextAttemptAt: Date | string }>>(sql, parameters)) {
          rows.push({ id: Number(r.id), endpointId: Number(r.endpointId), at: utcDate(r.nextAttemptAt).getTime() });
        }
      }
      // Each endpoint's oldest first (both states together), as the index gives each state.
      rows.sort((a, b) => a.at - b.at || a.id - b.id);
      const taking = new Map(plan);
      let ids: number[] = [];
      for (const r of rows) {
        const left = taking.get(r.endpointId) ?? 0;
        if (left <= 0) continue;
        taking.set(r.endpointId, left - 1);
        ids.push(r.id);
      }
      if (!ids.length) return [];
      const due = { state: In(['pending', 'sending']), nextAttemptAt: LessThanOrEqual(now) };
      if (this.transactions.isMysql) {
        // Rows another node's claim holds right now are skipped, never waited for (they are its).
        const locked = await em
          .createQueryBuilder(WebhookDelivery, 'd')
          .select('d.id', 'id')
          .where({ id: In(ids), ...due })
          .setLock('pessimistic_write')
          .setOnLocked('skip_locked')
          .getRawMany<{ id: number | string }>();
        ids = locked.map((r) => Number(r.id));
        if (!ids.length) return [];
      }
      const token = randomUUID();
      await em
        .createQueryBuilder()
        .update(WebhookDelivery)
        .set({ state: 'sending', claimToken: token, nextAttemptAt: new Date(now.getTime() + this.leaseMs), attempts: () => 'attempts + 1' })
        .where({ id: In(ids), ...due })
        .execute();
      return em.find(WebhookDelivery, { where: { claimToken: token }, order: { nextAttemptAt: 'ASC', id: 'ASC' } });
    }, 'READ COMMITTED');
    return { claimed, more: claimed.length > 0 && dueTotal > claimed.length };
  }

  /**
   * The claim's first read: DUE_ENDPOINTS_SQL while at most DUE_SCAN_ROWS rows are due (exact counts,
   * one pass over them), else DUE_BY_ENDPOINT_SQL (each endpoint's oldest due rows through its index).
   */
  private async dueEndpoints(em: EntityManager, now: Date, fullEndpoints: number[], fullCustomers: number[]): Promise<DueEndpoint[]> {
    const driver = em.connection.driver;
    const params = { now, fullEndpoints, fullCustomers };
    const [countSql, countParams] = driver.escapeQueryWithParameters(DUE_COUNT_SQL, params, {});
    const [{ n }] = await em.query<Array<{ n: number | string }>>(countSql, countParams);
    if (Number(n) > DUE_SCAN_ROWS) {
      const [sql, parameters] = driver.escapeQueryWithParameters(DUE_BY_ENDPOINT_SQL(fullEndpoints.length > 0, fullCustomers.length > 0), params, {});
      const rows = await em.query<
        Array<{
          endpointId: number | string;
          customerId: number | string;
          failureStreak: number | string;
          pendingAt: Date | string | null;
          sendingAt: Date | string | null;
        }>
      >(sql, parameters);
      const perEndpoint = this.config.webhooks.endpointConcurrency * CLAIM_FACTOR;
      return rows
        .map((r) => ({ r, at: Math.min(...[r.pendingAt, r.sendingAt].filter((v) => v !== null && v !== undefined).map((v) => utcDate(v).getTime())) }))
        .filter(({ at }) => Number.isFinite(at))
        .sort((a, b) => a.at - b.at)
        .slice(0, CLAIM_ENDPOINTS)
        .map(({ r }) => ({
          endpointId: Number(r.endpointId),
          customerId: Number(r.customerId),
          due: perEndpoint,
          probing: Number(r.failureStreak) >= BREAKER_THRESHOLD,
        }));
    }
    const [sql, parameters] = driver.escapeQueryWithParameters(DUE_ENDPOINTS_SQL(fullEndpoints.length > 0, fullCustomers.length > 0), params, {});
    const rows = await em.query<Array<Record<'endpointId' | 'customerId' | 'due' | 'failureStreak', number | string>>>(sql, parameters);
    return rows.map((r) => ({
      endpointId: Number(r.endpointId),
      customerId: Number(r.customerId),
      due: Number(r.due),
      probing: Number(r.failureStreak) >= BREAKER_THRESHOLD,
    }));
  }

  /**
   * One try of one claimed delivery; answers its outcome to write (null when the endpoint is gone). No
   * try starts after the delivery's retry window, whatever made it due (a pause, a lease that ended after
   * the window): it is given up untried, the claim's try not counted. An endpoint paused since the claim
   * (its breaker opened meanwhile, maybe on another node) gets no request: the row goes back to pending
   * until the pause ends, the claim's try not counted, or is given up when that would start after the
   * retry window.
   */
  private async deliver(delivery: WebhookDelivery): Promise<Omit<Outcome, 'done'> | null> {
    const readAt = ++this.ticks;
    const endpoint = await this.transactions.manager.findOne(WebhookEndpoint, { where: { id: delivery.endpointId } });
    const now = () => new Date();
    if (!endpoint) return null; // deleted meanwhile: its deliveries went with it
    this.noteStreak(delivery.endpointId, endpoint.failureStreak, readAt);
    const base = { id: delivery.id, claimToken: delivery.claimToken as string, endpointId: delivery.endpointId };
    if (Date.now() > delivery.createdAt.getTime() + this.config.webhooks.retryWindowMs) {
      const why = endpoint.pausedUntil ? PAUSED_PAST_WINDOW : WINDOW_ENDED;
      const change: Partial<WebhookDelivery> = {
        state: 'failed',
        finishedAt: now(),
        claimToken: null,
        attempts: delivery.attempts - 1,
        lastError: delivery.lastError ?? why,
      };
      return { ...base, change, label: null, delivered: null };
    }
    if (endpoint.pausedUntil && endpoint.pausedUntil.getTime() > Date.now()) {
      const change: Partial<WebhookDelivery> =
        endpoint.pausedUntil.getTime() > delivery.createdAt.getTime() + this.config.webhooks.retryWindowMs
          ? { state: 'failed', finishedAt: now(), claimToken: null, attempts: delivery.attempts - 1, lastError: delivery.lastError ?? PAUSED_PAST_WINDOW }
          : { state: 'pending', nextAttemptAt: endpoint.pausedUntil, claimToken: null, attempts: delivery.attempts - 1 };
      return { ...base, change, label: null, delivered: null };
    }
    // When this try starts (a claimed row may wait its turn on the node); written with its outcome, so a
    // delivery handed back untried keeps the time of its last real try.
    const startedAt = now();
    const timestamp = Math.floor(startedAt.getTime() / 1000);
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
      lastAttemptAt: startedAt,
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
    // An inactive endpoint's try says nothing of its receiver: it does not move the breaker.
    return { ...base, change, label: outcomeLabel, delivered: endpoint.active ? !outcome.error : null };
  }

  /**
   * Outcomes are written in batches: the ones that finished in the same turn of the event loop share one
   * transaction (on SQLite, one turn among the writers instead of one per delivery). Resolves once this
   * one is written.
   */
  private writeOutcome(outcome: Omit<Outcome, 'done'>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // The same object (see breakers): its `done` is added.
      this.outcomes.push(Object.assign(outcome, { done: (err?: Error) => (err ? reject(err) : resolve()) }));
      if (this.outcomes.length === 1) setImmediate(() => void this.flushOutcomes());
    });
  }

  /**
   * Writes a batch of outcomes and moves the breakers of their endpoints (webhook-breaker.ts) in the same
   * transaction. The endpoints' rows are read first, locked in id order on MySQL (so that two nodes'
   * batches, and an endpoint's deletion, take them in one order and the counts add up), then the
   * deliveries (only where the claim token still matches), then each endpoint's new breaker; one that
   * opens moves its pending deliveries to the pause's end (see holdDeliveries).
   */
  private async flushOutcomes(): Promise<void> {
    const batch = this.outcomes.splice(0, OUTCOME_BATCH);
    if (this.outcomes.length) setImmediate(() => void this.flushOutcomes());
    if (!batch.length) return;
    let resumed = false;
    const streaks = new Map<number, number>();
    try {
      // Two nodes' batches (and claims) may deadlock on MySQL: the victim's batch runs again rather than
      // being lost, which would have its deliveries sent again after their lease.
      const applied = await this.transactions.runAgainOnDeadlock(async (em) => {
        streaks.clear();
        resumed = false;
        const endpointIds = [...new Set(batch.filter((o) => o.delivered !== null).map((o) => o.endpointId))].sort((a, b) => a - b);
        let endpoints: WebhookEndpoint[] = [];
        if (endpointIds.length) {
          const qb = em
            .createQueryBuilder(WebhookEndpoint, 'e')
            .select(['e.id', 'e.failureStreak', 'e.pausedUntil'])
            .where({ id: In(endpointIds) })
            .orderBy('e.id', 'ASC');
          if (this.transactions.isMysql) qb.setLock('pessimistic_write');
          endpoints = await qb.getMany();
        }
        const written: boolean[] = [];
        for (const o of batch) written.push(!!(await em.update(WebhookDelivery, { id: o.id, claimToken: o.claimToken }, o.change)).affected);
        const now = new Date();
        for (const e of endpoints) {
          const tries = batch
            .filter((o, i) => written[i] && o.endpointId === Number(e.id) && o.delivered !== null)
            .map((o) => ({ delivered: o.delivered as boolean, startedAt: o.change.lastAttemptAt as Date }));
          if (!tries.length) continue;
          const next = afterTries(e, tries, now, this.schedule());
          streaks.set(Number(e.id), next.failureStreak);
          if (next.failureStreak !== e.failureStreak || next.pausedUntil?.getTime() !== e.pausedUntil?.getTime()) {
            await em.update(WebhookEndpoint, { id: e.id }, { failureStreak: next.failureStreak, pausedUntil: next.pausedUntil });
          }
          // Paused now (just opened, or still, when these tries began before the pause): the rows they
          // left pending are held too, or given up when their window ends first.
          if (next.pausedUntil && next.pausedUntil.getTime() > now.getTime()) await this.holdDeliveries(em, Number(e.id), next.pausedUntil, now);
          // A delivered try (begun before the pause) closed the breaker: the pause is over.
          else if (e.pausedUntil && e.pausedUntil.getTime() > now.getTime()) {
            await this.endPause(em, Number(e.id), e.pausedUntil, now);
            resumed = true;
          }
        }
        return written;
      }, 'READ COMMITTED');
      if (resumed) this.wake();
      const at = ++this.ticks;
      for (const [id, streak] of streaks) this.noteStreak(id, streak, at);
      this.settled(batch);
      batch.forEach((o, i) => {
        if (applied[i] && o.label) this.metrics.webhookDeliveries.inc({ outcome: o.label });
        o.done();
      });
    } catch (err) {
      this.settled(batch);
      for (const o of batch) o.done(err as Error);
    }
  }

  /**
   * Outcomes written (or lost with their batch: their rows are sent again after the lease) no longer wait
   * in `breakers`; the rows they kept waiting may start.
   */
  private settled(batch: Outcome[]): void {
    for (const o of batch) {
      const b = this.breakers.get(o.endpointId);
      if (!b) continue;
      const i = b.unwritten.indexOf(o);
      if (i >= 0) b.unwritten.splice(i, 1);
      if (!b.unwritten.length && !this.sending.endpoint.has(o.endpointId)) this.breakers.delete(o.endpointId);
    }
    if (!this.stopping) this.pump();
  }

  /**
   * An endpoint is paused until `until`: its pending deliveries due before then are moved to then, so
   * that the claim's reads do not meet them while it is paused, and the ones whose retry window ends
   * before then are given up now, as after a failed try whose next one would start past the window. (The
   * error is a bound parameter: a query builder reads words of raw SQL that name an entity's properties,
   * such as `endpoint`, as columns, and rewrites them.)
   */
  private async holdDeliveries(em: EntityManager, endpointId: number, until: Date, now: Date): Promise<void> {
    await em
      .createQueryBuilder()
      .update(WebhookDelivery)
      .set({ state: 'failed', finishedAt: now, lastError: () => 'COALESCE(lastError, :pausedPastWindow)' })
      .setParameter('pausedPastWindow', PAUSED_PAST_WINDOW)
      .where({ endpointId, state: 'pending', createdAt: LessThan(new Date(until.getTime() - this.config.webhooks.retryWindowMs)) })
      .execute();
    await em
      .createQueryBuilder()
      .update(WebhookDelivery)
      .set({ nextAttemptAt: until })
      .where({ endpointId, state: 'pending', nextAttemptAt: LessThan(until) })
      .execute();
  }

  /**
   * An endpoint's pause (until `pausedUntil`) ends early, at `now`: its url changed, or a delivered try
   * closed its breaker. The pending deliveries it held (due by its end) are due now. The caller wakes
   * the dispatcher once its transaction has committed.
   */
  async endPause(em: EntityManager, endpointId: number, pausedUntil: Date, now: Date): Promise<void> {
    await em
      .createQueryBuilder()
      .update(WebhookDelivery)
      .set({ nextAttemptAt: now })
      .where({ endpointId, state: 'pending', nextAttemptAt: Between(new Date(now.getTime() + 1), pausedUntil) })
      .execute();
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
