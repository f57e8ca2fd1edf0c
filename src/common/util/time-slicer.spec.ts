import { TimeSlicer } from './time-slicer';

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // hold the loop
  }
}

describe('TimeSlicer', () => {
  it('is due once its budget has been spent, and a yield starts a new slice', async () => {
    const slicer = new TimeSlicer(20);
    expect(slicer.due()).toBe(false);
    busy(25);
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
