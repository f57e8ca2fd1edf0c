import { Logger } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppConfig } from '../config/app-config';
import { RefusalLog, RefusedLimit } from '../lifecycle/connection-guard';
import type { Metrics } from '../metrics/metrics.service';
import { ErrorCode } from '../common/errors/error-codes';
import { clientErrorResponse } from '../http/client-errors';
import { REQUEST_ID_HEADER, requestIdOf } from '../http/request-id.middleware';
import { clientIpOf, COUNTED_PER_IP, IP_LIMIT, RateLimiter } from '../rate-limit/rate-limiter';

/** The `limit` label of livegoods_connections_refused_total for a handshake refused by LIVE_SESSIONS_PER_IP. */
export const SESSIONS_PER_IP_LIMIT = 'live-sessions-per-ip';

/** Engine.IO's `allowRequest` option: called for each handshake (a request without `sid`) only. */
export type AllowRequest = (req: IncomingMessage, done: (err: string | null | undefined, success: boolean) => void) => void;

/** What of an Engine.IO server this needs: its new sessions. */
interface EngineServer {
  on(event: 'connection', listener: (socket: EngineSession) => void): unknown;
}

/** What of an Engine.IO session this needs. */
interface EngineSession {
  readonly id: string;
  readonly request: IncomingMessage;
  readonly readyState: string;
  once(event: 'close', listener: () => void): unknown;
  on(event: 'packet', listener: (packet: { type: string; data?: unknown }) => void): unknown;
  close(discard?: boolean): void;
  /** Its transport; a WebSocket one holds the `ws` socket (Engine.IO 6). */
  readonly transport?: { name: string; socket?: { terminate?: () => void } };
}

/** The `limit` label of livegoods_connections_refused_total for a session closed for the messages it sent (LIVE_MESSAGE_BURST). */
export const MESSAGES_PER_CONNECTION_LIMIT: RefusedLimit = 'live-messages-per-connection';

/**
 * Messages (Socket.IO packets: CONNECTs, events) one Engine.IO session may send in a row, and how many a
 * second it earns back; a message costs one more for each whole KB it holds. A player sends a CONNECT per
 * namespace socket (at most 10; an operator's carries its token, up to 8 KB) and now and then a `resync`;
 * nothing else is read from it. A session past the budget is closed at once, a WebSocket one without
 * waiting for the client's close frame (a client that goes on sending would have its frames read for 30 s
 * more): each message costs the node work (a CONNECT to an unknown namespace an error packet back, an
 * event a JSON parse of up to 64 KB), and one connection sending them as fast as it could held the event
 * loop for seconds.
 */
export const LIVE_MESSAGE_BURST = 100;
export const LIVE_MESSAGES_PER_SECOND = 10;

/** Set on a handshake request that holds a place of its address until its session opens. */
const HELD = Symbol('liveSessionHeld');

type Held = IncomingMessage & { [HELD]?: string; [COUNTED_PER_IP]?: boolean };

interface Refusal {
  message: string;
  retryAfterSeconds: number;
}

/**
 * Engine.IO answers its own requests before Express runs, so neither the per-IP rate limit nor the
 * middleware sees them; each handshake makes a session that holds memory until it joins /live or
 * LIVE_CONNECT_TIMEOUT_MS ends it. Here, through Engine.IO's `allowRequest` (which it calls for
 * handshakes only, long-polling and WebSocket alike):
 *
 * - every handshake counts against its address's per-IP limit (RATE_LIMIT_IP), in the same counter as
 *   the HTTP requests (RateLimiter.hitIp), so an address gets RATE_LIMIT_IP requests and handshakes
 *   together per window, not RATE_LIMIT_IP requests plus as many handshakes as it can send;
 * - an address holds at most LIVE_SESSIONS_PER_IP sessions open on the node (joined to /live or not),
 *   counted from the handshake until the session closes. The per-address cap on TCP connections
 *   (MAX_CONNECTIONS_PER_IP) cannot bound long-polling sessions, which share a few keep-alive connections.
 *
 * A refused handshake is answered 429 in the API's error shape, with Retry-After (long-polling: the
 * response Engine.IO gave the request; WebSocket: written on the socket before the upgrade, which is then
 * closed). The requests of an open session (those with the `sid` of a session open on this node) are not
 * counted: they are the transport of a session already admitted, as the frames of a WebSocket are (see
 * docs/live-protocol.md). Every other HTTP request under Socket.IO's path (the client script, a `sid` no
 * session has, an unknown transport) counts as an HTTP request does, through gateHttp.
 */
export class LiveSessionLimits {
  private readonly logger = new Logger('LiveSessions');
  private readonly perAddress = new Map<string, number>();
  /** The ids (`sid`) of the sessions open on this node. */
  private readonly open = new Set<string>();
  private readonly refusals: RefusalLog;
  private readonly messageRefusals: RefusalLog;

