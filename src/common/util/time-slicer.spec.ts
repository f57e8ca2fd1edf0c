import { foreground } from './foreground';
import { TimeSlicer } from './time-slicer';

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // hold the loop
  }
}

describe('TimeSlicer', () => {
  it('is due once its budget has been spent, and a yield starts a new slice', async () => {
    // A budget well over what a busy machine may take between two statements (a process preempted).
    const slicer = new TimeSlicer(250);
    expect(slicer.due()).toBe(false);
    busy(260);
    expect(slicer.due()).toBe(true);
    await slicer.yield();
    expect(slicer.due()).toBe(false);
  });

  it('a yield lets callbacks that were waiting for the event loop run first', async () => {
    const slicer = new TimeSlicer(1);
    const order: string[] = [];
    setImmediate(() => order.push('other work'));
    busy(2);
    await slicer.pause();
    order.push('slice');
    expect(order).toEqual(['other work', 'slice']);
  });

  it('pause does not yield while the slice has time left', async () => {
    const slicer = new TimeSlicer(10_000);
    const order: string[] = [];
    setImmediate(() => order.push('other work'));
    await slicer.pause();
    order.push('slice');
    expect(order).toEqual(['slice']);
  });
});

describe('TimeSlicer across bulk tasks', () => {
  it('lets one slice of the process run per turn of the event loop, taking turns first come first served', async () => {
    // A turn counter: one immediate per turn of the event loop.
    let turn = 0;
    let ticking = true;
    const tick = () => {
      turn += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const slices: Array<{ task: string; turn: number }> = [];
    const task = async (name: string) => {
      const slicer = new TimeSlicer(1);
      for (let i = 0; i < 5; i++) {
        slices.push({ task: name, turn });
        busy(2);
        await slicer.pause();
      }
    };
    await Promise.all([task('a'), task('b'), task('c')]);
    ticking = false;
    // (The first slice of each runs when the task starts; every later one waits for a turn of its own.)
    const turns = slices.slice(3).map((s) => s.turn);
    expect(new Set(turns).size).toBe(turns.length);
    // Each task got its slices in rotation, none starved.
    expect(slices.slice(3, 12).map((s) => s.task)).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
  });
});

describe('TimeSlicer with interactive requests in flight', () => {
  afterEach(() => jest.useRealTimers());

  it('holds its next slice until the interactive request has been answered', async () => {
    const request = {};
    foreground.enter(request);
    try {
      const slicer = new TimeSlicer(1, 60_000);
      let resumed = false;
      const paused = slicer.yield().then(() => (resumed = true));
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(resumed).toBe(false);
      foreground.leave(request);
      await paused;
      expect(resumed).toBe(true);
    } finally {
      foreground.leave(request);
    }
  });

  it('holds it for at most its bound', async () => {
    const request = {};
    foreground.enter(request);
    try {
      const slicer = new TimeSlicer(1, 20);
      // Resolves although the request is still in flight.
      await slicer.yield();
      expect(foreground.busy).toBe(true);
    } finally {
      foreground.leave(request);
    }
  });

  it('forRequest (a request’s own large answer) takes its turn but holds for no request, itself included', async () => {
    const request = {};
    foreground.enter(request);
    try {
      const slicer = TimeSlicer.forRequest();
      let resumed = false;
      const paused = slicer.yield().then(() => (resumed = true));
      for (let i = 0; i < 3 && !resumed; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(resumed).toBe(true);
      expect(foreground.busy).toBe(true);
      await paused;
    } finally {
      foreground.leave(request);
    }
  });
});
