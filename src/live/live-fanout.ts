import type { Namespace, Socket } from 'socket.io';
import { PacketType } from 'socket.io-parser';
import type { LiveEventMap, LiveEventType } from './live-events';

/**
 * The parts of engine.io's socket, its WebSocket transport and ws's sender that a direct write relies on.
 * They are not in the typings (private), so each is checked at run time: when one is missing (another
 * engine.io or ws version, a polling or WebTransport viewer, a busy socket) the event goes through
 * socket.io's own path. engine.io itself writes pre-encoded frames with `_sender.sendFrame` (its
 * broadcasts), so that method is part of what the pinned socket.io relies on too.
 */
interface EngineSocketInternals {
  readyState?: string;
  upgrading?: boolean;
  writeBuffer?: unknown[];
  transport?: { name?: string; writable?: boolean; perMessageDeflate?: unknown; socket?: WebSocketLike };
}

interface WebSocketLike {
  readyState: number;
  /** Bytes handed to this WebSocket that the kernel has not taken yet (ws). */
  bufferedAmount?: number;
  _sender?: SenderLike;
}

interface EventEmitterLike {
  on?: (event: string, listener: (room: string) => void) => unknown;
  off?: (event: string, listener: (room: string) => void) => unknown;
}

type EngineTransport = NonNullable<EngineSocketInternals['transport']>;
type DirectSender = SenderLike & { sendFrame: (list: Buffer[]) => void };

/**
 * A room's viewers on this node, in parallel arrays: for each socket its engine.io connection and, when it
 * was last seen on a WebSocket transport that frames may be written to directly, that transport, its
 * WebSocket and ws's sender (fixed for the transport's life). Reading these arrays instead of following
 * socket → conn → transport → WebSocket → sender for every viewer lets the processor fetch the objects of
 * many viewers at once; each write still checks the live state of each one.
 */
class RoomViewers {
  readonly sockets: Socket[] = [];
  readonly conns: EngineSocketInternals[] = [];
  readonly transports: Array<EngineTransport | null> = [];
  readonly wss: Array<WebSocketLike | null> = [];
  readonly senders: Array<DirectSender | null> = [];

  constructor(ids: Set<string>, byId: Map<string, Socket>) {
    for (const id of ids) {
      const socket = byId.get(id);
      if (!socket) continue;
      this.sockets.push(socket);
      this.conns.push(socket.conn as unknown as EngineSocketInternals);
      this.transports.push(null);
      this.wss.push(null);
      this.senders.push(null);
      this.remember(this.sockets.length - 1, socket.conn as unknown as EngineSocketInternals);
    }
  }

  /** Notes the viewer's current transport when it is a WebSocket that frames may be written to directly. */
  remember(i: number, conn: EngineSocketInternals): void {
    const transport = conn.transport;
    const parts = directParts(transport);
    this.transports[i] = parts ? (transport as EngineTransport) : null;
    this.wss[i] = parts?.ws ?? null;
    this.senders[i] = parts?.sender ?? null;
  }
}

/** ws's Sender: `sendFrame(list)` writes frames built beforehand to the TCP socket, in that order. */
interface SenderLike {
  /** 0 (DEFAULT) when nothing is being compressed or read from a Blob, so a frame written now keeps the order. */
  _state?: number;
  /** Messages waiting for the one in progress (compression, Blob): a frame written now would overtake them. */
  _queue?: unknown[];
  sendFrame?: (list: Buffer[]) => void;
}

const WS_OPEN = 1;

/**
 * The most a viewer may have waiting to be sent to it before it is disconnected as a slow consumer: bytes
 * in its WebSocket's buffer or in engine.io's queue (long polling, upgrades, busy sockets), or packets in
 * that queue. A
 * snapshot of a large campaign fits; a viewer that stopped reading (or floods resync requests) never
 * makes the server hold more than this plus one message.
 */
export const MAX_BUFFERED_BYTES = 2 * 1024 * 1024;
export const MAX_QUEUED_PACKETS = 1000;
/**
 * The most room events held for a viewer that joined but has not had its snapshot yet (that takes a few
 * milliseconds); past it the viewer is disconnected, and reconnects.
 */
