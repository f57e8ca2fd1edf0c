import { createConnection, createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export type ProxyMode = 'open' | 'cut' | 'blackhole';

interface Link {
  client: Socket;
  upstream: Socket;
  /** Data no longer flows (the link was blackholed); it never flows again. */
  dead: boolean;
}

/**
 * A TCP proxy for fault injection: tests point the service at it instead of MariaDB or Redis, then
 * break the link and mend it.
 * - `cut()`: every open connection is reset and new ones are refused (reset at once), as when the
 *   server goes down or a firewall rejects.
 * - `blackhole()`: nothing passes any more, in either direction, and nobody is told: open connections
 *   hang, new ones are accepted and hang too, as in a network partition. Links caught in it stay dead
 *   (neither end hears of it) even after `restore()`, like connections lost in a partition.
 * - `restore()`: new connections reach the server again.
 */
export class TcpProxy {
  private readonly links = new Set<Link>();
  private mode: ProxyMode = 'open';

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new TcpProxy(server, (server.address() as AddressInfo).port);
    server.on('connection', (client: Socket) => proxy.accept(client, target));
    return proxy;
  }

  get state(): ProxyMode {
    return this.mode;
  }

  /** Connections passing data right now (for assertions). */
  get openLinks(): number {
    return [...this.links].filter((l) => !l.dead).length;
  }

  cut(): void {
    this.mode = 'cut';
    for (const link of [...this.links]) this.drop(link);
  }

  blackhole(): void {
    this.mode = 'blackhole';
    for (const link of this.links) link.dead = true;
  }

  restore(): void {
    this.mode = 'open';
  }

  async close(): Promise<void> {
    for (const link of [...this.links]) this.drop(link);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    if (this.mode === 'cut') {
      reset(client);
      return;
    }
    const upstream = createConnection(target);
    const link: Link = { client, upstream, dead: this.mode === 'blackhole' };
    this.links.add(link);
    client.on('data', (chunk) => {
      if (!link.dead && !upstream.write(chunk)) client.pause();
    });
    upstream.on('data', (chunk) => {
      if (!link.dead && !client.write(chunk)) upstream.pause();
    });
    upstream.on('drain', () => client.resume());
    client.on('drain', () => upstream.resume());
    for (const socket of [client, upstream]) {
      const end = () => {
        // Across a dead link the other end never hears that this one went away (its FIN is lost too).
        if (link.dead) socket.destroy();
        else this.drop(link);
      };
      socket.on('error', end);
      socket.on('close', end);
    }
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    reset(link.client);
    link.upstream.destroy();
  }
}

/**
 * Closes a socket with a reset (RST), as a server that went down would, unless its side is already
 * ending: Node's resetAndDestroy() while the socket's shutdown (its FIN, sent by itself once the peer
 * half-closed) is still pending fails with EINVAL and leaves the handle open for good, and then the
 * process never exits: it spins at 100 % CPU in its exit-time cleanup, waiting for that handle to close.
 * A socket that is ending is closed plainly (its FIN is on its way anyway).
 */
function reset(socket: Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}
