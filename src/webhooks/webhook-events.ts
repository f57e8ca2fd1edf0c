import { randomBytes } from 'node:crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { Transactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics.service';
import { WebhookDelivery } from './entities/webhook-delivery.entity';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhookEventMap, WebhookEventType } from './webhook-event-types';

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
   * Records `type` with `data` for the customer's subscribed endpoints, in `em`'s transaction. Returns
   * how many deliveries were written (0 when no active endpoint subscribes to the type).
   */
  async record<T extends WebhookEventType>(customerId: number, em: EntityManager, type: T, data: WebhookEventMap[T]): Promise<number> {
    const endpoints = await em.find(WebhookEndpoint, { select: { id: true, events: true }, where: { customerId, active: true } });
    const targets = endpoints.filter((e) => e.events.split(',').includes(type));
    if (!targets.length) return 0;
    const now = new Date();
    const eventId = newEventId();
    const body = JSON.stringify({ id: eventId, type, createdAt: now.getTime(), data });
    await em.insert(
      WebhookDelivery,
      targets.map((e) => ({
        customerId,
        endpointId: e.id,
        eventId,
        eventType: type,
        body,
        state: 'pending' as const,
        attempts: 0,
        nextAttemptAt: now,
        claimToken: null,
        createdAt: now,
      })),
    );
    this.metrics.webhookEventsRecorded.inc({ type }, targets.length);
    if (em.queryRunner?.isTransactionActive) this.waiting.add(em.queryRunner);
    else this.dispatcher.wake();
    return targets.length;
  }

  /** Records an event in a transaction of its own (for events that follow a change already committed). */
  recordNow<T extends WebhookEventType>(customerId: number, type: T, data: WebhookEventMap[T]): Promise<number> {
    return this.transactions.run((em) => this.record(customerId, em, type, data));
  }
}
