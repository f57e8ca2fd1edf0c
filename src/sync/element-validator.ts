import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { groupsByCloneSize } from '../common/util/clone-size';
import { TimeSlicer } from '../common/util/time-slicer';
import { BatchElement, parseElement, ParsedElement } from './element-parser';

/** Batches this small are validated on the main thread (the round trip to the worker costs more). */
const WORKER_MIN = 500;
/** How long a batch may wait for the worker before it is validated here instead. */
const WORKER_TIMEOUT_MS = 30_000;
/** The worker's heap: young and old generation limits, in MB. */
const WORKER_YOUNG_MB = 4;
const WORKER_OLD_MB = 256;
/** After this many worker failures in a row, validation stays on the main thread. */
const MAX_FAILURES = 3;
/**
 * Most element data (cloneSize) per message to the worker, and so about per answer: a batch is sent as
 * several messages, the event loop free between them (cloning 500 spreadsheet rows of two 32,000-character
 * cells, 32 MB, held it 0.7 s, and reading the answer as long again).
 */
const MESSAGE_BYTES = 256 * 1024;

interface Waiting {
  resolve(parsed: ParsedElement[]): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * Validates sync and spreadsheet elements (parseElement). Large batches go to one worker thread, so
 * that class-validator's cost (about a third of a bulk write's CPU) runs on another core while the main
 * thread plans and writes, and never holds the event loop. Small batches, and every batch after the
 * worker failed repeatedly, are validated here in time slices. The worker is started on first use; a
 * worker that errs, exits or does not answer in time is replaced, and its batches are validated here.
 */
@Injectable()
export class ElementValidator implements OnApplicationShutdown {
  private readonly logger = new Logger(ElementValidator.name);
  private worker?: Worker;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private failures = 0;
  private closed = false;

  async parse(elements: BatchElement[], slicer: TimeSlicer): Promise<ParsedElement[]> {
    if (elements.length >= WORKER_MIN && this.failures < MAX_FAILURES && !this.closed) {
      try {
        const parsed = await this.inWorker(elements);
        this.failures = 0;
        return parsed;
      } catch (err) {
        this.logger.warn(`validation worker failed (${err instanceof Error ? err.message : String(err)}); validating on the main thread`);
      }
    }
    return this.parseHere(elements, slicer);
  }

  /**
   * Validates on the main thread, in time slices, whatever the batch's size: for elements the caller
   * needs at once (the first segment of a bulk write, which would otherwise wait for the worker's round
   * trip with nothing else to do), while later segments go to the worker.
   */
  async parseHere(elements: BatchElement[], slicer: TimeSlicer): Promise<ParsedElement[]> {
    const parsed: ParsedElement[] = [];
    for (const element of elements) {
      if (slicer.due()) await slicer.yield();
      parsed.push(parseElement(element));
    }
    return parsed;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('the service is shutting down'));
    await worker?.terminate();
  }

  /** The batch validated by the worker, sent as messages of at most about MESSAGE_BYTES, a turn of the event loop apart. */
  private async inWorker(elements: BatchElement[]): Promise<ParsedElement[]> {
    const answers: Array<Promise<ParsedElement[]>> = [];
    for (const group of groupsByCloneSize(elements, MESSAGE_BYTES)) {
      if (answers.length) await new Promise((resolve) => setImmediate(resolve));
      const answer = this.post(group);
      answer.catch(() => undefined); // handled by Promise.all below, even if it fails before that is reached
      answers.push(answer);
    }
    return (await Promise.all(answers)).flat();
  }

  private post(elements: BatchElement[]): Promise<ParsedElement[]> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<ParsedElement[]>((resolve, reject) => {
      const timer = setTimeout(() => this.replace(worker, new Error(`no answer within ${WORKER_TIMEOUT_MS} ms`)), WORKER_TIMEOUT_MS);
      this.waiting.set(id, { resolve, reject, timer });
      worker.postMessage({ id, elements });
    });
  }

  private start(): Worker {
    // Built code runs element-worker.js; the tests (TypeScript through ts-jest) run element-worker.ts
    // through ts-node.
    const ext = extname(__filename);
    const worker = new Worker(join(__dirname, `element-worker${ext}`), {
      execArgv: ext === '.ts' ? ['--require', 'ts-node/register/transpile-only'] : [],
      // A small young generation keeps the worker's memory small (it holds a few segments at a time);
      // the old generation's ceiling bounds it (past it the worker ends and is replaced).
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB, maxOldGenerationSizeMb: WORKER_OLD_MB },
    });
    worker.unref();
    worker.on('message', (message: { id: number; parsed: ParsedElement[] }) => {
      const waiting = this.waiting.get(message.id);
      if (!waiting) return;
      this.waiting.delete(message.id);
      clearTimeout(waiting.timer);
      waiting.resolve(message.parsed);
    });
    worker.on('error', (err) => this.replace(worker, err));
    worker.on('exit', (code) => this.replace(worker, new Error(`the worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  /** Drops a worker that failed; the batches it held are validated on the main thread by their callers. */
  private replace(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.failures += 1;
    this.failAll(err);
    void worker.terminate();
  }

  private failAll(err: Error): void {
    for (const [id, waiting] of this.waiting) {
      this.waiting.delete(id);
      clearTimeout(waiting.timer);
      waiting.reject(err);
    }
  }
}
