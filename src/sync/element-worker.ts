/**
 * The validation worker (a worker thread started by ElementValidator): validates batches of sync and
 * spreadsheet elements on another core while the main thread plans and writes.
 */
import 'reflect-metadata';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { BatchElement, parseElement } from './element-parser';

/**
 * On Linux this thread lowers its own CPU priority (niceness 10; /proc/thread-self names its thread id):
 * when the cores are busy, requests and live viewers on the main thread come first and validation uses
 * what is left. Elsewhere it runs at the process's priority.
 */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, 10);
  } catch {
    // Not Linux, or not allowed: keep the process's priority.
  }
}

lowerPriority();

parentPort?.on('message', (message: { id: number; elements: BatchElement[] }) => {
  parentPort?.postMessage({ id: message.id, parsed: message.elements.map(parseElement) });
});
