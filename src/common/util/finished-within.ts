/**
 * Waits for `work`, for at most `ms`: true when it finished in time, false when the time ran out first
 * (`work` goes on; nothing cancels it). A rejection of `work` within the time is passed on. The timer is
 * cleared either way, and it keeps the process alive while it runs (a shutdown step waiting on it must not
 * let the process end early).
 */
export async function finishedWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
