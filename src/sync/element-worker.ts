/**
 * The validation worker (a worker thread started by ElementValidator): validates batches of sync and
 * spreadsheet elements on another core while the main thread plans and writes.
 */
import 'reflect-metadata';
import { parentPort } from 'node:worker_threads';
import { lowerThreadPriority } from '../common/util/thread-priority';
import { BatchElement, parseElement } from './element-parser';

// Requests and live viewers on the main thread come first when the cores are busy.
lowerThreadPriority();

parentPort?.on('message', (message: { id: number; elements: BatchElement[] }) => {
  parentPort?.postMessage({ id: message.id, parsed: message.elements.map(parseElement) });
});
