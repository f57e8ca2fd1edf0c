import { Worker } from 'node:worker_threads';
import type { LogFormat } from '../config/log-format';

/**
 * The watchdog's thread: its own event loop's timer (the main thread's may never run again), then one line
 * on stdout and SIGKILL, the one way a thread can end a process whose main thread never yields
 * (process.exit in a worker thread ends only that thread).
 */
const WATCHDOG = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
setTimeout(() => {
const msg = 'the shutdown did not end within ' + workerData.afterMs + ' ms (the event loop is held): killing the process';
const line = workerData.json
  ? JSON.stringify({ level: 'fatal', time: new Date().toISOString(), pid: process.pid, context: 'Shutdown', msg })
  : '[' + new Date().toISOString() + '] FATAL (Shutdown): ' + msg;
try { writeSync(1, line + '\\n'); } catch {}
process.kill(process.pid, 'SIGKILL');
}, workerData.afterMs);
`;

/**
 * Kills the process `afterMs` from now unless it has exited, or the watchdog was terminated, by then. The shutdown's own deadlines are
 * timers of the main thread: code that holds the event loop without end (a client library looping on a
 * connection left in a bad state, say) keeps them from firing, and the node would neither serve nor
 * exit. The watchdog runs on a thread of its own and does not keep the process alive.
 */
export function startExitWatchdog(afterMs: number, format: LogFormat): Worker {
  const worker = new Worker(WATCHDOG, { eval: true, workerData: { afterMs, json: format === 'json' } });
  worker.unref();
  return worker;
}
