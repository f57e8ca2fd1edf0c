import { booleanOfText } from '../common/validation/decorators';
import type { AppConfig } from '../config/app-config';

/**
 * The two sets of limits of POST /excel. Without `async=true` the file is imported at once (200) and must be
 * within the synchronous limits (UPLOAD_MAX_BYTES, EXCEL_MAX_ROWS): a larger one is refused with 413, never
 * turned into a job, and the message says that `async=true` takes it. With `async=true` it becomes an
 * import job (202) within the job limits (IMPORT_JOB_MAX_BYTES, IMPORT_JOB_MAX_ROWS).
 */
export interface UploadLimits {
  syncMaxBytes: number;
  syncMaxRows: number;
  jobMaxBytes: number;
  jobMaxRows: number;
}

export function uploadLimitsOf(config: AppConfig): UploadLimits {
  return {
    syncMaxBytes: config.limits.uploadMaxBytes,
    syncMaxRows: config.limits.excelMaxRows,
    jobMaxBytes: config.importJobs.maxBytes,
    jobMaxRows: config.importJobs.maxRows,
  };
}

/** Whether a raw query value asks for it (`async=true`, 1, yes, on), read as the query DTO reads it. */
export function queryFlag(value: unknown): boolean {
  return booleanOfText(value) === true;
}

/** Bytes in MB (MiB) as the messages give them: 20, 1.5. */
export function megabytes(bytes: number): string {
  return String(Math.round((bytes / (1024 * 1024)) * 10) / 10);
}

function rows(n: number): string {
  return n.toLocaleString('en-US');
}

/** What an immediate import takes: "20 MB and 10,000 data rows". */
function syncLimits(l: UploadLimits): string {
  return `${megabytes(l.syncMaxBytes)} MB and ${rows(l.syncMaxRows)} data rows`;
}

/** The hint of a refusal over the synchronous limits: the same file as a job. */
function jobHint(l: UploadLimits): string {
  return (
    `the same file can be imported as a background job with async=true (up to ${megabytes(l.jobMaxBytes)} MB and ` +
    `${rows(l.jobMaxRows)} data rows; the answer is then 202 with the job)`
  );
}

/** 413 message: a file over the synchronous size limit, sent without async=true (or as a dry run). */
export function overSyncBytesMessage(l: UploadLimits, dryRun: boolean): string {
  if (dryRun) return `A dry run takes a file within the immediate import limits (${syncLimits(l)}); this one is over ${megabytes(l.syncMaxBytes)} MB`;
  return `The file is over the ${megabytes(l.syncMaxBytes)} MB limit of an immediate import; ${jobHint(l)}`;
}

/** 413 message: a sheet over the synchronous row limit, sent without async=true (or as a dry run). */
export function overSyncRowsMessage(l: UploadLimits, dryRun: boolean): string {
  if (dryRun) return `A dry run takes a file within the immediate import limits (${syncLimits(l)}); this one has more than ${rows(l.syncMaxRows)} data rows`;
  return `The sheet has more than ${rows(l.syncMaxRows)} data rows, the limit of an immediate import; ${jobHint(l)}`;
}

/** 413 message: a file over the job size limit, sent with async=true. */
export function overJobBytesMessage(l: UploadLimits): string {
  return `The file is over the ${megabytes(Math.max(l.jobMaxBytes, l.syncMaxBytes))} MB limit of an import job`;
}
