import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import type { Transactions } from '../database/transactions';
import type { ImageFetcher } from './image-fetcher';
import type { ImageProcessor } from './image-processor';
import type { MediaStorage } from './media-storage';
import { MediaError } from './media.errors';
import { Metrics } from '../metrics/metrics.service';
import { MediaService } from './media.service';

/** A MediaService whose fetcher fails the way the real one does, to see what reaches the log. */
const metrics = new Metrics();
afterAll(() => metrics.onModuleDestroy());

function failingService(failure: Error): MediaService {
  const fetcher = { fetch: () => Promise.reject(failure) } as unknown as ImageFetcher;
  const config = { media: { fetchConcurrency: 2, nodeConcurrency: 8, fetchTimeoutMs: 15_000 } } as unknown as AppConfig;
  return new MediaService({} as Transactions, fetcher, {} as ImageProcessor, {} as MediaStorage, config, metrics);
}

describe('MediaService logs', () => {
  it('counts failed fetches in livegoods_media_fetches_total', async () => {
    const before = (await metrics.mediaFetches.get()).values.find((v) => v.labels.outcome === 'failed')?.value ?? 0;
    await failingService(new MediaError('the image server answered HTTP 404')).tryPrepare(1, 'https://img.example/a.png');
    const after = (await metrics.mediaFetches.get()).values.find((v) => v.labels.outcome === 'failed')?.value ?? 0;
    expect(after).toBe(before + 1);
  });

  let warn: jest.SpyInstance;
  let error: jest.SpyInstance;
  const logged = () => [...warn.mock.calls, ...error.mock.calls].map((c) => String(c[0])).join('\n');

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => {
    warn.mockRestore();
    error.mockRestore();
  });

  it('a failed image is logged without the user:password@ of its URL or of a redirect location', async () => {
    const service = failingService(new MediaError('bad redirect location: https://redirector:hop-secret@elsewhere.example/x'));
    const outcome = await service.tryPrepare(1, 'https://shop:pa55word@cdn.example.com/sw7.jpg');
    expect(outcome).toEqual({ ok: false, error: expect.stringContaining('bad redirect location') });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(logged()).toContain('media https://***@cdn.example.com/sw7.jpg: bad redirect location: https://***@elsewhere.example/x');
    expect(logged()).not.toMatch(/pa55word|hop-secret|shop:/);
  });

  it('an unexpected failure is logged (with its stack) without the credentials either', async () => {
    const service = failingService(new TypeError('cannot read https://shop:pa55word@cdn.example.com/sw7.jpg'));
    const outcomes = await service.prepareAll(1, ['http://token-abc@cdn.example.com/a.png']);
    expect(outcomes.get('http://token-abc@cdn.example.com/a.png')).toEqual({ ok: false, error: expect.stringMatching(/^unexpected error/) });
    expect(error).toHaveBeenCalledTimes(1);
    expect(logged()).toContain('media http://***@cdn.example.com/a.png: TypeError');
    expect(logged()).not.toMatch(/pa55word|token-abc/);
  });
});

describe('MediaService: images fetched at once by a node', () => {
  /** A service whose fetches end when the test says (each fails then, which is enough to free its turn). */
  function gatedService(nodeConcurrency: number, fetchConcurrency: number, fetchTimeoutMs = 60_000) {
    const started: string[] = [];
    const ends = new Map<string, () => void>();
    const fetcher = {
      fetch: (url: string) =>
        new Promise((_resolve, reject) => {
          started.push(url);
          ends.set(url, () => reject(new MediaError('the image server answered HTTP 404')));
        }),
    } as unknown as ImageFetcher;
    const config = { media: { fetchConcurrency, nodeConcurrency, fetchTimeoutMs } } as unknown as AppConfig;
    const service = new MediaService({} as Transactions, fetcher, {} as ImageProcessor, {} as MediaStorage, config, metrics);
    return { service, started, end: (url: string) => ends.get(url)?.() };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  let warn: jest.SpyInstance;
  beforeEach(() => (warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined)));
  afterEach(() => warn.mockRestore());

  it('fetches at most MEDIA_NODE_CONCURRENCY images at once, one customer at most MEDIA_FETCH_CONCURRENCY, another taking a free turn first', async () => {
    const { service, started, end } = gatedService(3, 2);
    const a = service.prepareAll(1, ['a1', 'a2']);
    const a2 = service.prepareAll(1, ['a3', 'a4']);
    await turn();
    expect(started).toEqual(['a1', 'a2']);
    const b = service.prepareAll(2, ['b1', 'b2']);
    await turn();
    // One turn left on the node: customer 2's first image takes it, before customer 1's waiting ones.
    expect(started).toEqual(['a1', 'a2', 'b1']);
    // Then, the two customers running as many, the first waiting in order of arrival.
    end('a1');
    await turn();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    end('a2');
    await turn();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
    // The node's three turns taken (two of customer 1's), customer 2's second takes the turn its first frees.
    end('b1');
    await turn();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4', 'b2']);
    for (const url of ['a3', 'a4', 'b2']) end(url);
    await Promise.all([a, a2, b]);
  });

  it('an image that gets no turn within MEDIA_FETCH_TIMEOUT_MS is not fetched: the item is saved without it, saying why', async () => {
    const { service, started, end } = gatedService(1, 1, 50);
    const first = service.tryPrepare(1, 'slow');
    const second = await service.tryPrepare(2, 'waiting');
    expect(second).toEqual({ ok: false, error: 'no turn to fetch the image within 50 ms (the server is busy); try again later' });
    expect(started).toEqual(['slow']);
    end('slow');
    expect(await first).toEqual({ ok: false, error: 'the image server answered HTTP 404' });
  });
});
