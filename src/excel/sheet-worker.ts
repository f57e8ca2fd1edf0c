/**
 * The sheet reading worker (a worker thread started by sheet-reader.ts): reads a stored upload on another
 * core than the main thread. For an import job: a survey (see surveyJobSheet), then the rows, validated
 * here as sync elements and handed over in batches as the job asks for them. For an upload: only the row
 * count.
 */
import 'reflect-metadata';
import { parentPort, workerData } from 'node:worker_threads';
import { cloneSize } from '../common/util/clone-size';
import { lowerThreadPriority } from '../common/util/thread-priority';
import type { ParsedElement } from '../sync/element-parser';
import { detectFileFormat, SheetSurvey, streamGoodsSheet, surveyGoodsSheet } from './goods-sheet.parser';
import { ReadGuard } from './read-guard';
import { SheetError } from './sheet-error';
import type { SheetWorkerInput, SheetWorkerMessage } from './sheet-reader';
import { countXlsxRows, XlsxRowCount } from './xlsx-row-count';

// Requests and live viewers on the main thread come first when the cores are busy.
lowerThreadPriority();

/** Most element data (cloneSize) per batch, whatever its number of rows: the main thread reads each message in one go. */
const BATCH_BYTES = 256 * 1024;

const input = workerData as SheetWorkerInput;
const port = parentPort;
let credits = 0;
let wake: (() => void) | undefined;

port?.on('message', (message: unknown) => {
  if (message !== 'more') return;
  credits += 1;
  wake?.();
});

function post(message: SheetWorkerMessage): void {
  port?.postMessage(message);
}

/** Waits until the job asked for one more batch. */
async function credit(): Promise<void> {
  while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
  wake = undefined;
  credits -= 1;
}

/** The quick count of an .xlsx's rows (null for a CSV). */
async function count(): Promise<XlsxRowCount | null> {
  if ((await detectFileFormat(input.file)) !== 'xlsx') return null;
  const guard = new ReadGuard(input.limits.timeoutMs);
  try {
    return await countXlsxRows(input.file.path, input.limits, guard);
  } finally {
    guard.dispose();
  }
}

/**
 * What the job must know before it writes anything. An .xlsx whose quick count shows no more rows below
 * the header than the limit and no hyperlinks cannot be refused for its size (neither its data rows nor
 * its rows without goods values can pass the limit), and its XML is known to be whole: the rows pass
 * checks the header before the first row is handed out. Any other file (a CSV,
 * more rows with values than the limit, hyperlinks that may give URL cells their value) is surveyed in
 * full first, as it always was.
 */
async function surveyJobSheet(): Promise<{ survey: SheetSurvey; counted: boolean }> {
  // An .xlsx counted at upload is the same file: its count stands.
  const quick = input.counted ?? (await count());
  if (quick && !quick.hasLinks && quick.rows <= input.limits.maxRows) {
    return { survey: { format: 'xlsx', dataRows: quick.valueRows, ignoredColumns: [], links: [] }, counted: true };
  }
  return { survey: await surveyGoodsSheet(input.file, input.limits), counted: false };
}

async function job(): Promise<void> {
  const { survey, counted } = await surveyJobSheet();
  post({ kind: 'survey', dataRows: survey.dataRows, exact: !counted });
  // Loaded only for a job (class-validator and the DTOs take about half a second to load); a count does without.
  const { parseElement } = await import('../sync/element-parser');
  let batch: ParsedElement[] = [];
  let batchBytes = 0;
  let dataRows = 0;
  for await (const row of streamGoodsSheet(input.file, survey, input.limits)) {
    dataRows += 1;
    if (row.row <= input.after) continue; // applied before a restart
    // Validated here, so that only what a row becomes crosses to the main thread: its write, or its FAIL
    // row whose echo shows over-long texts cut (a row of two 32,000-character cells is a few hundred
    // characters then, where the cells themselves went through the main thread to the validation worker).
    const parsed = parseElement({ row: row.row, data: row.values, refusal: row.refusal });
    batch.push(parsed);
    batchBytes += cloneSize(parsed);
    // A batch is also cut at BATCH_BYTES: the main thread reads each message in one go.
    if (batch.length < input.batchRows && batchBytes < BATCH_BYTES) continue;
    await credit();
    post({ kind: 'rows', rows: batch });
    batch = [];
    batchBytes = 0;
  }
  if (batch.length) {
    await credit();
    post({ kind: 'rows', rows: batch });
  }
  post({ kind: 'end', dataRows });
}

async function main(): Promise<void> {
  if (input.mode === 'count') {
    post({ kind: 'count', count: await count() });
    return;
  }
  await job();
}

main().then(
  () => port?.close(),
  (err: unknown) => {
    post(
      err instanceof SheetError
        ? { kind: 'refused', refusal: err.refusal, message: err.message, tooManyRows: err.tooManyRows }
        : { kind: 'failed', message: err instanceof Error ? err.message : String(err) },
    );
    port?.close();
  },
);
