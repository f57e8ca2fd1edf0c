import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { ImportJob } from './import-job.entity';

/** One row result of an import job, written in the transaction that applied the row. */
@Entity({ name: 'import_job_rows' })
export class ImportJobRow {
  @Column({ type: 'bigint', primary: true, transformer: bigintTransformer })
  jobId: number;

  @ManyToOne(() => ImportJob, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'jobId', foreignKeyConstraintName: 'FK_import_job_rows_job' })
  job?: ImportJob;

  /** 0-based position among the job's results (the paging key). */
  @Column({ type: 'integer', primary: true })
  seq: number;

  /** Sheet row number. */
  @Column({ type: 'integer' })
  row: number;

  /** CREATE, UPDATE or FAIL. */
  @Column({ type: 'varchar', length: 8 })
  status: string;

  /** The row's result as the synchronous import answers it (JSON). */
  @Column({ type: 'text' })
  result: string;
}
