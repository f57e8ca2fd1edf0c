import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';

/**
 * One Idempotency-Key of one customer: the hold of the request that runs it (`owner`, `leaseUntil`),
 * then its stored answer. The primary key is the lock: of two requests with the same key, on any node,
 * exactly one inserts the row and runs. Times are epoch milliseconds.
 */
@Entity({ name: 'idempotency_keys' })
@Index('IDX_idempotency_keys_expires', ['expiresAt'])
export class IdempotencyKey {
  @Column({ type: 'bigint', primary: true, transformer: bigintTransformer })
  customerId: number;

  /** SHA-256 (hex) of the key as sent: case-sensitive and of fixed size whatever the key. */
  @Column({ type: 'varchar', length: 64, primary: true })
  keyHash: string;

  /** SHA-256 (hex) of the request: method, path and query, body, uploaded files. */
  @Column({ type: 'varchar', length: 64 })
  fingerprint: string;

  /** Random id of the request holding the key; every later write of the row names it. */
  @Column({ type: 'varchar', length: 36 })
  owner: string;

  /** The stored answer's HTTP status; null while the request runs. */
  @Column({ type: 'integer', nullable: true })
  statusCode: number | null;

  /** The stored answer's headers (JSON object). */
  @Column({ type: 'text', nullable: true })
  headers: string | null;

  /** How many parts hold the stored body; null when the body was too large to keep. */
  @Column({ type: 'integer', nullable: true })
  bodyParts: number | null;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  leaseUntil: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  expiresAt: number;

  /**
   * When the request first committed a write, in that write's transaction (null before, and for a request
   * that wrote nothing): a key whose lease lapsed after this, with no answer stored, is not run again.
   */
  @Column({ type: 'bigint', nullable: true, transformer: bigintTransformer })
  appliedAt: number | null;
}

/** The stored body of an answer (deflated), in parts small enough for a BLOB column on every engine. */
@Entity({ name: 'idempotency_key_parts' })
export class IdempotencyKeyPart {
  @Column({ type: 'bigint', primary: true, transformer: bigintTransformer })
  customerId: number;

  @Column({ type: 'varchar', length: 64, primary: true })
  keyHash: string;

  @Column({ type: 'integer', primary: true })
  part: number;

  @ManyToOne(() => IdempotencyKey, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn([
    { name: 'customerId', referencedColumnName: 'customerId', foreignKeyConstraintName: 'FK_idempotency_key_parts_key' },
    { name: 'keyHash', referencedColumnName: 'keyHash', foreignKeyConstraintName: 'FK_idempotency_key_parts_key' },
  ])
  key?: IdempotencyKey;

  @Column({ type: 'blob' })
  data: Buffer;
}
