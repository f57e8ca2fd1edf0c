import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { bigintTransformer } from '../../database/column-transformers';
import { ImportJob } from './import-job.entity';

/**
 * A group of an import job's row results (the results of one chunk), written in the transaction that
 * applied the chunk: JSON lines, one result each, deflated (src/excel/job-results.ts), in pieces that a
 * MySQL BLOB holds. One row per piece; a group usually fits one.
 */
@Entity({ name: 'import_job_results' })
export class ImportJobResult {
  @Column({ type: 'bigint', primary: true, transformer: bigintTransformer })
  jobId: number;

  @ManyToOne(() => ImportJob, { onDelete: 'CASCADE', onUpdate: 'CASCADE' })
  @JoinColumn({ name: 'jobId', foreignKeyConstraintName: 'FK_import_job_results_job' })
  job?: ImportJob;

  /** 0-based position among the job's results of the group's first result (the paging key). */
  @Column({ type: 'integer', primary: true })
  seq: number;

  /** Which piece of the group's packed results this row holds, from 0. */
  @Column({ type: 'integer', primary: true })
  part: number;

  /** Results in the group. */
  @Column({ type: 'integer' })
  rowCount: number;

  /** FAIL results in the group (a group without any is skipped by the failures CSV). */
  @Column({ type: 'integer' })
  failCount: number;

  /** This piece of the group's packed results. */
  @Column({ type: 'blob' })
  data: Buffer;
}
