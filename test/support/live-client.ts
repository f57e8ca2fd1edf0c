import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { io, Socket } from 'socket.io-client';

/** Polling helper, kept here too for the live suites that import it with their viewers. */
export { eventually } from './eventually';

/**
 * Helpers for the viewer channel (/live) in e2e tests: a listening server for the app, and real
 * socket.io-client viewers that record every event they receive, in order.
 */

/** Makes the app listen on an ephemeral loopback port (once) and returns its base URL. */
export async function listenOn(app: INestApplication): Promise<string> {
  const server = app.getHttpServer() as import('node:http').Server;
  if (!server.listening) await app.listen(0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Payload = Record<string, any>;

export interface Received {
  type: string;
  payload: Payload;
  /** Date.now() at arrival. */
  at: number;
}

export interface ViewerAuth {
  accessKey: string;
  campaignKey: string;
  /** 'operator': an operator's console, not counted as a viewer (with the customer's token). */
  role?: string;
  token?: string;
}

const open = new Set<Viewer>();

/** Disconnects every viewer still open (call from afterEach/afterAll so that jest can exit). */
export function closeAllViewers(): void {
  for (const v of [...open]) v.close();
}

/** 'websocket' (the default here), 'polling' (long polling only) or 'upgrade' (polling, then upgraded to WebSocket: socket.io-client's own default). */
export type ViewerTransport = 'websocket' | 'polling' | 'upgrade';

function socketFor(baseUrl: string, auth: ViewerAuth | Record<string, unknown>, transport: ViewerTransport = 'websocket'): Socket {
  const transports = transport === 'upgrade' ? ['polling', 'websocket'] : [transport];
  return io(`${baseUrl}/live`, { transports, auth, reconnection: false, forceNew: true, timeout: 5000 });
}

/**
 * One viewer. Every event is appended to `events`; `next()` reads them one at a time (a cursor), so a
 * test can assert the exact sequence a viewer saw.
 */
export class Viewer {
  readonly events: Received[] = [];
  /** Why the socket was disconnected, once it was. */
  disconnectReason: string | null = null;
  private cursor = 0;
  private closed = false;
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: Socket) {
    open.add(this);
    socket.onAny((type: string, payload: Payload) => {
      this.events.push({ type, payload, at: Date.now() });
      this.wake();
    });
    socket.on('disconnect', (reason) => {
      this.disconnectReason = reason;
      open.delete(this);
      this.wake();
    });
  }

  /**
   * Connects and resolves with the viewer once its join snapshot has arrived (which `next()` then returns
   * first, unless `resyncOnConnect` asked for events as the socket connected, as a player back after a
   * disconnect does: what arrived then is all in `events`, in order).
   */
  static async connect(
    baseUrl: string,
    auth: ViewerAuth,
    timeoutMs = 10_000,
    transport: ViewerTransport = 'websocket',
    resyncOnConnect?: number,
  ): Promise<Viewer> {
    const viewer = new Viewer(socketFor(baseUrl, auth, transport));
    if (resyncOnConnect !== undefined) viewer.socket.once('connect', () => viewer.resync(resyncOnConnect));
    try {
      await new Promise<void>((resolve, reject) => {
        viewer.socket.once('connect_error', (err) => reject(new Error(`connect_error: ${err.message}`)));
        void viewer.waitFor((e) => e.type === 'campaign.snapshot', timeoutMs, false).then(() => resolve(), reject);
      });
    } catch (err) {
      viewer.close();
      throw err;
    }
    return viewer;
  }

  /** Connects a socket that must be refused; resolves with the connect_error message. */
  static async refused(baseUrl: string, auth: Record<string, unknown>, timeoutMs = 10_000): Promise<string> {
    const socket = socketFor(baseUrl, auth);
    try {
      return await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('neither connect nor connect_error')), timeoutMs);
        socket.once('connect_error', (err) => {
          clearTimeout(timer);
          resolve(err.message);
        });
        socket.once('connect', () => {
          clearTimeout(timer);
          reject(new Error('connection was accepted'));
        });
      });
    } finally {
      socket.close();
    }
  }

  /** The join snapshot (the first event). */
  get snapshot(): Payload {
    const first = this.events[0];
    if (first?.type !== 'campaign.snapshot') throw new Error('no join snapshot');
    return first.payload;
  }

  /** Highest seq seen so far. */
  get lastSeq(): number {
    return this.events.reduce((max, e) => Math.max(max, Number(e.payload?.seq ?? 0)), 0);
  }

  /** Events not yet read by next(). */
  get unread(): Received[] {
    return this.events.slice(this.cursor);
  }

  /** Marks everything received so far as read. */
  skipAll(): void {
    this.cursor = this.events.length;
  }

  /** The next unread event (waits for it); when `type` is given it must be of that type. */
  async next(type?: string, timeoutMs = 5000): Promise<Payload> {
    const event = await this.nextEvent(timeoutMs);
    if (type !== undefined && event.type !== type) {
      throw new Error(`expected ${type}, got ${event.type} ${JSON.stringify(event.payload).slice(0, 300)}`);
    }
    return event.payload;
  }

  async nextEvent(timeoutMs = 5000): Promise<Received> {
    await this.until(() => this.cursor < this.events.length, timeoutMs, 'the next event');
    return this.events[this.cursor++];
  }

  /** Reads `n` events. */
  async take(n: number, timeoutMs = 5000): Promise<Received[]> {
    const out: Received[] = [];
    for (let i = 0; i < n; i += 1) out.push(await this.nextEvent(timeoutMs));
    return out;
  }

  /** Waits for an unread event matching `match` (skipping others when `consume`), returns it. */
  async waitFor(match: (e: Received) => boolean, timeoutMs = 5000, consume = true): Promise<Received> {
    let found: Received | undefined;
    await this.until(
      () => {
        found = this.events.slice(this.cursor).find(match);
        return found !== undefined;
      },
      timeoutMs,
      'a matching event',
    );
    if (consume) this.cursor = this.events.indexOf(found as Received) + 1;
    return found as Received;
  }

  /** Resolves once no unread event arrived for `ms` (asserts nothing; callers check `unread`). */
  async settle(ms = 300): Promise<void> {
    await new Promise((r) => setTimeout(r, ms));
  }

  /** Waits until the server disconnected this socket; returns the reason. */
  async disconnected(timeoutMs = 5000): Promise<string> {
    await this.until(() => this.disconnectReason !== null, timeoutMs, 'the disconnect');
    return this.disconnectReason as string;
  }

  resync(sinceSeq: unknown): void {
    this.socket.emit('resync', { sinceSeq });
  }

  close(): void {
    this.closed = true;
    open.delete(this);
    this.socket.close();
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private async until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      const left = deadline - Date.now();
      if (this.closed) throw new Error(`viewer closed while waiting for ${what}`);
      if (left <= 0) {
        const seen = this.events.map((e) => `${e.type}#${e.payload?.seq}`).join(', ');
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received: [${seen}]`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