export const MAX_HELD_EVENTS = 1000;

/** An event for a room, as the notifier hands it over. */
export interface RoomEvent {
  type: LiveEventType;
  payload: unknown;
}

/**
 * The most bytes of frames written to a viewer in one go when several events go to a room together: a
 * burst of small events shares one send, and a run of large ones (goods lists) is still cut into sends of
 * about this size.
 */
export const MAX_COMBINED_BYTES = 64 * 1024;

/**
 * The longest one turn of the event loop writes to viewers before it lets other work run (HTTP requests of
 * every customer, other rooms' events): a room of 10,000 viewers takes about 90 ms to write on a 2-core VM,
 * which would otherwise hold every other request that long. The rest of the room is written in the next
 * turns, events keeping their order for every viewer.
 */
export const FANOUT_SLICE_MS = 20;
/** How many viewers are written between two looks at the clock. */
const VIEWERS_BETWEEN_CLOCK_READS = 32;

/** A room's events on their way to its viewers: where the writing stands, and what to call once it is done. */
interface Delivery {
  room: string;
  viewers: RoomViewers;
  events: RoomEvent[];
  /** The events encoded and grouped, once the writing has started (until then, more may join them). */
  groups: EncodedGroup[] | null;
  /** The group being written, and the next viewer to write it to. */
  group: number;
  next: number;
  /** Viewers the current group was written to so far. */
  reached: number;
  done: Array<(reached: number) => void>;
}

/** Events that go to each viewer together: their frames in one Buffer (null when one is not a single text frame). */
interface EncodedGroup {
  events: EncodedEvent[];
  frame: Buffer[] | null;
}

/** An event as it goes to every viewer: encoded once (LiveFanout.encode), then written as it is to each. */
export interface EncodedEvent {
  type: LiveEventType;
  payload: unknown;
  /**
   * The whole WebSocket text frame (header, then the Engine.IO message "4" carrying the Socket.IO event
   * packet) as the one-element list `sendFrame` takes; null when the packet is not one text frame.
   */
  frame: Buffer[] | null;
}

/** How many event writes went straight to a WebSocket and how many through socket.io's path; viewers dropped as slow. */
export interface FanoutCounts {
  direct: number;
  engine: number;
  slowDisconnects: number;
}

/** What write() did: nothing (the socket is gone or was dropped as slow), a direct frame, socket.io's path. */
const NOT_WRITTEN = 0;
const DIRECT = 1;
const ENGINE = 2;
type Written = typeof NOT_WRITTEN | typeof DIRECT | typeof ENGINE;

/**
 * Writes one event to the viewers of a room on this node. The event is encoded once (socket.io's own
 * encoder, so the bytes are what `socket.emit` would send) into one complete WebSocket frame; every
 * WebSocket viewer whose engine.io socket and ws sender have nothing queued gets that same Buffer in one
 * TCP write (`sendFrame`, no per-viewer header, options or copy). Any other viewer (long polling, an
 * upgrade in progress, packets still queued) gets it through `socket.emit`, which queues behind what is
 * pending, so every viewer still receives its events in order.
 *
 * Why not `namespace.to(room).emit()`: engine.io's per-packet bookkeeping (packet objects, flush and
 * drain events, a write callback per socket) costs more CPU per viewer than the send itself; see
 * docs/decisions/0004-direct-websocket-writer.md and `npm run bench:fanout` for the figures.
 */
export class LiveFanout {
  readonly counts: FanoutCounts = { direct: 0, engine: 0, slowDisconnects: 0 };
  /** Viewers in a room that wait for their snapshot, with the room's events meanwhile (see holdUntilSnapshot). */
  // A Map, not a WeakMap: its size lets a room event skip the look-up per viewer when nobody waits
  // (the usual case). Every entry ends in snapshotSent() or when it overflows.
  private readonly awaitingSnapshot = new Map<Socket, EncodedEvent[]>();
  /** Each room's viewers as the fan-out loop reads them; an entry is dropped whenever the room changes. */
  private readonly rooms = new Map<string, RoomViewers>();
  private watched: Namespace['adapter'] | null = null;
  private watching = false;
  /** Deliveries not written to all their viewers yet, in the order they were handed over (the first is being written). */
  private readonly deliveries: Delivery[] = [];
  /** Per room, its delivery that waits and has not started yet: more events for the room join it. */
  private readonly notStarted = new Map<string, Delivery>();
  private writingDeliveries = false;

