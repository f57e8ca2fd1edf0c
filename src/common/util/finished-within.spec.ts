import { finishedWithin } from './finished-within';

describe('finishedWithin', () => {
  it('is true when the work finishes in time', async () => {
    await expect(finishedWithin(Promise.resolve('done'), 1000)).resolves.toBe(true);
  });

  it('is false when the time runs out first, and the work may still end later without harm', async () => {
    let finish: () => void = () => undefined;
    const work = new Promise<void>((resolve) => (finish = resolve));
    await expect(finishedWithin(work, 20)).resolves.toBe(false);
    finish();
    await work;
  });

  it('passes on a rejection that comes in time', async () => {
    await expect(finishedWithin(Promise.reject(new Error('closing failed')), 1000)).rejects.toThrow('closing failed');
  });
});
