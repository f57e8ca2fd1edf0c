import { INestApplicationContext, Logger } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { createAdapter } from '@socket.io/redis-adapter';
import type Redis from 'ioredis';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server, ServerOptions } from 'socket.io';
import { rawJsonResponse } from '../http/client-errors';
import { REQUEST_ID_HEADER, requestIdOf, tagResponse } from '../http/request-id.middleware';
import type { RedisConfig } from '../config/app-config';
import { REDIS_LIVENESS_MS, RedisConnection } from '../redis/redis.module';
import { LiveNotifier } from './live-notifier';
import type { LiveSessionLimits } from './live-sessions';

/**
 * Socket.IO server settings for the viewer channel (a connection that joins no namespace within
 * LIVE_CONNECT_TIMEOUT_MS is closed; the main namespace `/` takes nobody; handshakes are limited per
 * address by LiveSessionLimits); with REDIS_URL, the Redis
 * adapter (its channels under REDIS_PREFIX), so that an event published on any node reaches the viewers
 * of every node.
 *
 * A Redis outage must never end the process: the adapter publishes without handling failures, so its
 * publisher is given a `publish` that never rejects (a lost message is made good by each node's sweep,
 * see LiveNotifier), and when the subscriber is connected again the node catches up at once.
 */
/** HTTP servers whose requests are already tagged with their id (one listener per server). */
const TAGGED = new WeakSet<HttpServer>();

/** What Engine.IO's `connection_error` event carries. */
interface EngineConnectionError {
  req: IncomingMessage & { res?: unknown; websocket?: unknown };
  code: number;
  message: string;
  context?: { message?: string };
}

/** Engine.IO's code for a refusal it answers 403 (as its long-polling answers do); every other one is 400. */
const ENGINE_FORBIDDEN = 4;

/**
 * Engine.IO refuses a WebSocket upgrade it cannot take (an unknown transport or session, a bad protocol
 * version) by writing a bare 400 on the socket, without the request id every other answer carries. Its
 * `connection_error` event comes first: the same refusal is written here, with the body its long-polling
 * refusals have (`{"code","message"}`) and the X-Request-Id, and the socket ended, so that Engine.IO finds
 * it closed and writes nothing more. Only before the upgrade (no `websocket` yet: a failed handshake after
 * it is refused on the WebSocket) and for upgrades (long-polling refusals are HTTP answers, tagged already).
 */
function refuseUpgrade({ req, code, message, context }: EngineConnectionError): void {
  const socket = req.socket;
  if (req.res !== undefined || req.websocket !== undefined || req.headers.upgrade === undefined || !socket.writable) return;
  const body = JSON.stringify({ code, message: context?.message ?? message });
  const [status, reason] = code === ENGINE_FORBIDDEN ? [403, 'Forbidden'] : [400, 'Bad Request'];
  socket.end(rawJsonResponse(status, reason, body, requestIdOf(req)));
}

/**
 * Longest Engine.IO waits, when it closes a long-polling session, for the client's next poll to carry the
 * close (its own default: 30 s). A client that is there polls again as soon as its last poll is answered;
 * one that is not (a session abandoned after its handshake, closed after LIVE_CONNECT_TIMEOUT_MS) would
 * keep its place among its address's sessions (LIVE_SESSIONS_PER_IP) for those 30 s.
 */
export const POLLING_CLOSE_TIMEOUT_MS = 5000;

/** Engine.IO's long-polling transport (its `closeTimeout` is not part of its typed API). */
function shortenPollingClose(transport: { name: string }): void {
  if (transport.name === 'polling') (transport as unknown as { closeTimeout: number }).closeTimeout = POLLING_CLOSE_TIMEOUT_MS;
}

export class LiveIoAdapter extends IoAdapter {
  private readonly logger = new Logger('LiveIoAdapter');
  private readonly clients: Redis[] = [];
  private lastPublishWarning = 0;

  constructor(
    private readonly app: INestApplicationContext,
    private readonly redis: RedisConfig,
    private readonly connectTimeoutMs: number,
    private readonly sessions: LiveSessionLimits,
  ) {
    super(app);
  }

