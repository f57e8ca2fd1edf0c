/**
 * Run as a process of its own by test/tcp-proxy.e2e-spec.ts: links through a TcpProxy whose client
 * half-closes, each cut while the proxy's side of it is still shutting down; then everything is closed
 * and the process must exit by itself. Prints `{"resetErrors": n}` (resets Node refused) before it ends.
 */
import { createConnection, createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { TcpProxy } from './tcp-proxy';

let resetErrors = 0;
// Wrapped, not called loose: the wrapper below calls it with the socket as `this`.
// eslint-disable-next-line @typescript-eslint/unbound-method
const emit = Socket.prototype.emit as (this: Socket, event: string | symbol, ...args: unknown[]) => boolean;
Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
  if (event === 'error' && (args[0] as { syscall?: string } | undefined)?.syscall === 'reset') resetErrors += 1;
  return emit.call(this, event, ...args);
} as typeof Socket.prototype.emit;

async function main(links: number): Promise<void> {
  const target = createServer((s) => {
    s.on('error', () => undefined);
    s.on('data', () => s.write('+PONG\r\n'));
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const proxy = await TcpProxy.start({ host: '127.0.0.1', port: (target.address() as AddressInfo).port });
  // The proxy's side of each link: once its client half-closes, Node ends this side too (its FIN is
  // sent by a shutdown that completes on a later turn of the event loop); cut the proxy before it has.
  (proxy as unknown as { server: Server }).server.on('connection', (socket: Socket) => {
    socket.on('end', () => process.nextTick(() => process.nextTick(() => proxy.cut())));
  });
  for (let i = 0; i < links; i += 1) {
    proxy.restore();
    await new Promise<void>((done) => {
      const client: Socket = createConnection({ port: proxy.port, host: '127.0.0.1' }, () => client.write('PING\r\n'));
      client.once('data', () => client.end());
      client.on('error', () => undefined);
      client.on('close', () => done());
    });
  }
  await proxy.close();
  await new Promise<void>((resolve) => target.close(() => resolve()));
  process.stdout.write(`${JSON.stringify({ resetErrors })}\n`);
}

void main(Number(process.argv[2] ?? 20));
