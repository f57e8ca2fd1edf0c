import { ForegroundRequests } from './foreground';

/** Settles what is ready: promise callbacks and one turn of the event loop. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function tracked(promise: Promise<void>): { settled: () => boolean } {
  let settled = false;
  void promise.then(() => (settled = true));
  return { settled: () => settled };
}

describe('ForegroundRequests', () => {
  afterEach(() => jest.useRealTimers());

  it('is busy while an interactive request is in flight, and idle once it has left', () => {
    const fg = new ForegroundRequests();
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
    const fg = new ForegroundRequests();
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
    const fg = new ForegroundRequests();
    fg.enter({});
    const waiting = tracked(fg.idle(10));
    await Promise.resolve();
    expect(waiting.settled()).toBe(false);
    jest.advanceTimersByTime(10);
    await Promise.resolve();
    expect(waiting.settled()).toBe(true);
  });

  it('a write queued for the write turn ends the hold, so that the transaction holding it can finish', async () => {
    const fg = new ForegroundRequests();
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
    const now = jest.spyOn(performance, 'now');
    try {
      const fg = new ForegroundRequests();
      now.mockReturnValue(1_000);
      fg.enter({});
      now.mockReturnValue(1_099);
      expect(fg.busy).toBe(true);
      now.mockReturnValue(1_100);
      expect(fg.busy).toBe(false);
    } finally {
      now.mockRestore();
    }
  });
});
