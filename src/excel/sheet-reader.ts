import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ParsedElement } from '../sync/element-parser';
import type { SheetFile, SheetLimits } from './goods-sheet.parser';
import { SheetError, SheetRefusal } from './sheet-error';
import type { XlsxRowCount } from './xlsx-row-count';

/** Rows per message from the worker. */
const BATCH_ROWS = 500;
/** Batches the worker may read ahead of the job (bounds the rows held in memory). */
const READ_AHEAD_BATCHES = 4;
/** The worker's heap: young and old generation limits, in MB (see docs/decisions/0013). */
const WORKER_YOUNG_MB = 16;
const WORKER_OLD_MB = 256;

export interface SheetWorkerInput {
  /** `job`: survey then rows; `count`: the quick row count of an .xlsx only. */
  mode: 'job' | 'count';
  file: SheetFile;
  limits: SheetLimits;
  /** Rows up to this sheet row were applied before (a resumed job): not sent. */
  after: number;
  batchRows: number;
  /** `job`: the file's quick count taken before (at upload), used instead of counting it again. */
  counted?: XlsxRowCount;
}

export type SheetWorkerMessage =
  | { kind: 'survey'; dataRows: number; exact: boolean }
  | { kind: 'rows'; rows: ParsedElement[] }
  | { kind: 'end'; dataRows: number }
  | { kind: 'count'; count: XlsxRowCount | null }
  | { kind: 'refused'; refusal: SheetRefusal; message: string; tooManyRows: boolean }
  | { kind: 'failed'; message: string };

/** What the first pass over a job's file tells, before any row is handed out. */
export interface JobSheet {
  /**
   * Data rows of the whole file (the header, blank rows and repeated headers not counted); when not
   * `exact`, the rows holding values below the header, which the data rows can only be fewer than.
   */
  dataRows: number;
  exact: boolean;
  /** The data rows after `after`, in sheet order, each validated as a sync element (parseElement). */
  rows: AsyncGenerator<ParsedElement>;
  /** The exact count of data rows once `rows` has ended. */
  readonly finalDataRows?: number;
  /** Stops the worker (whether the rows were all taken or not). */
  close(): Promise<void>;
}

/**
 * Reads an import job's stored upload on a worker thread (sheet-worker.ts): first the whole file is
 * surveyed (type, header, limits, row count; a refusal is a SheetError here, before any row is handed
 * out, so a refused file writes nothing), then the rows stream over in batches, validated as sync
 * elements, a few batches ahead of the job. Reading and validating the file thus run on another core
 * while the main thread writes the previous rows, only what the rows become crosses to the main thread,
 * and the worker's memory is bounded by its heap limits.
 */
export async function readJobSheet(file: SheetFile, limits: SheetLimits, after: number, counted?: XlsxRowCount): Promise<JobSheet> {
  const { worker, next, stop } = startWorker({ mode: 'job', file, limits, after, batchRows: BATCH_ROWS, counted });
  let first: SheetWorkerMessage;
  try {
    first = await next();
  } catch (err) {
    await stop();
    throw err;
  }
  if (first.kind !== 'survey') {
    await stop();
    throw new Error(`The sheet reader answered ${first.kind} before its survey`);
  }
  for (let i = 0; i < READ_AHEAD_BATCHES; i++) worker.postMessage('more');

  const sheet: { -readonly [K in keyof JobSheet]: JobSheet[K] } = {
    dataRows: first.dataRows,
    exact: first.exact,
    rows: rows(),
    close: stop,
  };
  async function* rows(): AsyncGenerator<ParsedElement> {
    try {
      for (;;) {
        const message = await next();
        if (message.kind === 'end') {
          sheet.finalDataRows = message.dataRows;
          return;
        }
        if (message.kind !== 'rows') throw new Error(`The sheet reader answered ${message.kind} in the middle of the rows`);
        worker.postMessage('more');
        yield* message.rows;
      }
    } finally {
      await stop();
    }
  }
  return sheet;
}

/**
 * The quick count of a stored .xlsx's rows (see countXlsxRows), taken on a worker thread; null for a
 * CSV. A file that cannot be read is a SheetError.
 */
export async function countSheetRows(file: SheetFile, limits: SheetLimits): Promise<XlsxRowCount | null> {
  const { next, stop } = startWorker({ mode: 'count', file, limits, after: 0, batchRows: BATCH_ROWS });
  try {
    const message = await next();
    if (message.kind !== 'count') throw new Error(`The sheet reader answered ${message.kind} to a count`);
    return message.count;
  } finally {
    await stop();
  }
}

function startWorker(input: SheetWorkerInput): { worker: Worker; next: () => Promise<SheetWorkerMessage>; stop: () => Promise<void> } {
  const ext = extname(__filename);
  // Built code runs sheet-worker.js; the tests (TypeScript through ts-jest) run sheet-worker.ts through ts-node.
  const worker = new Worker(join(__dirname, `sheet-worker${ext}`), {
    workerData: input,
    execArgv: ext === '.ts' ? ['--require', 'ts-node/register/transpile-only'] : [],
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB, maxOldGenerationSizeMb: WORKER_OLD_MB },
  });
  const queue: SheetWorkerMessage[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const push = (message: SheetWorkerMessage) => {
    queue.push(message);
    wake?.();
  };
  worker.on('message', (message: SheetWorkerMessage) => push(message));
  worker.on('error', (err: Error & { code?: string }) => {
    push(
      err.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? {
            kind: 'refused',
            refusal: SheetRefusal.TooLarge,
            message: `Reading the workbook needs more than the ${WORKER_OLD_MB} MB an import job may use; split it into several files`,
            tooManyRows: false,
          }
        : { kind: 'failed', message: err.message },
    );
  });
  worker.on('exit', (code) => {
    if (!ended) push({ kind: 'failed', message: `the sheet reader stopped (exit code ${code})` });
  });

  async function next(): Promise<SheetWorkerMessage> {
    while (!queue.length) {
      if (ended) throw new Error('The sheet reader was stopped');
      await new Promise<void>((resolve) => (wake = resolve));
    }
    wake = undefined;
    const message = queue.shift() as SheetWorkerMessage;
    if (message.kind === 'refused') throw new SheetError(message.refusal, message.message, message.tooManyRows);
    if (message.kind === 'failed') throw new Error(`The sheet could not be read (${message.message})`);
    return message;
  }

  async function stop(): Promise<void> {
    ended = true;
    wake?.();
    await worker.terminate();
  }

  return { worker, next, stop };
}
