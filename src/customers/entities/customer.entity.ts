import { Column, Entity, Index } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';

@Entity({ name: 'customers' })
@Index('UQ_customers_access_key', ['accessKey'], { unique: true })
export class Customer {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'varchar', length: 32 })
  accessKey: string;

  /** base64 of 32 random bytes; the HMAC key of the customer's JWTs. */
  @Column({ type: 'varchar', length: 64 })
  secretKey: string;

  /**
   * The secret key before the last rotation (admin CLI `customer rotate-secret`): tokens signed with
   * it are still accepted until previousKeyValidUntil. Null when there is none.
   */
  @Column({ type: 'varchar', length: 64, nullable: true })
  previousSecretKey: string | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  previousKeyValidUntil: Date | null;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** ISO 4217 code echoed on every goods response. */
  @Column({ type: 'varchar', length: 3, default: 'KRW' })
  currency: string;

  /**
   * Bumped by every transaction that changes this customer's goods; list and search results
   * cached under an older version are stale (see GoodsSearchCache).
   */
  @Column({ type: 'bigint', default: 0, transformer: bigintTransformer })
  catalogVersion: number;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3 })
  updatedAt: Date;
}
