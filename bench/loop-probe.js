/**
 * Preloaded into a benchmark's server process (node --require bench/loop-probe.js) when
 * BENCH_LOOP_PROBE_FILE is set: measures the longest event-loop stall, as the largest lateness of a 5 ms
 * timer. On SIGUSR2 it writes {"maxStallMs": ...} to that file and starts a new window. Benchmarks only:
 * the service itself reports its loop delay as livegoods_event_loop_delay_seconds.
 */
'use strict';
const { writeFileSync } = require('node:fs');
const { setInterval } = require('node:timers');
const { performance } = require('node:perf_hooks');

const file = process.env.BENCH_LOOP_PROBE_FILE;
if (file) {
  const TICK_MS = 5;
  let last = performance.now();
  let maxStall = 0;
  // BENCH_LOOP_TRACE=<ms>: also print each stall over that many ms to stderr, with its start and end on
  // the monotonic clock in µs (the clock of V8's .cpuprofile timestamps), to find it in a BENCH_CPU_PROF profile.
  const traceMs = Number(process.env.BENCH_LOOP_TRACE || 0);
  const timer = setInterval(() => {
    const now = performance.now();
    const stall = now - last - TICK_MS;
    maxStall = Math.max(maxStall, stall);
    if (traceMs && stall > traceMs) {
      const endUs = Number(process.hrtime.bigint() / 1000n);
      process.stderr.write(`loop-probe: stall ${stall.toFixed(1)} ms, monotonic µs ${Math.round(endUs - (now - last) * 1000)}..${endUs}\n`);
    }
    last = now;
  }, TICK_MS);
  timer.unref();
  process.on('SIGUSR2', () => {
    writeFileSync(file, JSON.stringify({ maxStallMs: Math.round(Math.max(maxStall, performance.now() - last - TICK_MS)) }));
    maxStall = 0;
    last = performance.now();
  });
}
