/** Polls `probe` until `accept` holds (or the time is up); returns the last value. */
export async function eventually<T>(probe: () => Promise<T>, accept: (v: T) => boolean, timeoutMs = 3000, stepMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, stepMs));
    value = await probe();
  }
  return value;
}
