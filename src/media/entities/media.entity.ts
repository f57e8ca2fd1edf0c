import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { bigintTransformer } from '../../database/column-transformers';

/** One stored thumbnail of a media item. */
export interface StoredThumbnail {
  width: number;
  height: number;
  size: number;
  key: string;
}

/**
 * The hosted copy of a goods item's image. Files are content-addressed (by checksum), so identical
 * bytes are stored once however many items or customers use them.
 */
@Entity({ name: 'media' })
@Index('UQ_media_goods', ['goodsId'], { unique: true })
@Index('IDX_media_checksum', ['checksum'])
export class Media {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'customerId', foreignKeyConstraintName: 'FK_media_customer' })
  customer?: Customer;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  goodsId: number;

  // The goods item this media belongs to. Named, not imported: media is a service the goods domain uses,
  // so media depends on no domain above it (the foreign key is the same).
  @ManyToOne('Goods', { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'goodsId', foreignKeyConstraintName: 'FK_media_goods' })
  goods?: object;

  @Column({ type: 'varchar', length: 16, default: 'IMAGE' })
  mediaType: string;

  /** The mediaUrl it was fetched from. */
  @Column({ type: 'varchar', length: 2048 })
  originalUrl: string;

  /** sha256 of the original bytes. */
  @Column({ type: 'varchar', length: 64 })
  checksum: string;

  @Column({ type: 'varchar', length: 64 })
  contentType: string;

  /** Storage key of the original bytes. */
  @Column({ type: 'varchar', length: 160 })
  fileKey: string;

  @Column({ type: 'integer' })
  size: number;

  @Column({ type: 'integer' })
  width: number;

  @Column({ type: 'integer' })
  height: number;

  @Column({ type: 'simple-json' })
  thumbnails: StoredThumbnail[];

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3 })
  updatedAt: Date;
}
