import http, { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The JSON body. */
  event: { id: string; type: string; createdAt: number; data: Record<string, unknown> };
  at: number;
}

/** What the receiver does with a request: answer a status (maybe later), or hold it unanswered (until close()). */
export type Behaviour = (event: Received['event'], nth: number) => number | Promise<number> | 'hang';

/**
 * A webhook receiver on 127.0.0.1 for the tests and the bench: records every POST (headers, body, when),
 * answers what `behaviour` says (200 by default), and counts the requests it holds unanswered.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  behaviour: Behaviour = () => 200;
  /** Requests held unanswered right now. */
  hanging = 0;
  private readonly held = new Set<ServerResponse>();
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: Received['event'];
      try {
        event = JSON.parse(body) as Received['event'];
      } catch {
        res.writeHead(400).end();
        return;
      }
      const entry = { headers: req.headers, body, event, at: Date.now() };
      this.received.push(entry);
      const nth = this.received.filter((r) => r.event.id === event.id).length;
      const answer = this.behaviour(event, nth);
      if (answer === 'hang') {
        this.hanging += 1;
        this.held.add(res);
        res.on('close', () => {
          if (this.held.delete(res)) this.hanging -= 1;
        });
        return;
      }
      if (typeof answer === 'number') res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
      else void answer.then((status) => res.writeHead(status, { 'content-type': 'text/plain' }).end('ok'));
    });
  });

  port = 0;

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    r.port = (r.server.address() as AddressInfo).port;
    return r;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  of(type: string): Received[] {
    return this.received.filter((r) => r.event.type === type);
  }

  /** Waits until `check` holds (polling every 20 ms), failing after `limitMs` with `what`. */
  async until(what: string, check: () => boolean, limitMs = 20_000): Promise<void> {
    const end = Date.now() + limitMs;
    while (!check()) {
      if (Date.now() > end) throw new Error(`gave up waiting for ${what}; received ${this.received.length}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * In a describe block: `receiver()` starts a WebhookReceiver, and every one started is closed after the
 * block's tests.
 */
export function useWebhookReceivers(): () => Promise<WebhookReceiver> {
  const started: WebhookReceiver[] = [];
  afterAll(async () => {
    for (const r of started) await r.close();
  });
  return async () => {
    const r = await WebhookReceiver.start();
    started.push(r);
    return r;
  };
}