  override createIOServer(port: number, options?: ServerOptions): Server {
    const server = super.createIOServer(port, {
      ...options,
      maxHttpBufferSize: 64 * 1024,
      pingInterval: 25_000,
      pingTimeout: 20_000,
      perMessageDeflate: false,
      // Long-polling answers are small and frequent: compressing them costs CPU for little (see docs/monitoring.md).
      httpCompression: false,
      // A connection that has not joined a namespace by then is closed (Socket.IO's default: 45 s).
      connectTimeout: this.connectTimeoutMs,
      // Handshakes count against the per-IP limit and the sessions per address (see LiveSessionLimits).
      allowRequest: this.sessions.allowRequest,
    }) as Server;
    this.sessions.attach(server.engine);
    server.engine.on('connection', (socket: { transport: { name: string } }) => shortenPollingClose(socket.transport));
    this.tagHttpAnswers(server);
    // Only /live serves clients: a connection to the main namespace would count as joined and so
    // escape connectTimeout. Refused, it is closed after connectTimeout like any other idle one.
    server.of('/').use((_socket, next) => next(new Error('connect to the /live namespace')));
    if (this.redis.url) {
      const pub = RedisConnection.neverRejecting(RedisConnection.open(this.redis.url, this.logger), { publish: 0 }, (err) => this.publishFailed(err));
      // The adapter subscribes as it starts and unsubscribes as it closes without waiting for the answers; a
      // Redis that is slow or hangs then would leave those commands' rejections unhandled.
      // A subscription that fails (a node started while Redis is away) is sent again when Redis is back.
      const sub = RedisConnection.resubscribing(
        RedisConnection.open(this.redis.url, this.logger, { offlineQueue: true }),
        // While the connection is down its commands fail with it, and that is logged once per outage.
        (err) => {
          if (sub.status === 'ready') this.logger.warn(`a subscription command for the other nodes' events failed: ${err.message}`);
        },
      );
      let lost = false;
      sub.on('error', () => (lost = true));
      sub.on('ready', () => {
        if (!lost) return;
        lost = false;
        this.app.get(LiveNotifier, { strict: false }).catchUp();
      });
      this.clients.push(pub, sub);
      // The publisher sends and forgets, the subscriber only listens: a PING tells whether each connection still carries anything.
      for (const client of [pub, sub]) RedisConnection.pingEvery(client, REDIS_LIVENESS_MS);
      server.adapter(createAdapter(pub, sub, { key: `${this.redis.prefix}:socket.io` }));
    }
    return server;
  }

  /**
   * Socket.IO answers its own HTTP requests (the client script /socket.io/socket.io.min.js, the Engine.IO
   * handshake and long-polling, its 400s) before Express sees them: Engine.IO and Socket.IO take the
   * server's 'request' listeners over when they attach. One listener then takes them over in turn: it
   * gives every request its id (the one requestIdMiddleware then reuses) and its response the
   * X-Request-Id header, and passes the requests under Socket.IO's path through the per-IP limit
   * (LiveSessionLimits.gateHttp) before handing them on. Engine.IO's 'headers' event gives the id to the
   * WebSocket upgrade's 101, which is no 'request'.
   */
  private tagHttpAnswers(server: Server): void {
    const http = this.httpServer as HttpServer | undefined;
    if (http && !TAGGED.has(http)) {
      TAGGED.add(http);
      const listeners = http.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
      http.removeAllListeners('request');
      const prefix = `${server.path()}/`;
      http.on('request', (req: IncomingMessage, res: ServerResponse) => {
        tagResponse(req, res);
        this.sessions.gateHttp(req, res, prefix, () => {
          for (const listener of listeners) listener.call(http, req, res);
        });
      });
    }
    server.engine.on('headers', (headers: Record<string, string>, req: IncomingMessage) => {
      headers[REQUEST_ID_HEADER] = requestIdOf(req);
    });
    server.engine.on('connection_error', (error: EngineConnectionError) => refuseUpgrade(error));
  }

  private publishFailed(err: Error): void {
    const now = Date.now();
    if (now - this.lastPublishWarning < 5000) return;
    this.lastPublishWarning = now;
    this.logger.warn(`publishing to the other nodes failed (${err.message}); they catch up from the event log when Redis is back`);
  }

  override async close(server: Server): Promise<void> {
    await super.close(server);
    await Promise.all(this.clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
  }
}
