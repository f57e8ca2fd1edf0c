import { Worker } from 'node:worker_threads';
import { TimeSlicer } from '../common/util/time-slicer';
import { BatchElement, parseElement } from './element-parser';
import { ElementValidator } from './element-validator';

function elements(n: number): BatchElement[] {
  return Array.from({ length: n }, (_, i) => ({
    row: i + 1,
    // Every fifth element is invalid in a different way; the others are valid (numeric text included).
    data:
      i % 5 === 0
        ? { sku: `S-${i}`, url: 'javascript:alert(1)', name: 'x' }
        : i % 5 === 1
          ? { sku: `S-${i}`, name: { nested: true } }
          : i % 5 === 2
            ? 'not an object'
            : { sku: ` S-${i} `, url: `https://shop.example.com/${i}`, name: `Item ${i}`, originalPrice: '19.99', unknown: 1 },
  }));
}

const workerOf = (v: ElementValidator) => (v as unknown as { worker?: Worker }).worker;

describe('ElementValidator', () => {
  let validator: ElementValidator;
  beforeEach(() => (validator = new ElementValidator()));
  afterEach(() => validator.onApplicationShutdown());

  it('validates a large batch in the worker thread, with exactly what parseElement answers here', async () => {
    const batch = elements(600);
    const parsed = await validator.parse(batch, new TimeSlicer());
    expect(workerOf(validator)).toBeDefined();
    // The worker's answer is plain data: compare it with the main thread's, field by field.
    expect(JSON.parse(JSON.stringify(parsed))).toEqual(JSON.parse(JSON.stringify(batch.map(parseElement))));
    expect(parsed[3]).toMatchObject({ row: 4, write: { sku: 'S-3', originalPrice: 19.99 } });
    expect(parsed[0].error).toMatch(/url/);
  }, 30_000);

  it('sends a batch of large elements to the worker as several messages of about 256 KB, and answers them in order', async () => {
    // 600 elements of two 3,000-character fields: about 3.6 MB, in about 15 messages.
    const batch: BatchElement[] = Array.from({ length: 600 }, (_, i) => ({
      row: i + 1,
      data: { sku: `L-${i}`, url: `https://shop.example.com/l/${i}`, name: `${i} ${'n'.repeat(3000)}`, description: 'd'.repeat(3000) },
    }));
    const sizes: number[] = [];
    const spy = jest.spyOn(Worker.prototype, 'postMessage');
    const sent = () => spy.mock.calls.map(([message]) => (message as { elements: BatchElement[] }).elements.length);
    try {
      const parsed = await validator.parse(batch, new TimeSlicer());
      sizes.push(...sent());
      expect(sizes.length).toBeGreaterThanOrEqual(12);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(45);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(600);
      expect(parsed.map((p) => p.row)).toEqual(batch.map((e) => e.row));
      expect(JSON.parse(JSON.stringify(parsed))).toEqual(JSON.parse(JSON.stringify(batch.map(parseElement))));
    } finally {
      spy.mockRestore();
    }
  }, 30_000);

  it('validates a small batch on the main thread, without starting a worker', async () => {
    const parsed = await validator.parse(elements(10), new TimeSlicer());
    expect(parsed).toHaveLength(10);
    expect(workerOf(validator)).toBeUndefined();
  });

  it('parseHere validates a large batch on the main thread too, with the same answers', async () => {
    const batch = elements(600);
    const parsed = await validator.parseHere(batch, new TimeSlicer());
    expect(workerOf(validator)).toBeUndefined();
    expect(parsed).toEqual(batch.map(parseElement));
  });

  it('a worker that dies is replaced, and the batch it held is validated on the main thread', async () => {
    const batch = elements(600);
    await validator.parse(batch, new TimeSlicer());
    const first = workerOf(validator) as Worker;
    const pending = validator.parse(batch, new TimeSlicer());
    await first.terminate();
    const parsed = await pending;
    expect(JSON.parse(JSON.stringify(parsed))).toEqual(JSON.parse(JSON.stringify(batch.map(parseElement))));
    // The next large batch starts a new worker.
    await validator.parse(batch, new TimeSlicer());
    expect(workerOf(validator)).toBeDefined();
    expect(workerOf(validator)).not.toBe(first);
  }, 30_000);
});
