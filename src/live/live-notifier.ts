import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Namespace, Socket } from 'socket.io';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics.service';
import { LiveEvent, LiveEventMap, LiveEventType, OperatorEventMap, operatorRoomOf, roomOf } from './live-events';
import { EncodedEvent, FanoutCounts, LiveFanout } from './live-fanout';
import { LIVE_SOURCE, LiveSource } from './live-source';

/** The server-side event (Redis adapter, `serverSideEmit`) that carries committed events to the other nodes. */
export const CLUSTER_EVENTS = 'livegoods:events';

/** How long an event that arrived ahead of its turn waits for the missing ones before they are read from the log. */
export const GAP_WAIT_MS = 250;
/** How often a node of a cluster compares what it delivered with the campaigns' seq in the database. */
export const SWEEP_MS = 2000;
/** Events held back per campaign while waiting for a gap to fill; past it they go out as they are. */
const MAX_AHEAD = 1000;

/** What a delivery writes, per campaign: its events, in the order they go out. */
type Outbox = Map<number, LiveEvent[]>;

/** What this node has written to one campaign's room. */
interface RoomFeed {
  /** seq of the last event written to the room (or of the snapshot its first viewer got). */
  last: number;
  /** Events that arrived ahead of their turn, by seq. */
  ahead: Map<number, LiveEvent>;
  /** A read of missed events from the log is scheduled or running. */
  filling: boolean;
  /** The room was told the campaign is gone (campaign.status NOT_EXIST written). */
  gone?: boolean;
}

/**
 * The one way services reach viewers: call publish() with the events a transaction recorded, after it
 * committed. Each node writes to its own viewers (LiveFanout); with REDIS_URL the events first go to the
 * other nodes through the Redis adapter (`serverSideEmit`), and each of them writes to its viewers in turn.
 *
 * Every node writes each campaign's events to its room in seq order, exactly once: a duplicate is dropped,
 * an event ahead of its turn waits (GAP_WAIT_MS) for the missing ones, which are then read from the event
 * log. With Redis, a node also compares every SWEEP_MS (and whenever its Redis link comes back) the
 * campaigns' seq in the database with what it has written, and reads what it missed from the log. So a
 * Redis outage never loses an event: the viewers of a node cut off from Redis catch up, gap-free, once it
 * is back (or, when the log no longer holds what they missed, get a fresh snapshot).
 */
/** The campaign's last event: it was deleted (`campaign.status` NOT_EXIST). */
const isGone = (event: LiveEvent): boolean => event.type === 'campaign.status' && event.payload.campaignStatus === 'NOT_EXIST';

@Injectable()
export class LiveNotifier implements OnModuleDestroy {
  private readonly logger = new Logger(LiveNotifier.name);
  private namespace: Namespace | null = null;
  private fanout: LiveFanout | null = null;
  private readonly feeds = new Map<number, RoomFeed>();
  private sweepTimer: NodeJS.Timeout | null = null;
  /**
   * What waits for this turn's check phase (see flush): the events published on this node (every request
   * answered in the turn), and those other nodes sent (every Redis message read in it).
   */
  private published: LiveEvent[] = [];
  private received: LiveEvent[] = [];
  private flushing = false;
  /** Sends a fresh snapshot to every viewer of a campaign on this node (set by the gateway). */
  private refreshRoom: (campaignId: number) => Promise<void> = () => Promise.resolve();
  /**
   * Told of every event of a campaign that is published on this node or comes from another one, when it
   * arrives and again right before it is handed to the room's viewers here (set by the gateway: it drops
   * the campaign's shared snapshot, which may not be older than an event its viewers were sent).
   */
  private campaignChanged: (campaignId: number) => void = () => undefined;

  constructor(
    private readonly config: AppConfig,
    @Inject(LIVE_SOURCE) private readonly source: LiveSource,
    private readonly metrics: Metrics,
  ) {}

  attach(namespace: Namespace, refreshRoom: (campaignId: number) => Promise<void>, campaignChanged?: (campaignId: number) => void): void {
    this.namespace = namespace;
    this.fanout = new LiveFanout(namespace);
    this.refreshRoom = refreshRoom;
    if (campaignChanged) this.campaignChanged = campaignChanged;
    if (this.clustered) {
      namespace.on(CLUSTER_EVENTS, (events: unknown) => {
        if (!Array.isArray(events)) {
          this.logger.warn(`ignored a malformed ${CLUSTER_EVENTS} message from another node`);
          return;
        }
        for (const event of events as LiveEvent[]) {
          this.received.push(event);
          this.changed(event);
        }
        this.flushSoon();
      });
      this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
      this.sweepTimer.unref();
    }
  }

