import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { bigintTransformer, decimalTransformer } from '../../database/column-transformers';
import { PRICE_SCALE } from '../goods.limits';

@Entity({ name: 'goods' })
@Index('UQ_goods_customer_sku', ['customerId', 'skuHash'], { unique: true })
@Index('UQ_goods_customer_url', ['customerId', 'urlHash'], { unique: true })
@Index('IDX_goods_customer_id', ['customerId', 'id'])
@Index('IDX_goods_customer_search', ['customerId', 'searchText'])
export class Goods {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'customerId', foreignKeyConstraintName: 'FK_goods_customer' })
  customer?: Customer;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  brand: string | null;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  /** sha256 of url: the unique key (a 2048-character url is longer than MySQL's index key limit). */
  @Column({ type: 'varchar', length: 64 })
  urlHash: string;

  @Column({ type: 'varchar', length: 128 })
  sku: string;

  /** sha256 of sku: the unique key, compared byte for byte on every engine (SKUs are case-sensitive). */
  @Column({ type: 'varchar', length: 64 })
  skuHash: string;

  @Column({ type: 'varchar', length: 2048, nullable: true })
  mediaUrl: string | null;

  @Column({ type: 'decimal', precision: 17, scale: PRICE_SCALE, nullable: true, transformer: decimalTransformer(PRICE_SCALE) })
  originalPrice: number | null;

  @Column({ type: 'decimal', precision: 17, scale: PRICE_SCALE, nullable: true, transformer: decimalTransformer(PRICE_SCALE) })
  discountedPrice: number | null;

  @Column({ type: 'decimal', precision: 7, scale: PRICE_SCALE, nullable: true, transformer: decimalTransformer(PRICE_SCALE) })
  discountPercentage: number | null;

  /** NFKC-normalised, lower-cased "name brand sku": what searchKeyword is matched against. */
  @Column({ type: 'varchar', length: 640 })
  searchText: string;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3 })
  updatedAt: Date;
}