  constructor(
    private readonly config: AppConfig,
    private readonly limiter: RateLimiter,
    private readonly metrics: Metrics,
  ) {
    this.refusals = new RefusalLog(this.logger, () => `LIVE_SESSIONS_PER_IP (${config.server.liveSessionsPerIp})`);
    this.messageRefusals = new RefusalLog(
      this.logger,
      () => `the messages a viewer-channel connection may send (${LIVE_MESSAGE_BURST} in a row, ${LIVE_MESSAGES_PER_SECOND} a second after)`,
    );
  }

  private get cap(): number {
    return this.config.server.liveSessionsPerIp;
  }

  /** Sessions the address holds (or is opening) on this node. */
  sessionsOf(address: string): number {
    return this.perAddress.get(address) ?? 0;
  }

  readonly allowRequest: AllowRequest = (req, done) => {
    this.admit(req as Held).then(
      (refusal) => (refusal ? this.refuse(req, refusal, done) : done(null, true)),
      (err: unknown) => {
        this.logger.warn(`a handshake could not be checked: ${err instanceof Error ? err.message : String(err)}`);
        done('the connection could not be admitted', false);
      },
    );
  };

  /** Counts the sessions the server opens, until each closes (call once, on the server allowRequest was given to). */
  attach(engine: EngineServer): void {
    engine.on('connection', (session) => {
      if (session.readyState !== 'closed') {
        this.open.add(session.id);
        session.once('close', () => this.open.delete(session.id));
        this.budgetMessages(session);
      }
      if (this.cap <= 0) return;
      const req = session.request as Held;
      let address = req[HELD];
      if (address !== undefined) delete req[HELD];
      else this.add((address = clientIpOf(req, this.config.server.proxyTrust)));
      if (session.readyState === 'closed') this.release(address);
      else session.once('close', () => this.release(address));
    });
  }

  /**
   * Closes the session once it has sent more messages than LIVE_MESSAGE_BURST, earned back at
   * LIVE_MESSAGES_PER_SECOND. Engine.IO drops every packet of a session no longer open, so the rest of a
   * flood already read costs next to nothing. Pings and pongs are Engine.IO's own packets, not counted.
   */
  private budgetMessages(session: EngineSession): void {
    let tokens = LIVE_MESSAGE_BURST;
    let at = Date.now();
    session.on('packet', (packet) => {
      if (packet.type !== 'message') return;
      const cost = 1 + Math.floor(sizeOf(packet.data) / 1024);
      if (tokens < cost) {
        const now = Date.now();
        tokens = Math.min(LIVE_MESSAGE_BURST, tokens + ((now - at) * LIVE_MESSAGES_PER_SECOND) / 1000);
        at = now;
        if (tokens < cost) {
          if (session.readyState !== 'open') return;
          this.metrics.connectionsRefused.inc({ limit: MESSAGES_PER_CONNECTION_LIMIT });
          this.messageRefusals.refused(MESSAGES_PER_CONNECTION_LIMIT, clientIpOf(session.request, this.config.server.proxyTrust));
          const transport = session.transport;
          session.close(true);
          if (transport?.name === 'websocket') transport.socket?.terminate?.();
          return;
        }
      }
      tokens -= cost;
    });
  }

  /**
   * Socket.IO answers the HTTP requests under its path (`prefix`, e.g. `/socket.io/`) itself, before
   * Express and its per-IP limit: the client script (about 50 KB to 160 KB for a request of a few bytes),
   * long-polling, and its own 400s. Each such request that is not the transport of a session open on
   * this node counts against its address's per-IP limit, in the same counter as every other request;
   * over the limit it is answered 429 in the API's error shape with Retry-After, and Socket.IO never sees
   * it. A long-polling handshake counted here is not counted again by allowRequest (a WebSocket one, an
   * upgrade and no 'request', is counted there). `forward` hands the request on to Socket.IO and Express.
   */
  gateHttp(req: IncomingMessage, res: ServerResponse, prefix: string, forward: () => void): void {
    const url = req.url ?? '';
    if (!this.limiter.enabled || !url.startsWith(prefix)) return forward();
    const query = url.indexOf('?');
    const sid = query < 0 ? null : new URLSearchParams(url.slice(query + 1)).get('sid');
    if (sid !== null && this.open.has(sid)) return forward();
    (req as Held)[COUNTED_PER_IP] = true;
    this.hitIp(req).then(
      (refusal) => (refusal ? answerJson(req, res, 429, refusal.message, { 'Retry-After': String(refusal.retryAfterSeconds) }) : forward()),
      (err: unknown) => {
        this.logger.warn(`a Socket.IO request could not be checked: ${err instanceof Error ? err.message : String(err)}`);
        answerJson(req, res, 503, 'The request could not be admitted now; try again shortly', { 'Retry-After': '5' });
      },
    );
  }