  constructor(
    private readonly namespace: Namespace,
    /** The clock that cuts deliveries into slices (FANOUT_SLICE_MS), in ms. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * From now until snapshotSent(), the room events for this socket are held instead of written: a viewer
   * joins its room before its snapshot is read (so the snapshot misses nothing), and must still get the
   * snapshot first, then only what follows it.
   */
  holdUntilSnapshot(socket: Socket): void {
    this.awaitingSnapshot.set(socket, []);
  }

  /** The socket's snapshot went out at `seq` (null: none did): writes the held events that come after it, in order. */
  snapshotSent(socket: Socket, seq: number | null): void {
    const held = this.awaitingSnapshot.get(socket);
    this.awaitingSnapshot.delete(socket);
    if (!held || seq === null) return;
    // Held as encoded for the room: written as they are, not encoded again for each waiting viewer.
    for (const event of held) {
      if ((event.payload as { seq: number }).seq > seq && !this.writeOne(socket, event)) return;
    }
  }

  /**
   * Sends these events, in this order, to every socket of `room` on this node, then calls `done` with how
   * many sockets they were written to. A viewer that may be written to directly gets all of them in one TCP
   * write (their frames one after the other, in groups of at most MAX_COMBINED_BYTES): a burst of events
   * (orders on a hot item, an operator's status and notice, events that came together over Redis) costs
   * each viewer one send, not one per event. Any other viewer gets them one by one, as toSocket would.
   *
   * The writing starts at once, and a room too large to write within FANOUT_SLICE_MS goes on in the next
   * turns of the event loop, so that the node's other work runs in between. Deliveries are written in the
   * order they were handed over, each to the viewers its room had when it was handed over: every viewer
   * gets every room's events in order. (One who joined meanwhile has them in its snapshot.)
   */
  toRoom(room: string, events: ReadonlyArray<RoomEvent>, done?: (reached: number) => void): void {
    const viewers = events.length ? this.viewersOf(room) : null;
    if (!viewers) {
      done?.(0);
      return;
    }
    // Events for a room whose delivery waits behind others and has not started join it: while a large
    // room is being written, what comes for it meanwhile goes out in one more pass over its viewers, not
    // one per turn, and the queue holds at most two deliveries per room.
    const waiting = this.notStarted.get(room);
    if (waiting) {
      // To the room as it is now: one who joined since the first of these events may lack the later ones.
      waiting.viewers = viewers;
      // One by one: a large batch spread into push's arguments could exceed the engine's argument limit.
      for (const event of events) waiting.events.push(event);
      if (done) waiting.done.push(done);
      return;
    }
    const delivery: Delivery = { room, viewers, events: [...events], groups: null, group: 0, next: 0, reached: 0, done: done ? [done] : [] };
    this.deliveries.push(delivery);
    this.notStarted.set(room, delivery);
    if (!this.writingDeliveries && this.deliveries.length === 1) this.writeDeliveries();
  }

  /** Deliveries not written to all their viewers yet (the rest of a room too large for one slice, and what came after it). */
  get pending(): number {
    return this.deliveries.length;
  }

  /** Writes the deliveries waiting, in order, for up to FANOUT_SLICE_MS; what is left goes on in the next turn. */
  private readonly writeDeliveries = (): void => {
    this.writingDeliveries = true;
    let more = false;
    try {
      const until = this.now() + FANOUT_SLICE_MS;
      while (this.deliveries.length) {
        const delivery = this.deliveries[0];
        if (!this.writeSome(delivery, until)) {
          more = true;
          return;
        }
        this.deliveries.shift();
        for (const done of delivery.done) done(delivery.reached);
      }
    } catch (err) {
      // A delivery whose writing threw is dropped (it would throw again), and those behind it go on. It
      // had started (writeSome lets go of a delivery's notStarted entry before anything that can throw).
      this.deliveries.shift();
      more = this.deliveries.length > 0;
      throw err;
    } finally {
      this.writingDeliveries = false;
      if (more) setImmediate(this.writeDeliveries);
    }
  };

  /** Writes the delivery's groups on from where it stands; false when the slice ended first. */
  private writeSome(delivery: Delivery, until: number): boolean {
    if (!delivery.groups) {
      // It starts: from here on, events for its room wait for the next delivery (a room has one not started).
      this.notStarted.delete(delivery.room);
      delivery.groups = this.groups(delivery.events);
    }
    const { viewers, groups } = delivery;
    const count = viewers.sockets.length;
    while (delivery.group < groups.length) {
      while (delivery.next < count) {
        const to = Math.min(count, delivery.next + VIEWERS_BETWEEN_CLOCK_READS);
        delivery.reached += this.groupToViewers(viewers, groups[delivery.group], delivery.next, to);
        delivery.next = to;
        if (delivery.next < count && this.now() >= until) return false;
      }
      delivery.group += 1;
      if (delivery.group < groups.length) {
        delivery.next = 0;
        delivery.reached = 0;
      }
    }
    return true;
  }

  /** The events encoded once each, then cut into runs whose frames together stay within MAX_COMBINED_BYTES. */
  private groups(events: ReadonlyArray<RoomEvent>): EncodedGroup[] {
    const groups: EncodedGroup[] = [];
    let current: EncodedGroup | null = null;
    let bytes = 0;
    for (const { type, payload } of events) {
      const event = this.encode(type, payload);
      // An event that is not one text frame (none is, today) goes in a group of its own.
      const size = event.frame ? event.frame[0].length : Infinity;
      if (!current || bytes + size > MAX_COMBINED_BYTES) {
        current = { events: [], frame: null };
        groups.push(current);
        bytes = 0;
      }
      current.events.push(event);
      bytes += size;
    }
    for (const group of groups) {
      const frames = group.events.map((e) => e.frame?.[0]);
      group.frame = frames.every((f): f is Buffer => f !== undefined) ? [frames.length === 1 ? frames[0] : Buffer.concat(frames)] : null;
    }
    return groups;
  }

  /** Writes the group to the viewers from index `from` up to (not including) `to`; returns how many it reached. */
  private groupToViewers(viewers: RoomViewers, group: EncodedGroup, from: number, to: number): number {
    const { events, frame } = group;
    const count = events.length;
    const waiting = this.awaitingSnapshot.size > 0 ? this.awaitingSnapshot : null;
    const { sockets, conns, transports, wss, senders } = viewers;
    // Counted here (one per event and viewer) and added once per call, not per viewer.
    let direct = 0;
    let engine = 0;
    let reached = 0;
    for (let i = from; i < to; i += 1) {
      const socket = sockets[i];
      if (waiting) {
        const held = waiting.get(socket);
        if (held) {
          for (const event of events) {
            if (held.length < MAX_HELD_EVENTS) held.push(event);
            else {
              this.awaitingSnapshot.delete(socket);
              socket.disconnect(true);
              break;
            }
          }
          continue;
        }
      }
      // The usual case, read from the room's arrays rather than down each viewer's chain of objects: the
      // WebSocket transport remembered for this viewer is still its transport and a frame may go out now
      // (write() below makes the same checks after following the chain).
      const conn = conns[i];
      const transport = transports[i];
      const sender = senders[i];
      if (frame && transport && sender && socket.connected && writableNow(conn, transport, wss[i] as WebSocketLike, sender)) {
        if (overBuffered(wss[i])) this.dropSlow(socket);
        else {
          sender.sendFrame(frame);
          direct += count;
          reached += 1;
        }
        continue;
      }
      let any = false;
      for (const event of events) {
        const written = this.write(socket, event);
        if (written === NOT_WRITTEN) break;
        if (written === DIRECT) direct += 1;
        else engine += 1;
        any = true;
        // An upgrade that finished since the arrays were built: this viewer's next events take the short way.
        if (written === DIRECT && conn.transport !== transport) viewers.remember(i, conn);
      }
      if (any) reached += 1;
    }
    this.counts.direct += direct;
    this.counts.engine += engine;
    return reached;
  }

  /**
   * The room's viewers on this node as arrays (built from the adapter's room on first use, dropped when a
   * socket joins or leaves the room), or null when nobody is in it.
   */
  private viewersOf(room: string): RoomViewers | null {
    const adapter = this.namespace.adapter;
    if (adapter !== this.watched) this.watch(adapter);
    const cached = this.rooms.get(room);
    if (cached) return cached;
    const ids = adapter.rooms.get(room);
    if (!ids?.size) return null;
    const viewers = new RoomViewers(ids, this.namespace.sockets);
    // Only an adapter that tells of joins and leaves lets the arrays outlive this event.
    if (this.watching) this.rooms.set(room, viewers);
    return viewers;
  }

  /** Follows the adapter's joins and leaves (a new adapter, as `server.adapter()` makes, starts afresh). */
  private watch(adapter: Namespace['adapter']): void {
    const previous = this.watched;
    previous?.off?.('join-room', this.forget);
    previous?.off?.('leave-room', this.forget);
    this.rooms.clear();
    this.watched = adapter;
    const emitter = adapter as Namespace['adapter'] & EventEmitterLike;
    this.watching = typeof emitter.on === 'function';
    if (this.watching) {
      emitter.on('join-room', this.forget);
      emitter.on('leave-room', this.forget);
    }
  }

  private readonly forget = (room: string): void => {
    this.rooms.delete(room);
  };

  /**
   * Sends one event to one socket, the same way (so the code path is already warm for room events).
   * False when the socket was disconnected instead, as a slow consumer.
   */
  toSocket<K extends LiveEventType>(socket: Socket, type: K, payload: LiveEventMap[K]): boolean {
    return this.writeOne(socket, this.encode(type, payload));
  }

  /**
   * Writes an event encoded beforehand (encode()) to one socket, with the same checks and counts as any
   * other write: an event that goes to many sockets one at a time (a snapshot shared by the viewers that
   * join together) is encoded once, not once per socket. False when the socket was gone or dropped as slow.
   */
  writeOne(socket: Socket, event: EncodedEvent): boolean {
    const written = this.write(socket, event);
    if (written === DIRECT) this.counts.direct += 1;
    else if (written === ENGINE) this.counts.engine += 1;
    return written !== NOT_WRITTEN;
  }

  /** The event as socket.io would send it, encoded once: one WebSocket frame to write to any number of sockets. */
  encode(type: LiveEventType, payload: unknown): EncodedEvent {
    const encoded = this.namespace.server.encoder.encode({ type: PacketType.EVENT, nsp: this.namespace.name, data: [type, payload] });
    return { type, payload, frame: encoded.length === 1 && typeof encoded[0] === 'string' ? [textFrame(`4${encoded[0]}`)] : null };
  }

  private write(socket: Socket, event: EncodedEvent): Written {
    if (!socket.connected) return NOT_WRITTEN;
    const conn = socket.conn as unknown as EngineSocketInternals;
    if (isBacklogged(conn)) {
      this.dropSlow(socket);
      return NOT_WRITTEN;
    }
    const sender = event.frame && directSender(conn);
    if (sender) {
      sender.sendFrame(event.frame as Buffer[]);
      return DIRECT;
    }
    (socket.emit as (event: string, ...args: unknown[]) => boolean)(event.type, event.payload);
    return ENGINE;
  }

  /** Disconnects a viewer that has more waiting for it than the caps allow (a slow consumer). */
  private dropSlow(socket: Socket): void {
    this.counts.slowDisconnects += 1;
    socket.disconnect(true);
  }
}

/**
 * An unmasked, unfragmented WebSocket text frame (RFC 6455 section 5.2, as a server sends it) holding
 * `text`: its header and payload in one Buffer, so that writing it is one write to the TCP socket.
 */
export function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const header = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81; // FIN + opcode 1 (text)
  if (header === 2) frame[1] = length;
  else if (header === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(text, header, 'utf8');
  return frame;
}

/** The viewer has more waiting to be sent to it than MAX_BUFFERED_BYTES or MAX_QUEUED_PACKETS. */
function isBacklogged(conn: EngineSocketInternals): boolean {
  return (
    (Array.isArray(conn.writeBuffer) && (conn.writeBuffer.length > MAX_QUEUED_PACKETS || queuedBytes(conn, conn.writeBuffer) > MAX_BUFFERED_BYTES)) ||
    overBuffered(conn.transport?.socket)
  );
}

/** What has been counted of each connection's engine.io queue (see queuedBytes). */
const counted = new WeakMap<object, { queue: unknown[]; packets: number; bytes: number }>();

/**
 * The size of what engine.io queues for a connection (a long-polling viewer that stopped polling: one held
 * 16 MB in under 1,000 packets), in characters of its packets' data (a string takes about that many bytes
 * or twice as many in memory). Counted as packets are added: engine.io starts a new queue when it sends one,
 * so a queue seen before only grows, and only its new packets are read.
 */
function queuedBytes(conn: object, queue: unknown[]): number {
  if (queue.length === 0) return 0;
  let seen = counted.get(conn);
  if (!seen || seen.queue !== queue || seen.packets > queue.length) {
    seen = { queue, packets: 0, bytes: 0 };
    counted.set(conn, seen);
  }
  for (; seen.packets < queue.length; seen.packets += 1) {
    const data = (queue[seen.packets] as { data?: unknown } | undefined)?.data;
    seen.bytes += typeof data === 'string' ? data.length : data instanceof Uint8Array ? data.byteLength : 0;
  }
  return seen.bytes;
}

/** The WebSocket holds more than MAX_BUFFERED_BYTES that the kernel has not taken yet. */
function overBuffered(ws: WebSocketLike | null | undefined): boolean {
  const buffered = ws?.bufferedAmount;
  return typeof buffered === 'number' && buffered > MAX_BUFFERED_BYTES;
}

/**
 * The WebSocket and ws sender of a transport that frames may ever be written to directly: engine.io's
 * WebSocket transport without per-message compression, its ws sender able to write pre-built frames
 * (fixed for the transport's life); null for any other. writableNow() says whether one may be now.
 */
function directParts(transport: EngineSocketInternals['transport']): { ws: WebSocketLike; sender: DirectSender } | null {
  const ws = transport?.name === 'websocket' && !transport.perMessageDeflate ? transport.socket : undefined;
  const sender = ws?._sender;
  return ws && sender && typeof sender.sendFrame === 'function' ? { ws, sender: sender as DirectSender } : null;
}

/**
 * Writing a frame to this transport's WebSocket now is exactly what engine.io and ws would do themselves:
 * the connection is open on that transport, not upgrading, engine.io has nothing queued or in flight for
 * it (its transport is writable), the WebSocket is open, and ws is neither compressing nor holding messages.
 */
function writableNow(conn: EngineSocketInternals, transport: EngineTransport, ws: WebSocketLike, sender: SenderLike): boolean {
  return (
    conn.transport === transport &&
    conn.readyState === 'open' &&
    !conn.upgrading &&
    !!transport.writable &&
    Array.isArray(conn.writeBuffer) &&
    conn.writeBuffer.length === 0 &&
    ws.readyState === WS_OPEN &&
    sender._state === 0 &&
    Array.isArray(sender._queue) &&
    sender._queue.length === 0
  );
}

/** The viewer's ws sender when a frame may be written to it directly now (see writableNow), otherwise null. */
function directSender(conn: EngineSocketInternals): DirectSender | null {
  const transport = conn.transport;
  const parts = directParts(transport);
  return parts && writableNow(conn, transport as EngineTransport, parts.ws, parts.sender) ? parts.sender : null;
}
