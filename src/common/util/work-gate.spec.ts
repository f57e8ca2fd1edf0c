import { WorkGate, WorkGateError } from './work-gate';

/** A task the test ends when it wants. */
function deferred<T = string>() {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const FAR = () => Date.now() + 60_000;
const tick = () => new Promise((resolve) => setImmediate(resolve));

async function refusal(work: Promise<unknown>): Promise<WorkGateError> {
  try {
    await work;
  } catch (err) {
    expect(err).toBeInstanceOf(WorkGateError);
    return err as WorkGateError;
  }
  throw new Error('expected a WorkGateError');
}

/** Tasks of named owners in a gate, each ended by the test (`tasks.get(name).resolve`), and the order they started in. */
function ownedTasks(gate: WorkGate) {
  const started: string[] = [];
  const tasks = new Map<string, { resolve: (value: string) => void }>();
  const run = (owner: string, name: string) => {
    const task = deferred();
    tasks.set(name, task);
    return gate.run(
      FAR(),
      () => {
        started.push(name);
        return task.promise;
      },
      owner,
    );
  };
  return { started, tasks, run };
}

describe('WorkGate', () => {
  it('runs at most `limit` tasks at once, the others in the order they came', async () => {
    const gate = new WorkGate(2, 10);
    const tasks = Array.from({ length: 5 }, () => deferred());
    const started: number[] = [];
    const answers = tasks.map((t, i) =>
      gate.run(FAR(), () => {
        started.push(i);
        return t.promise;
      }),
    );
    const settledAll = Promise.allSettled(answers);
    await tick();
    expect([started, gate.active, gate.queued]).toEqual([[0, 1], 2, 3]);
    tasks[1].resolve('one');
    await tick();
    expect([started, gate.active, gate.queued]).toEqual([[0, 1, 2], 2, 2]);
    tasks[0].reject(new Error('zero failed'));
    await tick();
    expect(started).toEqual([0, 1, 2, 3]);
    tasks[2].resolve('two');
    tasks[3].resolve('three');
    await tick();
    tasks[4].resolve('four');
    const settled = await settledAll;
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual(['zero failed', 'one', 'two', 'three', 'four']);
    expect([gate.active, gate.queued]).toEqual([0, 0]);
  });

  it('refuses at once when `maxWaiting` tasks already wait', async () => {
    const gate = new WorkGate(1, 2);
    const held = deferred();
    const first = gate.run(FAR(), () => held.promise);
    const queued = [gate.run(FAR(), () => Promise.resolve('a')), gate.run(FAR(), () => Promise.resolve('b'))];
    let ran = false;
    const err = await refusal(
      gate.run(FAR(), () => {
        ran = true;
        return Promise.resolve('c');
      }),
    );
    expect([err.reason, ran, gate.queued]).toEqual(['full', false, 2]);
    held.resolve('held');
    expect(await Promise.all([first, ...queued])).toEqual(['held', 'a', 'b']);
    expect(ran).toBe(false);
  });

  it('a task still waiting at its deadline is dropped and never runs', async () => {
    const gate = new WorkGate(1, 5);
    const held = deferred();
    const first = gate.run(FAR(), () => held.promise);
    let ran = false;
    const err = await refusal(
      gate.run(Date.now() + 30, () => {
        ran = true;
        return Promise.resolve('late');
      }),
    );
    expect([err.reason, gate.queued]).toEqual(['waited', 0]);
    held.resolve('done');
    await first;
    await tick();
    expect([ran, gate.active]).toEqual([false, 0]);
  });

  it('a task running at its deadline is answered then, but keeps its turn until its work ends', async () => {
    const gate = new WorkGate(1, 5);
    const slow = deferred();
    const err = await refusal(gate.run(Date.now() + 30, () => slow.promise));
    expect(err.reason).toBe('ran');
    // The work goes on (a libvips thread cannot be taken back): the next task waits for it.
    let next = false;
    const after = gate.run(FAR(), () => {
      next = true;
      return Promise.resolve('next');
    });
    await tick();
    expect([gate.active, gate.queued, next]).toEqual([1, 1, false]);
    slow.resolve('too late');
    expect(await after).toBe('next');
    expect(next).toBe(true);
  });

  it('hands the work the time left, and counts a task that throws at once as finished', async () => {
    const gate = new WorkGate(1, 1);
    const left = await gate.run(Date.now() + 5000, (remaining) => Promise.resolve(remaining));
    expect(left).toBeGreaterThan(4000);
    expect(left).toBeLessThanOrEqual(5000);
    await expect(
      gate.run(FAR(), () => {
        throw new Error('sync failure');
      }),
    ).rejects.toThrow('sync failure');
    expect(gate.active).toBe(0);
    expect(await gate.run(FAR(), () => Promise.resolve('still works'))).toBe('still works');
  });

  it('gives a free turn to a waiting owner with nothing running before another task of an owner already running one', async () => {
    const gate = new WorkGate(2, 10);
    const { started, tasks, run } = ownedTasks(gate);
    const answers = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3'), run('a', 'a4'), run('b', 'b1')];
    await tick();
    expect(started).toEqual(['a1', 'a2']);
    tasks.get('a1')?.resolve('done');
    await tick();
    // b1 came after a3 and a4, but customer a already reads a2.
    expect(started).toEqual(['a1', 'a2', 'b1']);
    for (const name of ['a2', 'b1', 'a3', 'a4']) {
      tasks.get(name)?.resolve('done');
      await tick();
    }
    await Promise.all(answers);
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
  });

  it('never gives one owner more than maxPerOwner turns, even with turns free; another owner takes them', async () => {
    const gate = new WorkGate(4, 10, 2);
    const { started, tasks, run } = ownedTasks(gate);
    const answers = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3'), run('b', 'b1'), run('a', 'a4')];
    await tick();
    expect(started).toEqual(['a1', 'a2', 'b1']);
    expect(gate.active).toBe(3);
    expect(gate.queued).toBe(2);
    tasks.get('b1')?.resolve('done');
    await tick();
    expect(started).toEqual(['a1', 'a2', 'b1']);
    tasks.get('a1')?.resolve('done');
    await tick();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    for (const name of ['a2', 'a3', 'a4']) {
      tasks.get(name)?.resolve('done');
      await tick();
    }
    await Promise.all(answers);
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
  });

  it('drops a task still waiting at its waitUntil; a task that got its turn runs on until its own deadline', async () => {
    const gate = new WorkGate(1, 10);
    const first = deferred();
    const running = gate.run(Infinity, () => first.promise, undefined, Date.now() + 20);
    const waiting = gate.run(Infinity, () => Promise.resolve('never'), undefined, Date.now() + 20);
    expect((await refusal(waiting)).reason).toBe('waited');
    await new Promise((resolve) => setTimeout(resolve, 40));
    // Past its waitUntil, the running task is not answered: its deadline is Infinity.
    first.resolve('done');
    expect(await running).toBe('done');
    await tick();
    expect(gate.active).toBe(0);
    expect(gate.queued).toBe(0);
  });

  it("refuses an owner's task past maxWaitingPerOwner, and still lets another owner's wait", async () => {
    const gate = new WorkGate(1, 10, Infinity, 2);
    const first = deferred();
    const answers = [
      gate.run(FAR(), () => first.promise, 'a'),
      gate.run(FAR(), () => Promise.resolve('a2'), 'a'),
      gate.run(FAR(), () => Promise.resolve('a3'), 'a'),
    ];
    const refused = await refusal(gate.run(FAR(), () => Promise.resolve('a4'), 'a'));
    expect(refused.reason).toBe('full');
    expect(refused.message).toBe('2 tasks of the same owner are already waiting');
    const b = gate.run(FAR(), () => Promise.resolve('b1'), 'b');
    expect(gate.queued).toBe(3);
    first.resolve('a1');
    expect(await Promise.all([...answers, b])).toEqual(['a1', 'a2', 'a3', 'b1']);
  });
});
