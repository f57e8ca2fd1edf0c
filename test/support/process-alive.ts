/** Whether a process is alive: signal 0 checks that it exists (and may be signalled) without signalling it. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
