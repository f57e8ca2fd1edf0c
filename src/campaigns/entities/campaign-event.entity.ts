import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { Campaign } from './campaign.entity';

/**
 * The per-campaign event log behind the viewer channel: every pushed event with its `seq`, so that a
 * viewer that missed some can ask for them again (`resync`). Only the most recent events are kept.
 */
@Entity({ name: 'campaign_events' })
@Index('UQ_campaign_events_seq', ['campaignId', 'seq'], { unique: true })
export class CampaignEvent {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  campaignId: number;

  @ManyToOne(() => Campaign, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'campaignId', foreignKeyConstraintName: 'FK_campaign_events_campaign' })
  campaign?: Campaign;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  seq: number;

  @Column({ type: 'varchar', length: 32 })
  type: string;

  /**
   * The size of `payload` in bytes (UTF-8; 0 when it is empty): what resync and trimming read to weigh
   * events without loading their payloads (1765100000000-AddCampaignEventPayloadBytes).
   */
  @Column({ type: 'integer' })
  payloadBytes: number;

  /**
   * The event's payload as sent to viewers (JSON); empty when it was over MAX_LOGGED_PAYLOAD_BYTES (a
   * resync past it gets a snapshot). MEDIUMTEXT on MySQL/MariaDB (MYSQL_COLUMN_TYPES).
   */
  @Column({ type: 'text' })
  payload: string;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;
}
