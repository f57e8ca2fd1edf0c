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
  const config = { media: { fetchConcurrency: 2 } } as unknown as AppConfig;
  return new MediaService({} as Transactions, fetcher, {} as ImageProcessor, {} as MediaStorage, config, metrics);
}

describe('MediaService logs', () => {
  it('counts failed fetches in livegoods_media_fetches_total', async () => {
    const before = (await metrics.mediaFetches.get()).values.find((v) => v.labels.outcome === 'failed')?.value ?? 0;
    await failingService(new MediaError('the image server answered HTTP 404')).tryPrepare('https://img.example/a.png');
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
    const outcome = await service.tryPrepare('https://shop:pa55word@cdn.example.com/sw7.jpg');
    expect(outcome).toEqual({ ok: false, error: expect.stringContaining('bad redirect location') });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(logged()).toContain('media https://***@cdn.example.com/sw7.jpg: bad redirect location: https://***@elsewhere.example/x');
    expect(logged()).not.toMatch(/pa55word|hop-secret|shop:/);
  });

  it('an unexpected failure is logged (with its stack) without the credentials either', async () => {
    const service = failingService(new TypeError('cannot read https://shop:pa55word@cdn.example.com/sw7.jpg'));
    const outcomes = await service.prepareAll(['http://token-abc@cdn.example.com/a.png']);
    expect(outcomes.get('http://token-abc@cdn.example.com/a.png')).toEqual({ ok: false, error: expect.stringMatching(/^unexpected error/) });
    expect(error).toHaveBeenCalledTimes(1);
    expect(logged()).toContain('media http://***@cdn.example.com/a.png: TypeError');
    expect(logged()).not.toMatch(/pa55word|token-abc/);
  });
});
