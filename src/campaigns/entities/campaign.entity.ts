import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { bigintTransformer } from '../../database/column-transformers';

export const CAMPAIGN_STATUSES = ['READY', 'ONAIR', 'CLOSED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** A live broadcast. Status moves READY → ONAIR → CLOSED, never back. */
@Entity({ name: 'campaigns' })
@Index('UQ_campaigns_key', ['campaignKey'], { unique: true })
@Index('IDX_campaigns_customer_schedule', ['customerId', 'scheduledAt'])
export class Campaign {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'customerId', foreignKeyConstraintName: 'FK_campaigns_customer' })
  customer?: Customer;

  @Column({ type: 'varchar', length: 32 })
  campaignKey: string;

  @Column({ type: 'varchar', length: 255 })
  title: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  scheduledAt: Date | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  scheduledEndAt: Date | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  startedAt: Date | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  endedAt: Date | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  posterUrl: string | null;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  liveUrl: string | null;

  @Column({ type: 'varchar', length: 16, default: 'READY' })
  campaignStatus: CampaignStatus;

  /** Detail setting: the default name on operator messages. */
  @Column({ type: 'varchar', length: 255, nullable: true })
  operatorName: string | null;

  /** Detail setting: the "collection-view visibility"; only visible campaigns are listed publicly. */
  @Column({ type: 'boolean', width: 1, default: false })
  collectionVisible: boolean;

  /** Detail setting: viewers see each item's remaining stock. */
  @Column({ type: 'boolean', width: 1, default: false })
  showStock: boolean;

  /** The pinned operator notice (null: none). */
  @Column({ type: 'text', nullable: true })
  noticeMessage: string | null;

  @Column({ type: 'varchar', length: 255, nullable: true })
  noticeAdminName: string | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  noticeAt: Date | null;

  /** The last event sequence number given out for this campaign (cluster-wide, allocated in the database). */
  @Column({ type: 'bigint', default: 0, transformer: bigintTransformer })
  lastSeq: number;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3 })
  updatedAt: Date;
}
