import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { Goods } from '../../goods/entities/goods.entity';
import { Campaign } from './campaign.entity';

export const SALES_STATUSES = ['ON_SALE', 'ALMOST_SOLD_OUT', 'SOLD_OUT'] as const;
export type SalesStatus = (typeof SALES_STATUSES)[number];

/** A goods item in a campaign, with its place, whether it is showing now, and its sales status. */
@Entity({ name: 'campaign_goods' })
@Index('IDX_campaign_goods_order', ['campaignId', 'sortOrder'])
@Index('IDX_campaign_goods_goods', ['goodsId'])
export class CampaignGoods {
  @Column({ type: 'bigint', primary: true, transformer: bigintTransformer })
  campaignId: number;

  @Column({ type: 'bigint', primary: true, transformer: bigintTransformer })
  goodsId: number;

  @ManyToOne(() => Campaign, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'campaignId', foreignKeyConstraintName: 'FK_campaign_goods_campaign' })
  campaign?: Campaign;

  @ManyToOne(() => Goods, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'goodsId', foreignKeyConstraintName: 'FK_campaign_goods_goods' })
  goods?: Goods;

  @Column({ type: 'integer' })
  sortOrder: number;

  @Column({ type: 'boolean', width: 1, default: false })
  showingNow: boolean;

  @Column({ type: 'varchar', length: 16, default: 'ON_SALE' })
  salesStatus: SalesStatus;

  /** Units left (null: stock not tracked); stock changes re-derive salesStatus (StockService). */
  @Column({ type: 'integer', nullable: true })
  stock: number | null;

  /** ALMOST_SOLD_OUT from this many units left down to 1 (null: no such stage). */
  @Column({ type: 'integer', nullable: true })
  almostSoldOutAt: number | null;

  @Column({ type: 'varchar', length: 255, nullable: true })
  adminName: string | null;

  @Column({ type: 'varchar', length: 255, default: '' })
  adminId: string;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3 })
  updatedAt: Date;
}
