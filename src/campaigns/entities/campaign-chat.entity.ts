import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { Campaign } from './campaign.entity';

/** An operator chat line of a campaign. */
@Entity({ name: 'campaign_chat' })
@Index('IDX_campaign_chat_campaign', ['campaignId', 'id'])
export class CampaignChat {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  campaignId: number;

  @ManyToOne(() => Campaign, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'campaignId', foreignKeyConstraintName: 'FK_campaign_chat_campaign' })
  campaign?: Campaign;

  @Column({ type: 'text' })
  message: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  adminName: string | null;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;
}