  /** Counts the request against its address's per-IP limit: the refusal when over it. */
  private async hitIp(req: IncomingMessage): Promise<Refusal | null> {
    const rate = await this.limiter.hitIp(clientIpOf(req, this.config.server.proxyTrust));
    if (rate.allowed) return null;
    this.metrics.rateLimitRefusals.inc({ limit: IP_LIMIT });
    return { message: this.limiter.ipRefusal(rate.retryAfterSeconds), retryAfterSeconds: rate.retryAfterSeconds };
  }

  private async admit(req: Held): Promise<Refusal | null> {
    const address = clientIpOf(req, this.config.server.proxyTrust);
    if (!req[COUNTED_PER_IP]) {
      const refusal = await this.hitIp(req);
      if (refusal) return refusal;
    }
    if (this.cap <= 0) return null;
    if (this.sessionsOf(address) >= this.cap) {
      this.metrics.connectionsRefused.inc({ limit: SESSIONS_PER_IP_LIMIT });
      this.refusals.refused(SESSIONS_PER_IP_LIMIT, address);
      // Sessions that never join /live end within LIVE_CONNECT_TIMEOUT_MS: a place may be free by then.
      const retryAfterSeconds = Math.max(1, Math.ceil(this.config.server.liveConnectTimeoutMs / 1000));
      return {
        message: `Too many open viewer-channel sessions from your address (at most ${this.cap}); close one, or retry after ${retryAfterSeconds} s`,
        retryAfterSeconds,
      };
    }
    // Held from now (the check and the hold in one turn, so that handshakes arriving together cannot all
    // pass it). Engine.IO opens the session within the same turn of the event loop once allowed; one that
    // does not open by then (a WebSocket upgrade that failed, a refused protocol version) gives it back.
    this.add(address);
    req[HELD] = address;
    setImmediate(() => {
      if (req[HELD] === undefined) return;
      delete req[HELD];
      this.release(address);
    });
    return null;
  }

  private add(address: string): void {
    this.perAddress.set(address, this.sessionsOf(address) + 1);
  }

  private release(address: string): void {
    const held = this.sessionsOf(address) - 1;
    if (held > 0) this.perAddress.set(address, held);
    else this.perAddress.delete(address);
  }

  /**
   * Answers a refused handshake 429 `{"_s": -429, "_e": message}` with Retry-After. Engine.IO's own
   * refusal would be 403 (long-polling) or 400 (WebSocket) `Forbidden`: it sends none once an answer was
   * given (long-polling), or finds the socket closed (WebSocket).
   */
  private refuse(req: IncomingMessage, { message, retryAfterSeconds }: Refusal, done: Parameters<AllowRequest>[1]): void {
    const answer = { status: 429, reason: 'Too Many Requests', code: ErrorCode.RateLimited, message };
    const retryAfter = { 'Retry-After': String(retryAfterSeconds) };
    // Engine.IO sets `res` on the requests it answers over HTTP (long-polling), not on an upgrade.
    const res = (req as IncomingMessage & { res?: ServerResponse }).res;
    if (res) {
      answerJson(req, res, 429, message, retryAfter);
      done(message, false);
      return;
    }
    const socket = req.socket;
    if (!socket.writable) {
      done(message, false);
      return;
    }
    socket.end(clientErrorResponse(answer, requestIdOf(req), retryAfter), () => done(message, false));
  }
}

/**
 * Answers an HTTP request Socket.IO would have answered with the API's error shape (429 or 503), unless
 * an answer was begun; with the CORS headers Socket.IO gives (the /live gateway takes every origin), so
 * that a page can read the status.
 */
function answerJson(req: IncomingMessage, res: ServerResponse, status: 429 | 503, message: string, headers: Record<string, string>): void {
  if (res.headersSent) return;
  const body = JSON.stringify({ _s: status === 429 ? ErrorCode.RateLimited : ErrorCode.Unavailable, _e: message });
  const origin = req.headers.origin;
  if (origin) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
  }
  res
    .writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      'Cache-Control': 'no-store',
      [REQUEST_ID_HEADER]: requestIdOf(req),
      ...headers,
    })
    .end(body);
}

/** The length of a message's data: its characters (text) or bytes (binary). */
function sizeOf(data: unknown): number {
  if (typeof data === 'string') return data.length;
  if (Buffer.isBuffer(data)) return data.length;
  if (data instanceof ArrayBuffer) return data.byteLength;
  return 0;
}
