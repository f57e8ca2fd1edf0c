import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Logger } from '@nestjs/common';
import type { ServerConfig } from '../config/app-config';
import type { Metrics } from '../metrics/metrics.service';
import { answerInProgress } from '../http/client-errors';
import { addressKey } from '../rate-limit/address-key';

/** Refusals are logged at most once per this interval (the first at once, then a count of the rest). */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * How long a client may go on sending a request's body after its answer was sent (a refusal such as 401,
 * 404 or a 413 on Content-Length, answered before the body was read): what comes meanwhile is read and
 * thrown away, and a body that ends in time leaves the connection open for the next request. Past it the
 * connection is closed. Closing at once would reset connections whose client is still writing, and a
 * reset can lose the answer on its way to the client: this wait lets it read the answer first.
 */
export const UNREAD_BODY_LINGER_MS = 5000;

/** Node's diagnostics channels for a request whose headers have been read and a response sent whole. */
const REQUEST_START = 'http.server.request.start';
const RESPONSE_FINISH = 'http.server.response.finish';

/** What both channels publish (the response only with RESPONSE_FINISH). */
interface ChannelMessage {
  request: IncomingMessage;
  response: ServerResponse;
  socket: Socket;
  server: Server;
}

/**
 * Whether the answer closes its connection once sent (`Connection: close`: the client asked for it, spoke
 * HTTP/1.0, or the node is shutting down): Node's `_last`, which it reads itself right after the answer to
 * close the socket.
 */
function closesConnection(response: ServerResponse): boolean {
  return (response as ServerResponse & { _last?: boolean })._last === true;
}

export type RefusedLimit = 'total' | 'per-ip' | 'live-sockets-per-connection' | 'live-sessions-per-ip' | 'live-messages-per-connection';

/**
 * Logs refusals without flooding the log: the first one at once, then at most one line per
 * REFUSAL_LOG_INTERVAL_MS counting those that came since (by limit, with the last address).
 */
export class RefusalLog {
  private last = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly pending = new Map<RefusedLimit, { count: number; address: string }>();

  constructor(
    private readonly logger: Logger,
    private readonly describe: (limit: RefusedLimit) => string,
  ) {}

