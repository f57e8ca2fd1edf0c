import { EventEmitter } from 'node:events';
import type { HttpAdapterHost } from '@nestjs/core';
import { Metrics } from './metrics.service';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function block(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    /* the event loop held, as a start's synchronous work holds it */
  }
}
async function loopMax(metrics: Metrics): Promise<number> {
  const text = (await metrics.exposition()).body;
  return Number(/^livegoods_event_loop_delay_seconds\{stat="max"\} (\S+)$/m.exec(text)?.[1]);
}

describe('Metrics: event-loop windows', () => {
  it('start when the node starts listening: a stall of the start before it is not in the first window', async () => {
    const server = Object.assign(new EventEmitter(), { listening: false });
    const host = { httpAdapter: { getHttpServer: () => server } } as unknown as HttpAdapterHost;
    const metrics = new Metrics(host);
    try {
      metrics.onApplicationBootstrap();
      block(600);
      await sleep(50);
      server.listening = true;
      server.emit('listening');
      await sleep(50);
      (metrics as unknown as { closeLoopWindow(): void }).closeLoopWindow();
      expect(await loopMax(metrics)).toBeLessThan(0.5);
      // A stall once listening is in the window (after a first sample: the histogram drops the one that
      // follows a reset).
      await sleep(50);
      block(600);
      await sleep(50);
      (metrics as unknown as { closeLoopWindow(): void }).closeLoopWindow();
      expect(await loopMax(metrics)).toBeGreaterThanOrEqual(0.5);
    } finally {
      metrics.onModuleDestroy();
    }
  });
});
