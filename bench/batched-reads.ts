/**
 * How the fan-out benches' readers (bench:fanout's viewers, bench:socket-floor's readers) take what
 * arrives on their thousands of loopback connections.
 *
 * `wake`: the usual event loop. A reader that keeps up with the server sleeps in epoll_wait between two
 * messages, so nearly every write of the server has to wake it on the other core: the kernel does that
 * inside the server's send (sock_def_readable, a cross-CPU wake-up, which costs a VM exit on a
 * virtual machine), and counts it as the server's system time. Viewers on other hosts, as in
 * production, never cost a server that: its send stops at the network card.
 *
 * `batch` (the default): the reader never waits in epoll_wait while it measures. Each turn of its event
 * loop takes whatever has arrived on every connection (epoll_wait with a zero timeout, because a
 * setImmediate is always pending), then sleeps for `everyMs` on a futex (Atomics.wait) that nothing
 * wakes. A server's send then finds no one to wake, and the reader handles many messages per turn.
 * Each message is timed when it is read, so at most `everyMs` (plus the turn's work) after it arrived:
 * the delays these benches print can only come out longer than they are, never shorter.
 */
export type ReadMode = 'wake' | 'batch';

export function readModeFrom(argv: string[]): { mode: ReadMode; everyMs: number } {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const mode = value('read') ?? 'batch';
  if (mode !== 'wake' && mode !== 'batch') throw new Error(`--read=${mode}: give wake or batch`);
  const everyMs = Number(value('read-every') ?? 1);
  if (!(everyMs > 0 && everyMs <= 10)) throw new Error(`--read-every=${value('read-every')}: give a number of ms above 0, at most 10`);
  return { mode, everyMs };
}

/** In `batch` mode, starts taking reads in batches, one every `everyMs`; returns a function that stops it. */
export function startReading(mode: ReadMode, everyMs: number): () => void {
  if (mode === 'wake') return () => undefined;
  const cell = new Int32Array(new SharedArrayBuffer(4));
  let reading = true;
  const turn = (): void => {
    if (!reading) return;
    Atomics.wait(cell, 0, 0, everyMs);
    setImmediate(turn);
  };
  setImmediate(turn);
  return () => {
    reading = false;
  };
}

/** The line the benches print about it. */
export function readModeLine(mode: ReadMode, everyMs: number): string {
  return mode === 'batch'
    ? `readers take what has arrived every ${everyMs} ms (--read=batch; each delivery is timed when read, up to ${everyMs} ms late; --read=wake to be woken per message)`
    : 'readers are woken for each message (--read=wake; the server pays a cross-CPU wake-up per write)';
}
