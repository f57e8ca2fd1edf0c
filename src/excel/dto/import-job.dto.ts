import { ApiExtraModels, ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { IntQuery } from '../../common/validation/decorators';
import { SyncFailedRow, SyncSavedRow } from '../../sync/dto/sync-response.dto';
import type { UploadGoodsRowResult } from '../../sync/dto/sync-response.dto';
import type { ImportJob, ImportJobState } from '../entities/import-job.entity';

const STATES: ImportJobState[] = ['queued', 'running', 'succeeded', 'failed'];
const EPOCH_MS = { type: 'integer', format: 'int64', example: 1764403200000 } as const;

/** An import job's state and progress, as the list gives each job. */
export class ImportJobSummary {
  @ApiProperty({ type: 'integer', format: 'int64', example: 42, description: 'The job id (GET .../excel/jobs/{jobId})' })
  jobId: number;

  @ApiProperty({ enum: STATES, example: 'running', description: 'queued → running → succeeded or failed' })
  state: ImportJobState;

  @ApiProperty({ example: 'goods.xlsx', description: 'The uploaded file name' })
  fileName: string;

  @ApiProperty({ type: 'integer', format: 'int64', example: 52428800, description: 'Bytes of the uploaded file' })
  fileBytes: number;

  @ApiProperty({ type: 'integer', nullable: true, example: 200000, description: 'Data rows of the file; null until the job has read it' })
  rowsTotal: number | null;

  @ApiProperty({ type: 'integer', example: 51000, description: 'Rows applied so far (committed)' })
  rowsDone: number;

  @ApiProperty({ type: 'integer', example: 51000, description: 'createCount + updateCount + failCount (= rowsDone)' })
  totalCount: number;

  @ApiProperty({ type: 'integer', example: 50000 })
  createCount: number;

  @ApiProperty({ type: 'integer', example: 990 })
  updateCount: number;

  @ApiProperty({ type: 'integer', example: 10 })
  failCount: number;

  @ApiProperty({ type: String, nullable: true, example: null, description: 'Why a failed job failed (and which rows were applied); null otherwise' })
  error: string | null;

  @ApiProperty({ ...EPOCH_MS, description: 'When the upload was accepted (epoch ms)' })
  createdAt: number;

  @ApiProperty({ ...EPOCH_MS, nullable: true, description: 'When the job last started or resumed (epoch ms); null while queued the first time' })
  startedAt: number | null;

  @ApiProperty({ ...EPOCH_MS, nullable: true, description: 'When the job succeeded or failed (epoch ms)' })
  finishedAt: number | null;
}

/** An import job's state and progress, answered alone (the 202 of an upload, and the job's own GET). */
export class ImportJobResponse extends ImportJobSummary {
  @ApiProperty({ example: 0, description: '0' })
  _s: 0;
}

/** One job with a page of its row results. */
@ApiExtraModels(SyncSavedRow, SyncFailedRow)
export class ImportJobDetailResponse extends ImportJobResponse {
  @ApiProperty({
    type: 'array',
    items: { oneOf: [{ $ref: getSchemaPath(SyncSavedRow) }, { $ref: getSchemaPath(SyncFailedRow) }] },
    description:
      'Row results committed so far, in sheet order, as the synchronous import answers them (page `page` of `count`; ' +
      'totalCount rows in all). The goods fields are as the row left them when it was applied.',
  })
  results: UploadGoodsRowResult[];

  @ApiProperty({ type: 'integer', example: 1, description: 'The page of results' })
  page: number;

  @ApiProperty({ type: 'integer', example: 1000, description: 'Results per page' })
  count: number;
}

export class ImportJobListResponse {
  @ApiProperty({ type: [ImportJobSummary], description: "The customer's jobs, newest first" })
  results: ImportJobSummary[];

  @ApiProperty({
    type: 'integer',
    example: 3,
    description: "The customer's jobs kept (the most recent IMPORT_JOB_KEEP finished ones and every unfinished one)",
  })
  totalCount: number;

  @ApiProperty({ example: 0, description: '0' })
  _s: 0;
}

export class ImportJobResultsQuery {
  @IntQuery('page', 1, 1_000_000, { default: 1, description: 'Page of row results, from 1' })
  page: number = 1;

  @IntQuery('count', 1, 1000, { default: 1000, description: 'Row results per page (at most 1000)' }, { clamp: true })
  count: number = 1000;
}

export class ImportJobListQuery {
  @IntQuery('page', 1, 1_000_000, { default: 1, description: 'Page number, from 1' })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 30, description: 'Jobs per page' }, { clamp: true })
  count: number = 30;
}

const epoch = (date: Date | null): number | null => (date ? date.getTime() : null);

export function toImportJobResponse(job: ImportJob): ImportJobResponse {
  return { ...toImportJobSummary(job), _s: 0 };
}

export function toImportJobSummary(job: ImportJob): ImportJobSummary {
  return {
    jobId: job.id,
    state: job.state,
    fileName: job.fileName,
    fileBytes: job.fileBytes,
    rowsTotal: job.rowsTotal,
    rowsDone: job.rowsDone,
    totalCount: job.createCount + job.updateCount + job.failCount,
    createCount: job.createCount,
    updateCount: job.updateCount,
    failCount: job.failCount,
    error: job.error,
    createdAt: job.createdAt.getTime(),
    startedAt: epoch(job.startedAt),
    finishedAt: epoch(job.finishedAt),
  };
}
