import { Inject, Logger, OnModuleDestroy } from '@nestjs/common';
import { ConnectedSocket, MessageBody, OnGatewayConnection, OnGatewayDisconnect, OnGatewayInit, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { Namespace, Socket } from 'socket.io';
import { AppConfig } from '../config/app-config';
import { isDatabaseUnavailable } from '../database/database-errors';
import { Lifecycle } from '../lifecycle/lifecycle.service';
import { Metrics } from '../metrics/metrics.service';
import { clientIpOf, RateLimiter } from '../rate-limit/rate-limiter';
import { forwardedProtoOf } from '../common/util/proxy-trust';
import { LiveEventMap, operatorRoomOf, roomOf } from './live-events';
import { LiveNotifier } from './live-notifier';
import { RefusalLog } from '../lifecycle/connection-guard';
import { LIVE_SOURCE, LiveRefusal, LiveSource } from './live-source';
import { ViewerCounter } from './viewer-counter';
import { SharedSnapshot, SharedSnapshots } from './shared-snapshots';
import { requestBaseUrl } from '../http/base-url';
import { TimeSlicer } from '../common/util/time-slicer';

/**
 * Resync requests a socket may make: a bucket of RESYNC_BURST that refills one every RESYNC_REFILL_MS.
 * A request while one is being answered, or with the bucket empty, is ignored; a socket that keeps
 * asking (RESYNC_ABUSE requests ignored in a row) is disconnected.
 */
export const RESYNC_BURST = 10;
export const RESYNC_REFILL_MS = 1000;
export const RESYNC_ABUSE = 30;
/**
 * /live sockets one Engine.IO connection may hold (admitted or being admitted). Socket.IO makes a socket
 * for every CONNECT that arrives while none of the connection's /live sockets has been admitted yet (one
 * arriving later closes the connection), so a hand-made client could otherwise get hundreds admitted by
 * sending them at once; socket.io-client opens a new connection for a second socket on a namespace, so
 * real players use one. A CONNECT past the cap is refused with connect_error (TOO_MANY_SOCKETS_MESSAGE).
 */
export const MAX_LIVE_SOCKETS_PER_CONNECTION = 10;
export const TOO_MANY_SOCKETS_MESSAGE = `too many /live sockets on this connection (at most ${MAX_LIVE_SOCKETS_PER_CONNECTION}); open another connection`;
/**
 * A resync whose missed events are bigger than this (JSON, UTF-8 bytes) is answered with a snapshot
 * instead, decided from the sizes the event log stores (it must stay under its BYTES_KEPT).
 */
export const RESYNC_MAX_REPLAY_BYTES = 256 * 1024;
/**
 * A resync answered with a snapshot comes at least this long after the socket's previous snapshot (its
 * join's included): the request waits out the rest (the socket stays busy meanwhile, so its next requests
 * are ignored) and then gets one snapshot, read then. A snapshot of a campaign at CAMPAIGN_MAX_GOODS is a
 * few MB; 250 viewers that joined such a campaign and each asked ten times in a row for one held the event
 * loop for 1.7 s.
 */
export const SNAPSHOT_RESYNC_INTERVAL_MS = 2000;

interface ViewerData {
  campaignId: number;
  customerId: number;
  /** false for an operator's console (auth.role 'operator' with the customer's token): not counted as a viewer. */
  counted: boolean;
  currency: string;
  baseUrl: string;
  resync: { tokens: number; at: number; busy: boolean; ignored: number; snapshotAt: number };
  /**
   * Settles with the seq of the join snapshot once it went out (null: none did, the socket is being
   * dropped). A resync waits for it: one sent at `connect` is answered after the snapshot, not before it.
   */
  joined?: Promise<number | null>;
  /** An operator's console: when its token stops being valid (epoch ms); it is disconnected then. */
  operatorUntil?: number;
}

type ViewerSocket = Socket<Record<string, never>, { [K in keyof LiveEventMap]: (payload: LiveEventMap[K]) => void }, Record<string, never>, ViewerData>;

/** setTimeout's longest delay (about 24.8 days); a token may live longer (TOKEN_MAX_TTL). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * How often operators' consoles have their token checked again (recheckOperators): a key retired by a
 * rotation (`rotate-secret --grace 0` after a leak, or the grace's end) ends their sockets within this and
 * the customer cache's 30 s, as the REST API refuses the token within the 30 s.
 */
export const OPERATOR_RECHECK_MS = 15_000;

/**
 * Disconnects an operator's console when its token stops being valid: what it hears (its customer's
 * operator events too) is what the token admitted it to, and the REST API refuses the token from then on.
 * The console connects again with a fresh token (an expired one is refused as it joins).
 */
function disconnectAt(socket: ViewerSocket, at: number): void {
  const wait = at - Date.now();
  if (wait <= 0) {
    socket.disconnect(true);
    return;
  }
  const timer = setTimeout(() => disconnectAt(socket, at), Math.min(wait, MAX_TIMER_MS));
  timer.unref();
  socket.once('disconnect', () => clearTimeout(timer));
}

/**
 * A refusal the client should retry by itself (socket.io-client does not retry a refusal from the
 * server): `connect_error` carries `data: {retryable: true, retryAfterMs}`. Other refusals (unknown
 * campaign, missing keys, a bad operator token) have no `data` and should not be retried in a loop.
 */
function retryable(message: string, retryAfterMs: number): Error {
  return Object.assign(new Error(message), { data: { retryable: true, retryAfterMs } });
}

function isRetryable(err: Error): boolean {
  return (err as { data?: { retryable?: boolean } }).data?.retryable === true;
}

/**
 * The `sinceSeq` of a resync body when it is a non-negative integer (a JSON number), else null. Nothing
 * is coerced: `"5"`, `null`, `true` or `[]` are malformed, not 5, 0, 1 or 0.
 */
export function sinceSeqOf(body: unknown): number | null {
  const value = body !== null && typeof body === 'object' ? (body as { sinceSeq?: unknown }).sinceSeq : undefined;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

function text(value: unknown, max = 64): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;
}

/**
 * The handshake's key `name` (from `auth`, else the query string); undefined when neither gives one. A
 * value given that is no key (not text, or too long) is refused naming what was wrong with it: "must
 * carry" would send the developer looking for a field they did send.
 */
function handshakeKey(name: string, auth: Record<string, unknown>, query: Record<string, unknown>): string | undefined {
  const key = text(auth[name]) ?? text(query[name]);
  if (key !== undefined) return key;
  const given = [auth[name], query[name]].find((v) => v !== undefined && v !== null && v !== '');
  if (given === undefined) return undefined;
  if (typeof given !== 'string') throw new LiveRefusal(`${name} must be text; got ${Array.isArray(given) ? 'a list' : typeof given}`);
  throw new LiveRefusal(`${name} is ${given.length} characters long; a key has at most 64`);
}

/**
 * The viewer channel: namespace /live. A player connects with `auth: {accessKey, campaignKey}`, gets
 * `campaign.snapshot`, then every event of that campaign, each with the next `seq`. After a gap or a
 * reconnect it emits `resync` with `{sinceSeq}` and receives the missed events in order, or a new
 * snapshot when they are no longer kept. No token is needed, except for an operator's console
 * (`role: 'operator'`, which is not counted as a viewer): it must show the customer's token.
 */
@WebSocketGateway({ namespace: '/live', cors: { origin: true } })
export class LiveGateway implements OnGatewayInit, OnGatewayConnection, OnGatewayDisconnect, OnModuleDestroy {
  private readonly logger = new Logger(LiveGateway.name);
  private namespace: Namespace | null = null;
  /** Snapshots read and encoded once for the viewers that ask for them together or soon after (see SharedSnapshots). */
  private readonly snapshots = new SharedSnapshots((campaignId, currency, baseUrl) => this.readSnapshot(campaignId, currency, baseUrl));
  /** The /live sockets of each Engine.IO connection, admitted or being admitted (see MAX_LIVE_SOCKETS_PER_CONNECTION). */
  private readonly socketsPerConnection = new WeakMap<object, Set<string>>();
  /** Slices of the event loop the snapshot writes take (see sendSnapshot); holding for no request. */
  private readonly snapshotWrites = new TimeSlicer(5, 0);
  private readonly refusals = new RefusalLog(this.logger, () => `MAX_LIVE_SOCKETS_PER_CONNECTION (${MAX_LIVE_SOCKETS_PER_CONNECTION})`);

  constructor(
    private readonly notifier: LiveNotifier,
    private readonly counter: ViewerCounter,
    @Inject(LIVE_SOURCE) private readonly source: LiveSource,
    private readonly config: AppConfig,
    private readonly lifecycle: Lifecycle,
    private readonly limiter: RateLimiter,
    private readonly metrics: Metrics,
  ) {}

  /** Operators' consoles connected to this node, whose tokens are checked again every OPERATOR_RECHECK_MS. */
  private readonly operators = new Set<ViewerSocket>();
  private recheckTimer: NodeJS.Timeout | undefined;
  private rechecking = false;

  afterInit(namespace: Namespace): void {
    this.namespace = namespace;
    this.recheckTimer = setInterval(() => void this.recheckOperators(), OPERATOR_RECHECK_MS);
    this.recheckTimer.unref();
    this.lifecycle.attachLive(namespace);
    this.notifier.attach(
      namespace,
      (campaignId) => this.refreshRoom(campaignId),
      (campaignId) => this.snapshots.changed(campaignId),
    );
    this.metrics.countLiveSockets(() => {
      const counts = { viewer: 0, operator: 0 };
      for (const socket of namespace.sockets.values()) {
        const data = socket.data as Partial<ViewerData> | undefined;
        if (data?.campaignId) counts[data.counted ? 'viewer' : 'operator'] += 1;
      }
      return counts;
    });
    // An admission that does not finish in half of LIVE_CONNECT_TIMEOUT_MS (a database that takes packets
    // and answers none, its statements waiting out DB_QUERY_TIMEOUT_MS) is refused as retryable before the
    // connection's own timeout closes it with no word; what it was waiting for finishes unheeded.
    const admitWithinMs = Math.max(250, Math.floor(this.config.server.liveConnectTimeoutMs / 2));
    namespace.use((socket, next) => {
      let decided = false;
      const refuse = (err: Error): void => {
        this.socketsPerConnection.get(socket.conn)?.delete(socket.id);
        next(
          err instanceof LiveRefusal || isRetryable(err)
            ? err
            : isDatabaseUnavailable(err)
              ? retryable('the service is busy; connect again shortly', 2000)
              : new Error('the connection could not be admitted'),
        );
      };
      const timer = setTimeout(() => {
        decided = true;
        refuse(retryable('the service is busy; connect again shortly', 2000));
      }, admitWithinMs);
      // Refused by the time limit already: the place it may have taken since on its connection is given back.
      const late = () => this.socketsPerConnection.get(socket.conn)?.delete(socket.id);
      this.admit(socket as ViewerSocket).then(
        () => {
          clearTimeout(timer);
          if (decided) late();
          else next();
        },
        (err: Error) => {
          clearTimeout(timer);
          if (decided) late();
          else refuse(err);
        },
      );
    });
  }

  /** Checks accessKey + campaignKey before the connection is accepted; a refusal is a connect_error. */
  private async admit(socket: ViewerSocket): Promise<void> {
    // A node shutting down takes no new viewers: the client retries, and reaches another node.
    if (this.lifecycle.isDraining) throw retryable('this node is shutting down; connect again', 500);
    // Every CONNECT counts against its address's rate, those on a connection that already has sockets too.
    const limit = await this.limiter.hit('live-connections', this.addressOf(socket));
    if (!limit.allowed) throw retryable(`too many connections from your address; retry after ${limit.retryAfterSeconds} s`, limit.retryAfterSeconds * 1000);
    this.holdSlot(socket);
    const auth = (socket.handshake.auth ?? {}) as Record<string, unknown>;
    const query = socket.handshake.query as Record<string, unknown>;
    const accessKey = handshakeKey('accessKey', auth, query);
    const campaignKey = handshakeKey('campaignKey', auth, query);
    if (!accessKey || !campaignKey) throw new LiveRefusal('auth must carry accessKey and campaignKey');
    const operator = auth.role === 'operator';
    // Only the customer's own console may stay out of userCount: it proves it with the customer's token.
    const token = operator ? (text(auth.token, 8192) ?? '') : undefined;
    const admission = await this.source.admit(accessKey, campaignKey, token);
    socket.data = {
      campaignId: admission.campaignId,
      customerId: admission.customerId,
      counted: admission.counted,
      currency: admission.currency,
      baseUrl: this.baseUrlOf(socket),
      resync: { tokens: RESYNC_BURST, at: Date.now(), busy: false, ignored: 0, snapshotAt: 0 },
      operatorUntil: admission.operatorUntil,
    };
  }

  /**
   * Takes one of the connection's MAX_LIVE_SOCKETS_PER_CONNECTION places for this socket until it
   * disconnects (or is refused: see afterInit), or refuses it when they are all taken.
   */
  private holdSlot(socket: ViewerSocket): void {
    let held = this.socketsPerConnection.get(socket.conn);
    if (!held) this.socketsPerConnection.set(socket.conn, (held = new Set()));
    if (held.size >= MAX_LIVE_SOCKETS_PER_CONNECTION) {
      this.metrics.connectionsRefused.inc({ limit: 'live-sockets-per-connection' });
      this.refusals.refused('live-sockets-per-connection', this.addressOf(socket));
      throw new LiveRefusal(TOO_MANY_SOCKETS_MESSAGE);
    }
    held.add(socket.id);
    socket.once('disconnect', () => held.delete(socket.id));
  }

  /**
   * The handshake as a request of its peer's address (taken when the handshake came: the request's own
   * socket may be gone by now, a long-polling one reused) and its headers, for the X-Forwarded-* reading.
   */
  private handshakeRequest(socket: ViewerSocket): IncomingMessage {
    return { socket: { remoteAddress: socket.handshake.address }, headers: socket.handshake.headers } as unknown as IncomingMessage;
  }

  /** The viewer's address as the per-address limit counts it: its socket's, or behind trusted proxies the forwarded one, as for HTTP (IPv6 as its /64). */
  private addressOf(socket: ViewerSocket): string {
    return clientIpOf(this.handshakeRequest(socket), this.config.server.proxyTrust);
  }

  /** The base of the links a viewer is sent, as an HTTP answer's (requestBaseUrl): its Host, when admitted. */
  private baseUrlOf(socket: ViewerSocket): string {
    const proto = forwardedProtoOf(this.handshakeRequest(socket), this.config.server.proxyTrust) || (socket.handshake.secure ? 'https' : 'http');
    return requestBaseUrl(this.config, proto, socket.handshake.headers.host, socket.request?.socket?.localPort);
  }

  async handleConnection(socket: ViewerSocket): Promise<void> {
    const { campaignId } = socket.data;
    if (!campaignId) return;
    if (socket.data.operatorUntil !== undefined) {
      disconnectAt(socket, socket.data.operatorUntil);
      this.operators.add(socket);
      socket.once('disconnect', () => this.operators.delete(socket));
    }
    // Resync requests are counted as they arrive (mayResync), before Nest's message pipeline: a burst of
    // 2,000 in one read was otherwise dispatched through it whole, even the requests after the socket had
    // been dropped for them, and held the event loop 55–80 ms. An ignored one goes no further.
    socket.use(([event], next) => {
      if (event !== 'resync' || this.mayResync(socket)) next();
    });
    // Joined before the snapshot is asked for, so that it misses nothing (a shared snapshot too: see
    // SharedSnapshots); the room's events wait for it.
    this.notifier.awaitSnapshot(socket);
    let seq: number | null = null;
    let joined: (seq: number | null) => void = () => undefined;
    socket.data.joined = new Promise((resolve) => (joined = resolve));
    try {
      // An operator's console also hears its customer's operator events (import job progress).
      await socket.join(socket.data.counted ? roomOf(campaignId) : [roomOf(campaignId), operatorRoomOf(socket.data.customerId)]);
      if (socket.data.counted) this.counter.joined(campaignId);
      seq = await this.sendSnapshot(socket);
    } finally {
      this.notifier.snapshotSent(socket, seq);
      joined(seq);
    }
    if (seq !== null) this.notifier.joined(campaignId, seq);
    // Without its snapshot a viewer cannot apply events: let it come back (socket.io clients retry).
    else if (socket.connected) socket.disconnect(true);
  }

  onModuleDestroy(): void {
    clearInterval(this.recheckTimer);
  }

  /**
   * Disconnects the operators' consoles whose token the REST API would refuse now though it did not at
   * their admission: its key was retired (rotate-secret), or the customer is gone. An expiry is disconnectAt's.
   */
  async recheckOperators(): Promise<void> {
    if (this.rechecking) return;
    this.rechecking = true;
    try {
      for (const socket of [...this.operators]) {
        if (!socket.connected) continue;
        const auth = (socket.handshake.auth ?? {}) as Record<string, unknown>;
        const accessKey = handshakeKey('accessKey', auth, socket.handshake.query) ?? '';
        let valid = true;
        try {
          valid = await this.source.operatorTokenValid(accessKey, text(auth.token, 8192) ?? '');
        } catch (err) {
          this.logger.warn(`an operator's token could not be checked again: ${err instanceof Error ? err.message : String(err)}`);
        }
        if (!valid && socket.connected) {
          this.logger.log(
            `an operator's console of campaign ${socket.data.campaignId} disconnected: its token is no longer valid (its key was retired, or the customer removed)`,
          );
          socket.disconnect(true);
        }
      }
    } finally {
      this.rechecking = false;
    }
  }

  handleDisconnect(socket: ViewerSocket): void {
    if (socket.data?.campaignId && socket.data.counted) this.counter.left(socket.data.campaignId);
  }

  /** A resync request let through by mayResync (see handleConnection), which marked the socket busy. */
  @SubscribeMessage('resync')
  async resync(@ConnectedSocket() socket: ViewerSocket, @MessageBody() body: unknown): Promise<void> {
    const { campaignId } = socket.data;
    const state = socket.data.resync;
    try {
      if (!campaignId) return;
      // A client sends its resync as it connects (docs: after a reconnect), while the join snapshot is
      // being read: answered first, its replay would come before the snapshot (events newer than it, then
      // the snapshot, then the same events again from the room). It is answered after the snapshot.
      if ((await socket.data.joined) === null || !socket.connected) return;
      const sinceSeq = sinceSeqOf(body);
      const lastSeq = (await this.source.lastSeqs([campaignId])).get(campaignId);
      if (lastSeq === undefined) {
        socket.disconnect(true);
        return;
      }
      // A malformed sinceSeq, or one ahead of the campaign (a client that lost track), gets a snapshot:
      // that is the one answer that brings such a client back in step.
      const valid = sinceSeq !== null && sinceSeq <= lastSeq;
      const missed = valid ? await this.source.eventsSince(campaignId, sinceSeq, lastSeq, RESYNC_MAX_REPLAY_BYTES) : null;
      if (!missed) {
        const wait = state.snapshotAt + SNAPSHOT_RESYNC_INTERVAL_MS - Date.now();
        if (wait > 0) {
          await new Promise((resolve) => setTimeout(resolve, wait));
          if (!socket.connected) return;
        }
        // Not one shared since before lastSeq was read: the client asked because it lacks those events.
        await this.sendSnapshot(socket, lastSeq);
        return;
      }
      for (const event of missed) if (!this.notifier.sendTo(socket, event.type, event.payload)) break;
    } catch (err) {
      this.logger.warn(`resync for campaign ${campaignId} failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      state.busy = false;
    }
  }

  /**
   * One resync at a time per socket, at most RESYNC_BURST in a row, refilled one per RESYNC_REFILL_MS.
   * One let through marks the socket busy until its answer has been sent (resync's `finally`).
   */
  private mayResync(socket: ViewerSocket): boolean {
    if (!socket.connected) return false; // dropped already: frames it sent before are still being read
    const state = socket.data.resync;
    const now = Date.now();
    const refill = Math.floor((now - state.at) / RESYNC_REFILL_MS);
    if (refill > 0) {
      state.tokens = Math.min(RESYNC_BURST, state.tokens + refill);
      state.at += refill * RESYNC_REFILL_MS;
    }
    if (!state.busy && state.tokens > 0) {
      state.tokens -= 1;
      state.ignored = 0;
      state.busy = true;
      return true;
    }
    state.ignored += 1;
    if (state.ignored >= RESYNC_ABUSE) {
      this.logger.warn(`disconnecting a viewer of campaign ${socket.data.campaignId} that keeps asking for resync`);
      socket.disconnect(true);
    }
    return false;
  }

  /**
   * Sends a fresh snapshot to every socket of the campaign's room on this node (it missed events the log no
   * longer holds): one read after now, encoded once, shared by all of them.
   */
  private async refreshRoom(campaignId: number): Promise<void> {
    // A snapshot read before now may lack what this node missed: none of those is shared from here on.
    this.snapshots.changed(campaignId);
    const ids = this.namespace?.adapter.rooms.get(roomOf(campaignId));
    const sockets = [...(ids ?? [])].map((id) => this.namespace?.sockets.get(id) as ViewerSocket | undefined).filter((socket) => socket !== undefined);
    await Promise.all(sockets.map((socket) => this.sendSnapshot(socket)));
  }

  /**
   * Sends the campaign's snapshot; returns its seq (null if none was sent). The snapshot is shared (see
   * SharedSnapshots): the viewers that join together, or within SNAPSHOT_REUSE_MS while the campaign has no
   * event, cost one read and one encoding, and each of them one write of the same bytes.
   */
  private async sendSnapshot(socket: ViewerSocket, atLeastSeq = 0): Promise<number | null> {
    const { campaignId, currency, baseUrl } = socket.data;
    try {
      const snapshot = await this.snapshots.get(campaignId, currency, baseUrl, atLeastSeq);
      if (!snapshot) {
        socket.disconnect(true);
        return null;
      }
      // Many viewers joining together get one snapshot and one write each of its bytes (a few MB for a large
      // campaign): past a slice of the event loop, the writes go on in later turns, so that requests and
      // other viewers' events are served between them (their events wait for the snapshot meanwhile).
      if (this.snapshotWrites.due()) {
        await this.snapshotWrites.yield();
        if (!socket.connected) return null;
      }
      if (!this.notifier.sendEncodedTo(socket, snapshot.event)) return null;
      socket.data.resync.snapshotAt = Date.now();
      return snapshot.seq;
    } catch (err) {
      this.logger.warn(`snapshot for campaign ${campaignId} failed: ${err instanceof Error ? err.message : String(err)}`);
      return null;
    }
  }

  /** Reads the campaign's snapshot and encodes it once, for every viewer that will share it. */
  private async readSnapshot(campaignId: number, currency: string, baseUrl: string): Promise<SharedSnapshot | null> {
    const snapshot = await this.source.snapshot(campaignId, currency, baseUrl, await this.counter.count(campaignId));
    if (!snapshot) return null;
    const event = this.notifier.encode('campaign.snapshot', snapshot);
    if (!event) throw new Error('the live channel is not attached');
    return { seq: snapshot.seq, event };
  }
}
