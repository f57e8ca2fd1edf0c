import { Injectable, Logger } from '@nestjs/common';
import type { ImportJobState } from './entities/import-job.entity';

/** A finished import job, as announced once its final state has committed. */
export interface ImportJobCompleted {
  jobId: number;
  customerId: number;
  state: Extract<ImportJobState, 'succeeded' | 'failed'>;
  fileName: string;
  rowsTotal: number | null;
  rowsDone: number;
  createCount: number;
  updateCount: number;
  failCount: number;
  /** Why a failed job failed; null when it succeeded. */
  error: string | null;
  finishedAt: Date;
}

export type ImportJobListener = (event: ImportJobCompleted) => void | Promise<void>;

/**
 * The one place where the end of an import job is announced: `completed()` is called once per job,
 * after the commit that recorded its final state (on the node that ran it). Other modules (webhooks)
 * subscribe with `onCompleted()`; a listener's failure is logged and never affects the job.
 */
@Injectable()
export class ImportJobEvents {
  private readonly logger = new Logger(ImportJobEvents.name);
  private readonly listeners: ImportJobListener[] = [];

  onCompleted(listener: ImportJobListener): void {
    this.listeners.push(listener);
  }

  async completed(event: ImportJobCompleted): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(event);
      } catch (err) {
        this.logger.warn(`an import.completed listener failed for job ${event.jobId}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}
