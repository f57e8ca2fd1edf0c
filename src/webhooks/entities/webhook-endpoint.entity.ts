import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { Customer } from '../../customers/entities/customer.entity';

/** A customer's webhook endpoint: where its events are POSTed, which ones, and the secret they are signed with. */
@Entity({ name: 'webhook_endpoints' })
@Index('IDX_webhook_endpoints_customer', ['customerId'])
export class WebhookEndpoint {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'customerId', foreignKeyConstraintName: 'FK_webhook_endpoints_customer' })
  customer?: Customer;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  /** The subscribed event types, comma-separated. */
  @Column({ type: 'varchar', length: 512 })
  events: string;

  @Column({ type: 'boolean', width: 1, default: true })
  active: boolean;

  @Column({ type: 'varchar', length: 255, nullable: true })
  description: string | null;

  /** The signing secret (`whsec_` + 32 random bytes, base64url); it has to be readable to sign with it. */
  @Column({ type: 'varchar', length: 64 })
  secret: string;

  /** Failed tries in a row (reset by a delivered one): the circuit breaker's count (webhook-breaker.ts). */
  @Column({ type: 'integer', default: 0 })
  failureStreak: number;

  /** While in the future, none of its deliveries is claimed (the breaker is open). */
  @Column({ type: 'datetime', precision: 3, nullable: true })
  pausedUntil: Date | null;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3 })
  updatedAt: Date;
}