  refused(limit: RefusedLimit, address: string): void {
    const entry = this.pending.get(limit) ?? { count: 0, address };
    entry.count += 1;
    entry.address = address;
    this.pending.set(limit, entry);
    const wait = this.last + REFUSAL_LOG_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), wait);
      this.timer.unref();
    }
  }

  private flush(): void {
    this.timer = null;
    if (!this.pending.size) return;
    this.last = Date.now();
    const parts = [...this.pending].map(([limit, { count, address }]) => `${count} over ${this.describe(limit)} (last from ${address})`);
    this.pending.clear();
    this.logger.warn(`refused connections: ${parts.join('; ')}; at most one such line a minute`);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * Bounds what idle or abusive clients can hold of the node (docs/architecture.md): at most MAX_CONNECTIONS
 * open connections (Node closes a new one past it before reading a byte: `server.maxConnections`), at
 * most MAX_CONNECTIONS_PER_IP from one peer address (closed as soon as it is accepted), and deadlines for
 * connections that send nothing useful: HEADERS_TIMEOUT_MS for a request's headers, REQUEST_TIMEOUT_MS for
 * a whole request (a response may take as long as it needs), SEND_TIMEOUT_MS for a client that takes no
 * byte of its answer, and UNREAD_BODY_LINGER_MS for the rest of a body whose answer has already been
 * sent. Refusals are counted (livegoods_connections_refused_total) and logged at most once a minute.
 */
export class ConnectionGuard {
  private readonly logger = new Logger('Connections');
  private readonly perAddress = new Map<string, number>();
  private open = 0;
  private lingering = 0;
  readonly refusals: RefusalLog;

  constructor(
    private readonly config: ServerConfig,
    private readonly metrics: Metrics,
  ) {
    this.refusals = new RefusalLog(this.logger, (limit) =>
      limit === 'total'
        ? `MAX_CONNECTIONS (${config.maxConnections})`
        : limit === 'per-ip'
          ? `MAX_CONNECTIONS_PER_IP (${config.maxConnectionsPerIp})`
          : 'the /live sockets allowed on one connection',
    );
    metrics.countOpenConnections(() => this.open);
  }

  /** Call before the server listens (Node reads the checking interval when it starts listening). */
  apply(server: Server): void {
    const { maxConnections, headersTimeoutMs, requestTimeoutMs, sendTimeoutMs } = this.config;
    server.maxConnections = maxConnections;
    server.headersTimeout = headersTimeoutMs;
    server.requestTimeout = requestTimeoutMs;
    // Node checks both deadlines every 30 s by default: a 10 s deadline would hold for up to 40 s.
    (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(5000, Math.max(100, Math.floor(headersTimeoutMs / 4)));
    server.on('drop', (data?: { remoteAddress?: string }) => this.refuse('total', data?.remoteAddress));
    // First of the 'connection' listeners: a refused socket is closed before a byte of it is read.
    server.prependListener('connection', (socket: Socket) => this.admit(socket));
    // Every response of this server, Socket.IO's own included (they never reach a 'request' listener
    // added here: Engine.IO takes those over), at the moment it has been sent whole.
    const finished = (message: unknown) => {
      const { request, response, socket, server: from } = message as ChannelMessage;
      if (from === server && !request.complete) this.linger(request, response, socket);
    };
    subscribe(RESPONSE_FINISH, finished);
    // SEND_TIMEOUT_MS is each request's inactivity clock on its socket, from its start to its answer's
    // end (then Node's keep-alive timeout takes the socket over): Node restarts it whenever a byte is read
    // or written and holds it while a write is still being taken by the client; `timedOut` decides what
    // its expiry means.
    const started = (message: unknown) => {
      const { socket, server: from } = message as ChannelMessage;
      if (from === server) socket.setTimeout(sendTimeoutMs);
    };
    if (sendTimeoutMs > 0) {
      subscribe(REQUEST_START, started);
      server.on('timeout', (socket: Socket) => this.timedOut(socket));
    }
    server.once('close', () => {
      unsubscribe(RESPONSE_FINISH, finished);
      if (sendTimeoutMs > 0) unsubscribe(REQUEST_START, started);
      this.refusals.stop();
    });
  }

  /**
   * A connection had nothing read or written for its timeout: the keep-alive timeout of a connection
   * between requests (closed, as Node does it without a listener), or SEND_TIMEOUT_MS in a request. Closed
   * then only if its answer has bytes the client has not taken (it stopped reading: what the answer
   * holds, up to a whole console list, would be kept for as long as the client keeps the connection
   * open); an answer the server is still preparing, a long poll or a request body still arriving
   * (REQUEST_TIMEOUT_MS's) are left be.
   */
  private timedOut(socket: Socket): void {
    if (!answerInProgress(socket)) {
      socket.destroy();
    } else if (socket.writableLength > 0) {
      this.metrics.connectionsCut.inc({ reason: 'send-timeout' });
      socket.destroy();
    }
  }

  /**
   * The request was answered before its body had all arrived: Node reads and throws away the rest, to
   * keep the connection for the next request. That rest may never end (a body sent a byte a second, or a
   * Content-Length of terabytes): the connection is closed if it has not ended UNREAD_BODY_LINGER_MS on.
   *
   * An answer that closes its connection (closesConnection) is a lingering close: Node would close the
   * socket right after the answer, and closing a socket with data still coming in is a reset, which can
   * take the answer with it before the client has read it (the client's system drops what it had not
   * handed over yet). The socket is only ended instead (the client reads the answer, then the end), the
   * rest of the body is read and thrown away, and the socket is closed once it has all come, or at the
   * end of the same wait.
   */
  private linger(request: IncomingMessage, response: ServerResponse, socket: Socket): void {
    const closing = closesConnection(response);
    if (closing) {
      // Node calls it right after this message (resOnFinish): end, without the destroy that follows.
      socket.destroySoon = function endOnly(this: Socket) {
        delete (this as Partial<Socket>).destroySoon;
        this.end();
      };
    }
    this.lingering += 1;
    const timer = setTimeout(() => {
      if (request.complete || socket.destroyed) return;
      this.metrics.connectionsCut.inc({ reason: 'unread-body' });
      socket.destroy();
    }, UNREAD_BODY_LINGER_MS);
    timer.unref();
    // Both listeners go with the wait: a kept-alive connection may see many such requests.
    const stop = () => {
      this.lingering -= 1;
      clearTimeout(timer);
      request.off('end', ended);
      socket.off('close', stop);
    };
    const ended = () => {
      stop();
      // Everything the client sent has been read: closing now is no reset.
      if (closing) socket.destroy();
    };
    request.once('end', ended);
    socket.once('close', stop);
  }

  /** Connections whose answer has been sent while the rest of their body is still being read (see linger). */
  get lingeringConnections(): number {
    return this.lingering;
  }

  /** Open connections right now (what livegoods_open_connections shows). */
  get openConnections(): number {
    return this.open;
  }

  private admit(socket: Socket): void {
    const address = socket.remoteAddress === undefined ? undefined : addressKey(socket.remoteAddress);
    const cap = this.config.maxConnectionsPerIp;
    if (cap > 0 && address !== undefined) {
      const held = this.perAddress.get(address) ?? 0;
      if (held >= cap) {
        socket.destroy();
        this.refuse('per-ip', address);
        return;
      }
      this.perAddress.set(address, held + 1);
    }
    this.open += 1;
    socket.once('close', () => {
      this.open -= 1;
      if (cap <= 0 || address === undefined) return;
      const held = (this.perAddress.get(address) ?? 1) - 1;
      if (held > 0) this.perAddress.set(address, held);
      else this.perAddress.delete(address);
    });
  }

  private refuse(limit: 'total' | 'per-ip', address: string | undefined): void {
    this.metrics.connectionsRefused.inc({ limit });
    this.refusals.refused(limit, address ?? 'unknown');
  }
}
