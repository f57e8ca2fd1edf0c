import { randomBytes } from 'node:crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import type { QueryResult } from 'typeorm/query-runner/QueryResult';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics.service';
import { PAUSED_PAST_WINDOW, WebhookDispatcher } from './webhook-dispatcher';
import { WebhookEventMap, WebhookEventType } from './webhook-event-types';

/** Event types are plain dotted names: nothing in them is special to LIKE. */
const SAFE_TYPE = /^[A-Za-z]+(\.[A-Za-z]+)*$/;

/**
 * One delivery per active endpoint of the customer whose comma-separated `events` holds the type
 * (exactly, first, last or in between), due now, or when the endpoint's pause ends if its circuit breaker
 * is open (webhook-breaker.ts); given up at once, untried, when that pause ends after the event's retry
 * window (`:windowEnd`). Plain SQL both engines read alike; the error is a bound parameter.
 */
const RECORD_SQL = `INSERT INTO webhook_deliveries (customerId, endpointId, eventId, eventType, body, state, attempts, nextAttemptAt, createdAt, finishedAt, lastError)
SELECT customerId, id, :eventId, :type, :body, CASE WHEN pausedUntil > :windowEnd THEN 'failed' ELSE 'pending' END, 0,
  CASE WHEN pausedUntil > :now THEN pausedUntil ELSE :now END, :now,
  CASE WHEN pausedUntil > :windowEnd THEN :now ELSE NULL END, CASE WHEN pausedUntil > :windowEnd THEN :pausedPastWindow ELSE NULL END
FROM webhook_endpoints
WHERE customerId = :customerId AND active = 1 AND (events = :only OR events LIKE :first OR events LIKE :last OR events LIKE :inner)`;

/** A new event id: `evt_` + 16 random bytes, hex. */
export function newEventId(): string {
  return `evt_${randomBytes(16).toString('hex')}`;
}

/**
 * Where every webhook event is produced. `record` writes one delivery row per active endpoint of the
 * customer subscribed to the type, through the caller's entity manager: in the transaction of the change
 * that caused the event (the outbox), so the event exists exactly when the change does, and no network
 * I/O happens here. Once that transaction commits, this node's dispatcher is woken to send them (the
 * other nodes find them at their next poll).
 */
@Injectable()
export class WebhookEvents implements OnModuleInit {
  /** Transactions (their query runners) that recorded deliveries and have not committed yet. */
  private readonly waiting = new WeakSet<QueryRunner>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly transactions: Transactions,
    private readonly dispatcher: WebhookDispatcher,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const waiting = this.waiting;
    const dispatcher = this.dispatcher;
    const subscriber: EntitySubscriberInterface = {
      afterTransactionCommit(event: TransactionCommitEvent) {
        if (!waiting.has(event.queryRunner)) return;
        waiting.delete(event.queryRunner);
        dispatcher.wake();
      },
      afterTransactionRollback(event: TransactionRollbackEvent) {
        waiting.delete(event.queryRunner);
      },
    };
    this.dataSource.subscribers.push(subscriber);
  }

  /**
   * Records `type` with `data` for the customer's subscribed endpoints, in `em`'s transaction: one
   * INSERT … SELECT over the customer's active endpoints (one statement, so the change's transaction,
   * which often holds a campaign's row lock, gets only one round trip longer). Returns how many
   * deliveries were written (0 when no active endpoint subscribes to the type).
   */
  async record<T extends WebhookEventType>(customerId: number, em: EntityManager, type: T, data: WebhookEventMap[T]): Promise<number> {
    const runner = em.queryRunner;
    if (!runner?.isTransactionActive) return this.recordNow(customerId, type, data);
    if (!SAFE_TYPE.test(type)) throw new Error(`not an event type: ${type}`);
    const now = new Date();
    const eventId = newEventId();
    const body = JSON.stringify({ id: eventId, type, createdAt: now.getTime(), data });
    const [sql, parameters] = em.connection.driver.escapeQueryWithParameters(
      RECORD_SQL,
      {
        customerId,
        eventId,
        type,
        body,
        now,
        windowEnd: new Date(now.getTime() + this.config.webhooks.retryWindowMs),
        pausedPastWindow: PAUSED_PAST_WINDOW,
        only: type,
        first: `${type},%`,
        last: `%,${type}`,
        inner: `%,${type},%`,
      },
      {},
    );
    const written: QueryResult = await runner.query(sql, parameters, true);
    const count = written.affected ?? 0;
    if (!count) return 0;
    this.metrics.webhookEventsRecorded.inc({ type }, count);
    this.waiting.add(runner);
    return count;
  }

  /** Records an event in a transaction of its own (for events that follow a change already committed). */
  recordNow<T extends WebhookEventType>(customerId: number, type: T, data: WebhookEventMap[T]): Promise<number> {
    return this.transactions.run((em) => this.record(customerId, em, type, data));
  }
}
