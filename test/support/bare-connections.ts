import { Agent, get } from 'node:http';
import { connect, Socket } from 'node:net';
import WebSocket from 'ws';

/**
 * Connections that do nothing useful, as an attacker opens them by the thousand: raw TCP (optionally
 * sending a partial request) and bare Engine.IO WebSockets that never join a namespace. `localAddress`
 * (any of 127.0.0.0/8 on Linux) makes them come from another client address than the test's own requests.
 */

export interface BareTcp {
  socket: Socket;
  /** What the server sent. */
  received: string;
  closed: boolean;
  /** The server ended its side in order (FIN): nothing more will come from it. */
  ended: boolean;
  /** The first error the connection met (ECONNRESET, EPIPE: the server reset it), if any. */
  error?: string;
  /** Resolves once the server (or the test) closed the connection. */
  whenClosed: Promise<void>;
}

/** Opens a TCP connection (resolves once connected) and writes `send`, if any. */
export function openTcp(base: string, options: { localAddress?: string; send?: string; allowHalfOpen?: boolean } = {}): Promise<BareTcp> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    // allowHalfOpen: the connection stays open for writing once the server has ended its side.
    const socket = connect({ host: hostname, port: Number(port), localAddress: options.localAddress, allowHalfOpen: options.allowHalfOpen });
    let onClose: () => void = () => undefined;
    const conn: BareTcp = { socket, received: '', closed: false, ended: false, whenClosed: new Promise<void>((r) => (onClose = r)) };
    socket.on('data', (d: Buffer) => (conn.received += d.toString()));
    socket.on('end', () => (conn.ended = true));
    socket.on('error', (err: NodeJS.ErrnoException) => (conn.error ??= err.code ?? err.message));
    socket.on('close', () => {
      conn.closed = true;
      onClose();
    });
    socket.once('connect', () => {
      if (options.send) socket.write(options.send);
      resolve(conn);
    });
    socket.once('error', reject);
  });
}

export interface BareEngineIo {
  ws: WebSocket;
  /** Text frames received, in order ('0{...}' is Engine.IO's open packet). */
  frames: string[];
  closed: boolean;
  whenClosed: Promise<void>;
  /** Resolves to 'open' once Engine.IO's open packet arrived, or 'closed' if the connection ended first. */
  outcome: Promise<'open' | 'closed'>;
}

/** A bare Engine.IO v4 WebSocket (`/socket.io/?EIO=4&transport=websocket`) that answers pings and nothing else. */
export function openEngineIo(base: string, options: { localAddress?: string; headers?: Record<string, string> } = {}): BareEngineIo {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`, {
    localAddress: options.localAddress,
    headers: options.headers,
  });
  let onClose: () => void = () => undefined;
  let settle: (o: 'open' | 'closed') => void = () => undefined;
  const conn: BareEngineIo = {
    ws,
    frames: [],
    closed: false,
    whenClosed: new Promise<void>((r) => (onClose = r)),
    outcome: new Promise((r) => (settle = r)),
  };
  ws.on('message', (data: Buffer) => {
    const text = data.toString();
    conn.frames.push(text);
    if (text.startsWith('0')) settle('open');
    else if (text === '2') ws.send('3');
  });
  ws.on('error', () => undefined);
  ws.on('close', () => {
    conn.closed = true;
    settle('closed');
    onClose();
  });
  return conn;
}

/** Waits for `promise`, failing with `what` after `timeoutMs` (generous: the test is not about time). */
export async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * GET `path` through `agent` (Node's global agent keeps connections alive and reuses them; `false`: a new
 * connection); resolves to the status, or the error's code.
 */
export function getStatus(base: string, path: string, agent?: Agent | false): Promise<number | string> {
  return new Promise((resolve) => {
    const req = get(`${base}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/**
 * A bare Engine.IO v4 long-polling session: every packet of one POST is decoded in one go, so several
 * Socket.IO CONNECTs sent together all reach the server before any of them is admitted (over a WebSocket
 * each is a message of its own, and a CONNECT arriving after one was admitted makes Socket.IO close the
 * connection).
 */
export class PollingSession {
  /** Packets received so far (Engine.IO packets: '4' + a Socket.IO packet, e.g. '40/live,{...}'). */
  readonly packets: string[] = [];

  private constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
  ) {}

  static async open(base: string, headers: Record<string, string> = {}): Promise<PollingSession> {
    const res = await fetch(`${base}/socket.io/?EIO=4&transport=polling`, { headers });
    const text = await res.text();
    if (!text.startsWith('0')) throw new Error(`no Engine.IO handshake: ${res.status} ${text.slice(0, 200)}`);
    const { sid } = JSON.parse(text.slice(1)) as { sid: string };
    return new PollingSession(`${base}/socket.io/?EIO=4&transport=polling&sid=${sid}`, headers);
  }

  /** Sends Engine.IO packets in one POST. */
  async send(packets: string[]): Promise<void> {
    const res = await fetch(this.url, { method: 'POST', headers: { ...this.headers, 'content-type': 'text/plain;charset=UTF-8' }, body: packets.join('\x1e') });
    if (res.status !== 200) throw new Error(`POST ${res.status}: ${await res.text()}`);
  }

  /** Polls until `enough` holds for the packets received (answering pings); returns them. */
  async until(enough: (packets: string[]) => boolean, timeoutMs = 10_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (!enough(this.packets)) {
      if (Date.now() > deadline) throw new Error(`timed out; received ${JSON.stringify(this.packets.map((p) => p.slice(0, 80)))}`);
      const res = await fetch(this.url, { headers: this.headers });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`poll ${res.status}: ${text.slice(0, 200)}`);
      for (const packet of text.split('\x1e')) {
        if (packet === '2') await this.send(['3']);
        else if (packet === '1') throw new Error('the server closed the session');
        else this.packets.push(packet);
      }
    }
    return this.packets;
  }

  /** Closes the session (Engine.IO close packet). */
  async close(): Promise<void> {
    await this.send(['1']).catch(() => undefined);
  }
}
