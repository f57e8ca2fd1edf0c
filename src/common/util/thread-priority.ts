import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Lowers the CPU priority of the calling thread (a worker thread doing background work) to niceness 10
 * on Linux (/proc/thread-self names its thread id): when the cores are busy, requests and live viewers on
 * the main thread come first and the worker uses what is left. Elsewhere the thread keeps the process's
 * priority.
 */
export function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, 10);
  } catch {
    // Not Linux, or not allowed: keep the process's priority.
  }
}
