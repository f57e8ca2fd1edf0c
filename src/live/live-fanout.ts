import type { Namespace, Socket } from 'socket.io';
import { PacketType } from 'socket.io-parser';
import type { LiveEventMap, LiveEventType } from './live-events';

/**
 * The parts of engine.io's socket and WebSocket transport that a direct write relies on. They are not in
 * engine.io's typings (private), so each is checked at run time: when one is missing (another engine.io
 * version, a polling or WebTransport viewer, a busy socket) the event goes through socket.io's own path.
 */
interface EngineSocketInternals {
  readyState?: string;
  upgrading?: boolean;
  writeBuffer?: unknown[];
  transport?: { name?: string; writable?: boolean; socket?: WebSocketLike };
}

interface WebSocketLike {
  readyState: number;
  /** Bytes handed to this WebSocket that the kernel has not taken yet (ws). */
  bufferedAmount?: number;
  send(data: Buffer, options: { binary: boolean }): void;
}

const WS_OPEN = 1;

/**
 * The most a viewer may have waiting to be sent to it before it is disconnected as a slow consumer: bytes
 * in its WebSocket's buffer, or packets in engine.io's queue (long polling, upgrades, busy sockets). A
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

interface HeldEvent {
  type: LiveEventType;
  payload: { seq: number };
}

/** How many event writes went straight to a WebSocket and how many through socket.io's path; viewers dropped as slow. */
export interface FanoutCounts {
  direct: number;
  engine: number;
  slowDisconnects: number;
}

/**
 * Writes one event to the viewers of a room on this node: encoded once (socket.io's own encoder, so the
 * bytes are what `socket.emit` would send), then, for every WebSocket viewer whose engine.io socket has
 * nothing queued, handed straight to its WebSocket (`ws.send`); any other viewer (long polling, an upgrade
 * in progress, packets still queued) gets it through `socket.emit`, which queues behind what is pending,
 * so every viewer still receives its events in order.
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
  private readonly awaitingSnapshot = new Map<Socket, HeldEvent[]>();

  constructor(private readonly namespace: Namespace) {}

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
    for (const event of held) {
      if (event.payload.seq > seq && !this.write(socket, this.encode(event.type, event.payload), event.type, event.payload)) return;
    }
  }

  /** Sends the event to every socket of `room` on this node; returns how many sockets it reached. */
  toRoom<K extends LiveEventType>(room: string, type: K, payload: LiveEventMap[K]): number {
    const ids = this.namespace.adapter.rooms.get(room);
    if (!ids?.size) return 0;
    const data = this.encode(type, payload);
    let reached = 0;
    for (const id of ids) {
      const socket = this.namespace.sockets.get(id);
      if (!socket) continue;
      const held = this.awaitingSnapshot.size ? this.awaitingSnapshot.get(socket) : undefined;
      if (held) {
        if (held.length < MAX_HELD_EVENTS) held.push({ type, payload: payload });
        else {
          this.awaitingSnapshot.delete(socket);
          socket.disconnect(true);
        }
        continue;
      }
      this.write(socket, data, type, payload);
      reached += 1;
    }
    return reached;
  }

  /**
   * Sends one event to one socket, the same way (so the code path is already warm for room events).
   * False when the socket was disconnected instead, as a slow consumer.
   */
  toSocket<K extends LiveEventType>(socket: Socket, type: K, payload: LiveEventMap[K]): boolean {
    return this.write(socket, this.encode(type, payload), type, payload);
  }

  /** The Engine.IO message ("4") carrying the Socket.IO event packet, or null if it cannot be one text frame. */
  private encode(type: LiveEventType, payload: unknown): Buffer | null {
    const encoded = this.namespace.server.encoder.encode({ type: PacketType.EVENT, nsp: this.namespace.name, data: [type, payload] });
    return encoded.length === 1 && typeof encoded[0] === 'string' ? Buffer.from(`4${encoded[0]}`) : null;
  }

  private write(socket: Socket, data: Buffer | null, type: LiveEventType, payload: unknown): boolean {
    if (!socket.connected) return false;
    if (isBacklogged(socket)) {
      this.counts.slowDisconnects += 1;
      socket.disconnect(true);
      return false;
    }
    const ws = data && directWebSocket(socket);
    if (ws) {
      ws.send(data, { binary: false });
      this.counts.direct += 1;
      return true;
    }
    (socket.emit as (event: string, ...args: unknown[]) => boolean)(type, payload);
    this.counts.engine += 1;
    return true;
  }
}

/** The viewer has more waiting to be sent to it than MAX_BUFFERED_BYTES or MAX_QUEUED_PACKETS. */
export function isBacklogged(socket: Socket): boolean {
  const conn = socket.conn as unknown as EngineSocketInternals;
  if (Array.isArray(conn.writeBuffer) && conn.writeBuffer.length > MAX_QUEUED_PACKETS) return true;
  const buffered = conn.transport?.socket?.bufferedAmount;
  return typeof buffered === 'number' && buffered > MAX_BUFFERED_BYTES;
}

/**
 * The viewer's WebSocket when a write to it now is exactly what engine.io would do itself: the
 * connection is open on the WebSocket transport, not upgrading, and engine.io has nothing queued or in
 * flight for it (its transport is writable). Otherwise null.
 */
function directWebSocket(socket: Socket): WebSocketLike | null {
  const conn = socket.conn as unknown as EngineSocketInternals;
  const transport = conn.transport;
  if (conn.readyState !== 'open' || conn.upgrading || !transport || transport.name !== 'websocket' || !transport.writable) return null;
  if (!Array.isArray(conn.writeBuffer) || conn.writeBuffer.length) return null;
  const ws = transport.socket;
  return ws && ws.readyState === WS_OPEN && typeof ws.send === 'function' ? ws : null;
}
