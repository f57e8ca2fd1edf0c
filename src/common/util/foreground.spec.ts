import { ForegroundRequests } from './foreground';

/** Settles what is ready: promise callbacks and one turn of the event loop. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function tracked(promise: Promise<void>): { settled: () => boolean } {
  let settled = false;
  void promise.then(() => (settled = true));
  return { settled: () => settled };
}

/**
 * A clock that stands still until moved: a request never ages by itself while a test awaits turns of the
 * event loop, however long a loaded machine takes for them (real time made these tests fail under load).
 */
function stillClock(start = 1_000): { now: () => number; set: (t: number) => void } {
  let t = start;
  return { now: () => t, set: (to: number) => (t = to) };
}

describe('ForegroundRequests', () => {
  afterEach(() => jest.useRealTimers());

  it('is busy while an interactive request is in flight, and idle once it has left', () => {
    const fg = new ForegroundRequests(stillClock().now);
    const request = {};
    expect(fg.busy).toBe(false);
    fg.enter(request);
    expect(fg.busy).toBe(true);
    fg.leave(request);
    expect(fg.busy).toBe(false);
    // Leaving twice (answered after its route said it is bulk work) changes nothing.
    fg.leave(request);
    fg.enter({});
    expect(fg.busy).toBe(true);
  });

  it('idle() resolves when the last interactive request leaves', async () => {
    const fg = new ForegroundRequests(stillClock().now);
    const a = {};
    const b = {};
    fg.enter(a);
    fg.enter(b);
    const waiting = tracked(fg.idle(60_000));
    await turn();
    fg.leave(a);
    await turn();
    expect(waiting.settled()).toBe(false);
    fg.leave(b);
    await turn();
    expect(waiting.settled()).toBe(true);
  });

  it('idle() resolves after its bound even while a request stays in flight', async () => {
    jest.useFakeTimers();
    const fg = new ForegroundRequests(stillClock().now);
    fg.enter({});
    const waiting = tracked(fg.idle(10));
    await Promise.resolve();
    expect(waiting.settled()).toBe(false);
    jest.advanceTimersByTime(10);
    await Promise.resolve();
    expect(waiting.settled()).toBe(true);
  });

  it('a write queued for the write turn ends the hold, so that the transaction holding it can finish', async () => {
    const fg = new ForegroundRequests(stillClock().now);
    fg.enter({});
    const waiting = tracked(fg.idle(60_000));
    const turnStarts = fg.writerQueued();
    expect(fg.busy).toBe(false);
    await turn();
    expect(waiting.settled()).toBe(true);
    turnStarts();
    turnStarts();
    expect(fg.busy).toBe(true);
  });

  it('a request stops counting as interactive once it is old (a slow download, an image fetch)', () => {
    const clock = stillClock(1_000);
    const fg = new ForegroundRequests(clock.now);
    fg.enter({});
    clock.set(1_099);
    expect(fg.busy).toBe(true);
    clock.set(1_100);
    expect(fg.busy).toBe(false);
  });
});
