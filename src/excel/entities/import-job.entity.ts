import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { bigintTransformer } from '../../database/column-transformers';

/** queued → running → succeeded | failed (a running job whose node died is queued again, see ImportJobsService). */
export type ImportJobState = 'queued' | 'running' | 'succeeded' | 'failed';

/**
 * A spreadsheet import applied in the background. Each chunk of rows commits together with the job's
 * progress (`lastRow`, the counts), so a job resumed on another node or after a restart goes on after
 * the last committed chunk and applies every row exactly once.
 */
@Entity({ name: 'import_jobs' })
@Index('IDX_import_jobs_customer', ['customerId', 'id'])
@Index('IDX_import_jobs_state', ['state', 'id'])
export class ImportJob {
  @Column({ type: 'bigint', primary: true, generated: 'increment', transformer: bigintTransformer })
  id: number;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'customerId', foreignKeyConstraintName: 'FK_import_jobs_customer' })
  customer?: Customer;

  @Column({ type: 'varchar', length: 16 })
  state: ImportJobState;

  /** The client's file name (shown in lists). */
  @Column({ type: 'varchar', length: 255 })
  fileName: string;

  /** The stored upload, relative to DATA_DIR/imports. */
  @Column({ type: 'varchar', length: 255 })
  filePath: string;

  @Column({ type: 'bigint', transformer: bigintTransformer })
  fileBytes: number;

  @Column({ type: 'varchar', length: 64, nullable: true })
  mimeType: string | null;

  /** The absolute base of links in the row results (media files), as the upload's request had it. */
  @Column({ type: 'varchar', length: 2048 })
  baseUrl: string;

  @Column({ type: 'boolean', width: 1, default: false })
  refreshMedia: boolean;

  /** Data rows of the file, known once its first pass has read it. */
  @Column({ type: 'integer', nullable: true })
  rowsTotal: number | null;

  /**
   * The quick count of the .xlsx taken at upload (JSON of an XlsxRowCount), which the job uses instead of
   * counting the file again; null for a CSV or when the upload could not count it.
   */
  @Column({ type: 'varchar', length: 100, nullable: true })
  sheetCount: string | null;

  @Column({ type: 'integer', default: 0 })
  rowsDone: number;

  /** Sheet row number of the last row applied (0 before the first chunk). */
  @Column({ type: 'integer', default: 0 })
  lastRow: number;

  @Column({ type: 'integer', default: 0 })
  createCount: number;

  @Column({ type: 'integer', default: 0 })
  updateCount: number;

  @Column({ type: 'integer', default: 0 })
  failCount: number;

  /** Why a failed job failed. */
  @Column({ type: 'text', nullable: true })
  error: string | null;

  /** The node running it (a random id per process), while running. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  owner: string | null;

  /** Epoch ms until which the owner's claim holds; renewed with every chunk. */
  @Column({ type: 'bigint', nullable: true, transformer: bigintTransformer })
  leaseUntil: number | null;

  /** Times the job was claimed (1 on its first run; more after restarts). */
  @Column({ type: 'integer', default: 0 })
  attempts: number;

  /**
   * Claims since the job's last committed chunk that were not handed back (a shutdown hands its claim
   * back): each is a run whose node died or lost the database. Past IMPORT_JOB_MAX_ATTEMPTS the job fails.
   */
  @Column({ type: 'integer', default: 0 })
  stalledClaims: number;

  @Column({ type: 'datetime', precision: 3 })
  createdAt: Date;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  startedAt: Date | null;

  @Column({ type: 'datetime', precision: 3, nullable: true })
  finishedAt: Date | null;
}