  onModuleDestroy(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }

  /**
   * Sends an operator event to the customer's operator sockets on every node (through the Redis adapter
   * when clustered). Best effort: an operator that misses one gets the next, or reads the state over HTTP.
   */
  toOperators<T extends keyof OperatorEventMap>(customerId: number, type: T, payload: OperatorEventMap[T]): void {
    if (!this.namespace) return;
    try {
      this.namespace.to(operatorRoomOf(customerId)).emit(type, payload);
    } catch (err) {
      this.logger.warn(`${type} for customer ${customerId} not sent: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private get clustered(): boolean {
    return Boolean(this.config.redis.url);
  }

  /**
   * Sends on the next turn of the event loop, so that the operator's HTTP answer is not held up by a
   * fan-out to thousands of sockets. Everything published until then goes out together, in the order it
   * was published (so events keep their seq order): one Redis message to the other nodes, and on each
   * node one write per viewer for each room's events (LiveFanout.toRoom). A burst of changes (many
   * orders on a hot item, a request with a status, a notice and a chat line) thus costs a fan-out about as
   * much as one change, instead of one loop over every viewer per event.
   */
  publish(events: LiveEvent[]): void {
    if (!this.namespace || !events.length) return;
    // Stamped after the commit (here, unless the writer did it at the commit): the delivery-latency
    // histogram measures from then to the write.
    const publishedAt = Date.now();
    for (const event of events) event.publishedAt ??= publishedAt;
    this.metrics.liveEventsPublished.inc(events.length);
    for (const event of events) {
      this.published.push(event);
      this.changed(event);
    }
    this.flushSoon();
  }

  /**
   * A change of the campaign committed on this node, told to viewers or not (notify=false, a stock change
   * they do not see): a snapshot shared before it no longer holds the campaign as it is (SharedSnapshots).
   * Another node learns of a change only through its events, so one without any shows in that node's
   * shared snapshots when they expire (SNAPSHOT_REUSE_MS).
   */
  campaignStored(campaignId: number): void {
    this.campaignChanged(campaignId);
  }

  /** Tells the gateway that the event's campaign changed (see campaignChanged); a malformed event from another node is skipped. */
  private changed(event: LiveEvent): void {
    if (typeof event?.campaignId === 'number') this.campaignChanged(event.campaignId);
  }

  private flushSoon(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(this.flush);
  }

  /** Hands this node's events to the other nodes, then writes everything waiting to this node's viewers. */
  private readonly flush = (): void => {
    const published = this.published;
    const received = this.received;
    this.published = [];
    this.received = [];
    this.flushing = false;
    // The adapter's publisher never throws or rejects (see LiveIoAdapter): an event another node misses
    // while Redis is away reaches its viewers through that node's sweep.
    if (published.length && this.clustered) this.namespace?.serverSideEmit(CLUSTER_EVENTS, published);
    this.deliver(received.length ? received.concat(published) : published);
  };

  /**
   * A viewer of the campaign got a snapshot at `seq`. The first viewer of a room on this node sets where
   * its feed starts; later ones may get events they already have (the protocol says to skip those).
   */
  joined(campaignId: number, seq: number): void {
    if (!this.feeds.has(campaignId)) this.feeds.set(campaignId, { last: seq, ahead: new Map(), filling: false });
  }

  /** Room events for this new viewer wait for its snapshot (see LiveFanout.holdUntilSnapshot). */
  awaitSnapshot(socket: Socket): void {
    this.fanout?.holdUntilSnapshot(socket);
  }

  /** The new viewer's snapshot went out at `seq` (null: it did not): the events held for it follow. */
  snapshotSent(socket: Socket, seq: number | null): void {
    this.fanout?.snapshotSent(socket, seq);
  }

  /** Sends one event to one viewer of this node (snapshot, resync), through the same writer as room events. */
  sendTo<K extends LiveEventType>(socket: Socket, type: K, payload: LiveEventMap[K]): boolean {
    return this.fanout?.toSocket(socket, type, payload) ?? false;
  }

  /** The event encoded once, to write to many viewers with sendEncodedTo (null before the gateway is attached). */
  encode<K extends LiveEventType>(type: K, payload: LiveEventMap[K]): EncodedEvent | null {
    return this.fanout?.encode(type, payload) ?? null;
  }

  /** Writes an event encoded beforehand (encode) to one viewer of this node: the same writer, checks and counts as sendTo. */
  sendEncodedTo(socket: Socket, event: EncodedEvent): boolean {
    return this.fanout?.writeOne(socket, event) ?? false;
  }

  /** Writes so far on this node: straight to a WebSocket, or through socket.io's queue; slow viewers dropped. */
  get writes(): FanoutCounts {
    return { ...(this.fanout?.counts ?? { direct: 0, engine: 0, slowDisconnects: 0 }) };
  }

  /** Disconnects every viewer of a campaign (it was deleted), on all nodes, or (`onlyHere`) on this one. */
  disconnectCampaign(campaignId: number, onlyHere = false): void {
    const room = this.namespace?.in(roomOf(campaignId));
    (onlyHere ? room?.local : room)?.disconnectSockets(true);
  }

  /** Checks now (not at the next sweep) whether this node missed events, e.g. when its Redis link is back. */
  catchUp(): void {
    if (this.namespace) this.sweep();
  }

  private deliver(events: LiveEvent[]): void {
    this.writing((outbox) => {
      for (const event of events) this.accept(event, outbox);
    });
  }

  /**
   * Runs `work` with an outbox in which it notes what it writes to each room (write() below), then sends
   * each room its events together, in the order they were noted.
   */
  private writing(work: (outbox: Outbox) => void): void {
    const outbox: Outbox = new Map();
    try {
      work(outbox);
    } finally {
      // Even when `work` failed part way: what it noted as written (feed.last moved past it) goes out.
      this.send(outbox);
    }
  }

  private send(outbox: Outbox): void {
    for (const [id, events] of outbox) {
      // Before the room's viewers are handed these events: a snapshot shared from now on is read after them.
      this.campaignChanged(id);
      this.metrics.liveEventsDelivered.inc(events.length);
      // Timed once the last viewer of the room was written to (a large room takes several turns).
      this.fanout?.toRoom(roomOf(id), events, () => {
        const now = Date.now();
        // Events read back from the log (gap fill, catch-up) carry no stamp: they are counted, not timed.
        for (const event of events) {
          if (typeof event.publishedAt === 'number') this.metrics.liveDeliveryLatency.observe(Math.max(0, now - event.publishedAt) / 1000);
        }
      });
    }
  }

  private hasViewers(campaignId: number): boolean {
    return (this.namespace?.adapter.rooms.get(roomOf(campaignId))?.size ?? 0) > 0;
  }

  private accept(event: LiveEvent, outbox: Outbox): void {
    const id = event.campaignId;
    if (!this.hasViewers(id)) {
      this.feeds.delete(id);
      return;
    }
    let feed = this.feeds.get(id);
    if (!feed) {
      feed = { last: event.seq - 1, ahead: new Map(), filling: false };
      this.feeds.set(id, feed);
    }
    if (event.seq <= feed.last) return;
    feed.ahead.set(event.seq, event);
    if (isGone(event)) {
      // The campaign's last event: the events missing before it can no longer be read (the log went with
      // the campaign), so what is held goes out in order, past the gap, and this one after it, now.
      this.writeHeld(id, feed, outbox);
      return;
    }
    this.drain(id, feed, outbox);
    if (!feed.ahead.size) return;
    if (feed.ahead.size > MAX_AHEAD) {
      // Too far behind to hold on: send what is here in order; viewers see the gap and resync themselves.
      this.logger.warn(`campaign ${id}: ${feed.ahead.size} events waiting for a gap to fill; sending them as they are`);
      this.writeHeld(id, feed, outbox);
      return;
    }
    this.scheduleFill(id, feed, GAP_WAIT_MS);
  }

  /** Writes every event held for the campaign, in seq order, past any gap. */
  private writeHeld(id: number, feed: RoomFeed, outbox: Outbox): void {
    for (const seq of [...feed.ahead.keys()].sort((a, b) => a - b)) this.write(id, feed, feed.ahead.get(seq) as LiveEvent, outbox);
    feed.ahead.clear();
  }

  /** Writes the events that are next in line. */
  private drain(id: number, feed: RoomFeed, outbox: Outbox): void {
    for (let next = feed.ahead.get(feed.last + 1); next; next = feed.ahead.get(feed.last + 1)) {
      feed.ahead.delete(next.seq);
      this.write(id, feed, next, outbox);
    }
  }

  /** Notes the event as written to the room: it goes out when the writing() that gave `outbox` ends. */
  private write(id: number, feed: RoomFeed, event: LiveEvent, outbox: Outbox): void {
    feed.last = Math.max(feed.last, event.seq);
    if (isGone(event)) feed.gone = true;
    const events = outbox.get(id);
    if (events) events.push(event);
    else outbox.set(id, [event]);
  }

  private scheduleFill(id: number, feed: RoomFeed, delayMs: number): void {
    if (feed.filling) return;
    feed.filling = true;
    setTimeout(() => void this.fill(id, feed), delayMs).unref();
  }

  /** Reads what this node missed of a campaign from the event log and writes it, in order. */
  private async fill(id: number, feed: RoomFeed): Promise<void> {
    let retry = false;
    try {
      if (this.feeds.get(id) !== feed || !this.hasViewers(id)) {
        if (this.feeds.get(id) === feed) this.feeds.delete(id);
        return;
      }
      const lastSeq = (await this.source.lastSeqs([id])).get(id);
      if (lastSeq === undefined) {
        // Deleted. The deleting node tells every viewer and disconnects them, through Redis; when that did
        // not reach this node (Redis was away), its viewers are told here, and disconnected, as there.
        if (!feed.gone) this.tellGone(id, feed);
        this.feeds.delete(id);
        return;
      }
      if (lastSeq <= feed.last) {
        this.writing((outbox) => this.drain(id, feed, outbox));
        return;
      }
      const from = feed.last;
      const missed = await this.source.eventsSince(id, from, lastSeq);
      if (missed) {
        for (const event of missed) if (event.seq > feed.last) feed.ahead.set(event.seq, event);
        this.writing((outbox) => this.drain(id, feed, outbox));
      } else {
        // Older than the log keeps: a fresh snapshot for everyone here, then carry on from its seq.
        this.logger.warn(`campaign ${id}: events ${from + 1}..${lastSeq} are no longer in the log; sending viewers a snapshot`);
        feed.last = lastSeq;
        for (const seq of [...feed.ahead.keys()]) if (seq <= lastSeq) feed.ahead.delete(seq);
        await this.refreshRoom(id);
        this.writing((outbox) => this.drain(id, feed, outbox));
      }
    } catch (err) {
      retry = true;
      this.logger.warn(`campaign ${id}: reading missed events failed (${err instanceof Error ? err.message : String(err)}); trying again`);
    } finally {
      feed.filling = false;
      if (this.feeds.get(id) === feed && (retry || feed.ahead.size)) this.scheduleFill(id, feed, retry ? SWEEP_MS : GAP_WAIT_MS);
    }
  }

  /**
   * The last event of a deleted campaign for this node's viewers (`campaign.status` NOT_EXIST, as the
   * deleting node sends it; its start and end are no longer known here), then they are disconnected.
   */
  private tellGone(id: number, feed: RoomFeed): void {
    this.logger.warn(`campaign ${id} was deleted without this node hearing of it (was Redis away?); telling its viewers here`);
    this.writing((outbox) => {
      // What it held first (the gap before it can no longer be filled), then the campaign's end after it.
      this.writeHeld(id, feed, outbox);
      const seq = feed.last + 1;
      this.write(
        id,
        feed,
        { campaignId: id, seq, type: 'campaign.status', payload: { seq, campaignStatus: 'NOT_EXIST', startedAt: null, endedAt: null } },
        outbox,
      );
    });
    // After the event has gone out, as the deleting node does it.
    setTimeout(() => this.disconnectCampaign(id, true), 200).unref();
  }

  /** Compares the seq of every campaign with viewers here against the database; fills what is behind. */
  private sweep(): void {
    for (const id of [...this.feeds.keys()]) if (!this.hasViewers(id)) this.feeds.delete(id);
    const ids = [...this.feeds.keys()];
    if (!ids.length) return;
    this.source.lastSeqs(ids).then(
      (seqs) => {
        for (const id of ids) {
          const feed = this.feeds.get(id);
          const lastSeq = seqs.get(id);
          if (feed && (lastSeq === undefined || lastSeq > feed.last)) this.scheduleFill(id, feed, GAP_WAIT_MS);
        }
      },
      (err: unknown) => this.logger.warn(`live sweep: reading campaign seqs failed: ${err instanceof Error ? err.message : String(err)}`),
    );
  }
}
