import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { WebhookEndpoint } from './webhook-endpoint.entity';

/**
 * pending: waiting for its next try (nextAttemptAt); sending: claimed by a node until nextAttemptAt (the
 * lease; past it, any node claims it again); delivered: the receiver answered 2xx; failed: given up.
 */
export const DELIVERY_STATES = ['pending', 'sending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/**
 * One event for one endpoint (the outbox row): written in the transaction of the change that caused the
 * event, sent after commit by the dispatcher of some node, retried until delivered or given up.
 */
@Entity({ name: 'webhook_deliveries' })
@Index('IDX_webhook_deliveries_due', ['state', 'nextAttemptAt'])
@Index('IDX_webhook_deliveries_endpoint', ['endpointId', 'id'])
@Index('IDX_webhook_deliveries_endpoint_due', ['endpointId', 'state', 'nextAttemptAt'])
@Index('IDX_webhook_deliveries_finished', ['finishedAt'])
export class WebhookDelivery {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  customerId: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  endpointId: number;

  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'endpointId', foreignKeyConstraintName: 'FK_webhook_deliveries_endpoint' })
  endpoint?: WebhookEndpoint;

  /** The event's id (`evt_…`), the same in every delivery of one event (and in a replay). */
  @Column({ type: 'varchar', length: 40 })
  eventId: string;

  @Column({ type: 'varchar', length: 64 })
  eventType: string;

  /** The JSON body POSTed, byte for byte. */
  @Column({ type: 'text' })
  body: string;

  @Column({ type: 'varchar', length: 16 })
  state: DeliveryState;

  /** Tries made so far (a claim counts one). */
  @Column({ type: 'integer', default: 0 })
  attempts: number;

  /** When it is due (pending) or when the claim expires (sending). */
  @Column({ type: 'datetime', precision: 3 })
  nextAttemptAt: Date;

  /** The random token of the current claim: only its holder records the outcome. */
  @Column({ type: 'varchar', length: 40, nullable: true })
  claimToken: string | null;

  @Column({ type: 'integer', nullable: true })
  lastStatusCode: number | null;

  @Column({ type: 'integer', nullable: true })
  lastDurationMs: number | null;

  @Column({ type: 'varchar', length: 512, nullable: true })
  lastError: string | null;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  lastAttemptAt: Date | null;

  /** When it was delivered or given up (null while pending or sending): the pruning clock. */
  @Column({ type: 'datetime', precision: 3, nullable: true })
  finishedAt: Date | null;
}
