import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ReadGuard } from './read-guard';
import { SheetError, SheetRefusal } from './sheet-error';

/** A promise that never settles: a reader stuck on a source that will not deliver. */
const never = <T>() => new Promise<T>(() => undefined);

/** V8's collector, reachable without starting node with --expose-gc. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('ReadGuard', () => {
  let guard: ReadGuard;

  afterEach(() => guard.dispose());

  it('passes a step through: its value, or its own error', async () => {
    guard = new ReadGuard(60_000);
    await expect(guard.race(Promise.resolve(42))).resolves.toBe(42);
    await expect(guard.race(Promise.reject(new Error('source broke')))).rejects.toThrow('source broke');
    await expect(guard.race(Promise.resolve('still usable'))).resolves.toBe('still usable');
  });

  it('abort rejects the step in flight, after thousands of steps, and every later one at once', async () => {
    guard = new ReadGuard(60_000);
    let sum = 0;
    for (let i = 0; i < 10_000; i++) sum += await guard.race(Promise.resolve(i));
    expect(sum).toBe((10_000 * 9_999) / 2);
    const waiting = guard.race(never<number>());
    const failure = new Error('the zip source failed');
    guard.abort(failure);
    await expect(waiting).rejects.toBe(failure);
    await expect(guard.race(Promise.resolve(1))).rejects.toBe(failure);
    // The first failure is the one reported.
    guard.abort(new Error('later'));
    await expect(guard.race(never<number>())).rejects.toBe(failure);
  });

  it('breathe gives the event loop a turn after 5 ms of continuous work (a stream step between two looks must stay short)', async () => {
    guard = new ReadGuard(60_000);
    const started = performance.now();
    while (performance.now() - started < 6) {
      /* continuous work */
    }
    let turned = false;
    setImmediate(() => (turned = true));
    await guard.breathe();
    expect(turned).toBe(true);
  });

  it('the deadline rejects a step that never settles', async () => {
    guard = new ReadGuard(200);
    const err = await guard.race(never<number>()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SheetError);
    expect((err as SheetError).refusal).toBe(SheetRefusal.Unsupported);
    expect((err as SheetError).message).toMatch(/could not be read within 0\.2 s/);
  });

  it('keeps nothing of a settled step: its value can be collected while the read goes on', async () => {
    const gc = collector();
    guard = new ReadGuard(60_000);
    const values: Array<WeakRef<object>> = [];
    for (let i = 0; i < 1000; i++) {
      const row = { row: i, cells: new Array(10).fill(i) };
      values.push(new WeakRef(row));
      await guard.race(Promise.resolve(row));
    }
    // WeakRef targets stay alive until the current job ends.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    const alive = values.filter((ref) => ref.deref() !== undefined).length;
    expect(alive).toBeLessThan(10);
    // The guard still works after all that.
    const waiting = guard.race(never<number>());
    guard.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});
