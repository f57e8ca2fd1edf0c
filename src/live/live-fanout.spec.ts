import { EventEmitter } from 'node:events';
import type { Namespace, Socket } from 'socket.io';
import { Encoder } from 'socket.io-parser';
import type { LiveEventMap } from './live-events';
import { FANOUT_SLICE_MS, LiveFanout, MAX_BUFFERED_BYTES, MAX_COMBINED_BYTES, MAX_HELD_EVENTS, MAX_QUEUED_PACKETS, textFrame } from './live-fanout';

interface FakeSocket {
  id: string;
  connected: boolean;
  disconnect: jest.Mock;
  conn: Record<string, unknown>;
  emit: jest.Mock;
  /** What the WebSocket was sent: each frame's payload (the Engine.IO message), after checking its header. */
  sent: Buffer[];
  /** The frames as written (header included). */
  frames: Buffer[];
  /** Each write to the TCP socket: the frames it carried, one after the other. */
  writes: Buffer[];
}

/** Cuts what one write carried into its frames, each checked as a whole unmasked text frame. */
function framesIn(written: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at < written.length;) {
    const mark = written[at + 1];
    const [header, length] = mark === 126 ? [4, written.readUInt16BE(at + 2)] : mark === 127 ? [10, Number(written.readBigUInt64BE(at + 2))] : [2, mark];
    frames.push(written.subarray(at, at + header + length));
    at += header + length;
  }
  return frames;
}

/** The payload of one unmasked WebSocket text frame, after checking that the header describes exactly it. */
function payloadOf(frame: Buffer): Buffer {
  expect(frame[0]).toBe(0x81); // FIN, text
  const mark = frame[1];
  expect(mark & 0x80).toBe(0); // a server's frames are not masked
  const [header, length] = mark === 126 ? [4, frame.readUInt16BE(2)] : mark === 127 ? [10, Number(frame.readBigUInt64BE(2))] : [2, mark];
  expect(frame.length).toBe(header + length);
  return frame.subarray(header);
}

/** A viewer socket as socket.io and engine.io shape it, with a WebSocket that records what it is sent. */
function fakeSocket(
  id: string,
  engine: {
    transport?: string;
    writable?: boolean;
    queued?: number;
    /** Characters of data in each queued packet. */
    packetChars?: number;
    upgrading?: boolean;
    state?: string;
    wsState?: number;
    buffered?: number;
    deflate?: boolean;
    senderState?: number;
    senderQueued?: number;
  } = {},
): FakeSocket {
  const sent: Buffer[] = [];
  const frames: Buffer[] = [];
  const writes: Buffer[] = [];
  const sender = {
    _state: engine.senderState ?? 0,
    _queue: Array.from({ length: engine.senderQueued ?? 0 }, () => []),
    sendFrame: (list: Buffer[]) => {
      expect(list).toHaveLength(1); // headers and payloads in one Buffer: one write to the TCP socket
      writes.push(list[0]);
      for (const one of framesIn(list[0])) {
        frames.push(one);
        sent.push(payloadOf(one));
      }
    },
  };
  const ws = { readyState: engine.wsState ?? 1, bufferedAmount: engine.buffered ?? 0, _sender: sender };
  return {
    id,
    sent,
    frames,
    writes,
    emit: jest.fn(),
    connected: true,
    disconnect: jest.fn(),
    conn: {
      readyState: engine.state ?? 'open',
      upgrading: engine.upgrading ?? false,
      writeBuffer: Array.from({ length: engine.queued ?? 0 }, () => ({ type: 'message', data: 'x'.repeat(engine.packetChars ?? 0) })),
      transport: {
        name: engine.transport ?? 'websocket',
        writable: engine.writable ?? true,
        perMessageDeflate: engine.deflate ? { threshold: 1024 } : null,
        socket: ws,
      },
    },
  };
}

/** socket.io's in-memory adapter as the fan-out sees it: its rooms, and the join-room / leave-room events it emits. */
class FakeAdapter extends EventEmitter {
  readonly rooms: Map<string, Set<string>>;

  constructor(rooms: Record<string, string[]>) {
    super();
    this.rooms = new Map(Object.entries(rooms).map(([room, ids]) => [room, new Set(ids)]));
  }

  join(room: string, id: string): void {
    if (!this.rooms.has(room)) this.rooms.set(room, new Set());
    this.rooms.get(room)?.add(id);
    this.emit('join-room', room, id);
  }

  leave(room: string, id: string): void {
    this.rooms.get(room)?.delete(id);
    if (this.rooms.get(room)?.size === 0) this.rooms.delete(room);
    this.emit('leave-room', room, id);
  }
}

function namespaceOf(sockets: FakeSocket[], rooms: Record<string, string[]>): Namespace & { adapter: FakeAdapter } {
  return {
    name: '/live',
    server: { encoder: new Encoder() },
    sockets: new Map(sockets.map((s) => [s.id, s])),
    adapter: new FakeAdapter(rooms),
  } as unknown as Namespace & { adapter: FakeAdapter };
}

/** Hands the events to the fan-out and answers how many viewers they reached (a room within one slice is written at once). */
function reachedBy(fanout: LiveFanout, room: string, events: Parameters<LiveFanout['toRoom']>[1]): number | undefined {
  let reached: number | undefined;
  fanout.toRoom(room, events, (n) => (reached = n));
  return reached;
}

describe('LiveFanout', () => {
  /** A goods.salesStatus event numbered `seq`, and the seqs of the events a socket was sent, in order. */
  const event = (seq: number) => ({ seq, goodsId: '12', salesStatus: 'SOLD_OUT' }) as unknown as LiveEventMap['goods.salesStatus'];
  const seqsOf = (s: FakeSocket) => s.sent.map((d) => (JSON.parse(d.toString().slice('42/live,'.length)) as [string, { seq: number }])[1].seq);
  // Any JSON goes through unchanged (an extra field, non-ASCII text, quotes).
  const payload = { seq: 7, goodsId: '12', salesStatus: 'SOLD_OUT', note: 'ünïcode "quoted"' } as unknown as LiveEventMap['goods.salesStatus'];
  const frame = `42/live,${JSON.stringify(['goods.salesStatus', payload])}`;

  it('writes the Engine.IO message a socket.io emit would carry straight to each idle WebSocket of the room', () => {
    const [a, b, other] = [fakeSocket('a'), fakeSocket('b'), fakeSocket('c')];
    const fanout = new LiveFanout(namespaceOf([a, b, other], { r1: ['a', 'b'], r2: ['c'] }));
    expect(reachedBy(fanout, 'r1', [{ type: 'goods.salesStatus', payload: payload }])).toBe(2);
    for (const s of [a, b]) expect(s.sent.map((d) => d.toString())).toEqual([frame]);
    expect(a.writes[0]).toBe(b.writes[0]); // encoded once: the same Buffer for every viewer
    expect(other.sent).toEqual([]);
    expect(fanout.counts).toEqual({ direct: 2, engine: 0, slowDisconnects: 0 });
  });

  describe('a viewer waiting for its snapshot', () => {
    const snapshot = { seq: 5 } as unknown as LiveEventMap['campaign.snapshot'];

    it('gets the room’s events only after its snapshot, and only those that come after it, in order', () => {
      const [waiting, live] = [fakeSocket('w'), fakeSocket('l')];
      const fanout = new LiveFanout(namespaceOf([waiting, live], { r: ['w', 'l'] }));
      fanout.holdUntilSnapshot(waiting as unknown as Socket);
      for (const seq of [4, 5, 6, 7]) fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(seq) }]);
      expect(waiting.sent).toEqual([]);
      expect(seqsOf(live)).toEqual([4, 5, 6, 7]);
      fanout.toSocket(waiting as unknown as Socket, 'campaign.snapshot', snapshot);
      fanout.snapshotSent(waiting as unknown as Socket, 5);
      expect(seqsOf(waiting)).toEqual([5, 6, 7]); // the snapshot (seq 5), then 6 and 7
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(8) }]);
      expect(seqsOf(waiting)).toEqual([5, 6, 7, 8]);
    });

    it('gets nothing held when no snapshot went out; one that waits too long is disconnected', () => {
      const [a, b] = [fakeSocket('a'), fakeSocket('b')];
      const fanout = new LiveFanout(namespaceOf([a, b], { r: ['a', 'b'] }));
      fanout.holdUntilSnapshot(a as unknown as Socket);
      fanout.holdUntilSnapshot(b as unknown as Socket);
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      fanout.snapshotSent(a as unknown as Socket, null);
      expect(a.sent).toEqual([]);
      for (let seq = 2; seq <= MAX_HELD_EVENTS + 1; seq += 1) fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(seq) }]);
      expect(b.disconnect).toHaveBeenCalledWith(true);
      expect(b.sent).toEqual([]);
    });
  });

  it.each([
    ['long polling', { transport: 'polling' }],
    ['an upgrade in progress', { upgrading: true }],
    ['packets queued in engine.io', { queued: 1 }],
    ['a write in flight (transport not writable)', { writable: false }],
    ['a closing connection', { state: 'closing' }],
    ['a WebSocket no longer open', { wsState: 2 }],
    ['per-message compression negotiated', { deflate: true }],
    ['ws compressing or reading a message (its sender busy)', { senderState: 1 }],
    ['messages queued in ws', { senderQueued: 1 }],
  ])('hands the event to socket.io (queued behind what is pending) for %s', (_name, engine) => {
    const s = fakeSocket('a', engine);
    const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
    fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: payload }]);
    expect(s.sent).toEqual([]);
    expect(s.emit).toHaveBeenCalledWith('goods.salesStatus', payload);
    expect(fanout.counts).toEqual({ direct: 0, engine: 1, slowDisconnects: 0 });
  });

  it.each([
    ['engine.io’s write buffer', (s: FakeSocket) => delete s.conn.writeBuffer],
    ['ws’s sender', (s: FakeSocket) => delete (s.conn.transport as { socket: Record<string, unknown> }).socket._sender],
    ['the sender’s queue', (s: FakeSocket) => delete (s.conn.transport as { socket: { _sender: Record<string, unknown> } }).socket._sender._queue],
  ])('a socket without the expected internals (%s) takes socket.io’s path', (_name, strip) => {
    const s = fakeSocket('a');
    strip(s);
    const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
    fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: payload }]);
    expect(s.emit).toHaveBeenCalledTimes(1);
    expect(s.sent).toEqual([]);
  });

  it('an empty or unknown room reaches nobody; a room member already gone or disconnected is skipped', () => {
    const [s, closed] = [fakeSocket('a'), fakeSocket('closed')];
    closed.connected = false;
    const fanout = new LiveFanout(namespaceOf([s, closed], { r: ['a', 'gone', 'closed'] }));
    expect(reachedBy(fanout, 'nobody', [{ type: 'goods.salesStatus', payload: payload }])).toBe(0);
    expect(reachedBy(fanout, 'r', [{ type: 'goods.salesStatus', payload: payload }])).toBe(1);
    expect(closed.sent).toEqual([]);
    expect(closed.emit).not.toHaveBeenCalled();
    expect(fanout.counts).toEqual({ direct: 1, engine: 0, slowDisconnects: 0 });
  });

  it('counts every viewer’s write of a room event, direct and through socket.io', () => {
    const sockets = [fakeSocket('a'), fakeSocket('b'), fakeSocket('c', { transport: 'polling' })];
    const fanout = new LiveFanout(namespaceOf(sockets, { r: ['a', 'b', 'c'] }));
    expect(reachedBy(fanout, 'r', [{ type: 'goods.salesStatus', payload: payload }])).toBe(3);
    expect(reachedBy(fanout, 'r', [{ type: 'goods.salesStatus', payload: payload }])).toBe(3);
    expect(fanout.counts).toEqual({ direct: 4, engine: 2, slowDisconnects: 0 });
  });

  describe('a room’s viewers, kept between events', () => {
    it('are looked up once while the room does not change, and again after a join', () => {
      const [a, b] = [fakeSocket('a'), fakeSocket('b')];
      const namespace = namespaceOf([a, b], { r: ['a'] });
      const lookUp = jest.spyOn(namespace.sockets, 'get');
      const fanout = new LiveFanout(namespace);
      for (let seq = 1; seq <= 3; seq += 1) fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(seq) }]);
      expect(lookUp).toHaveBeenCalledTimes(1);
      namespace.adapter.join('r', 'b');
      for (let seq = 4; seq <= 5; seq += 1) fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(seq) }]);
      expect(lookUp).toHaveBeenCalledTimes(3); // the room's two sockets, once
      expect([seqsOf(a), seqsOf(b)]).toEqual([
        [1, 2, 3, 4, 5],
        [4, 5],
      ]);
    });

    it('follow the adapter’s joins and leaves', () => {
      const [a, b, c] = [fakeSocket('a'), fakeSocket('b'), fakeSocket('c')];
      const namespace = namespaceOf([a, b, c], { r: ['a', 'b'] });
      const fanout = new LiveFanout(namespace);
      expect(reachedBy(fanout, 'r', [{ type: 'goods.salesStatus', payload: event(1) }])).toBe(2);
      namespace.adapter.join('r', 'c');
      namespace.adapter.leave('r', 'a');
      expect(reachedBy(fanout, 'r', [{ type: 'goods.salesStatus', payload: event(2) }])).toBe(2);
      namespace.adapter.leave('r', 'b');
      namespace.adapter.leave('r', 'c');
      expect(reachedBy(fanout, 'r', [{ type: 'goods.salesStatus', payload: event(3) }])).toBe(0);
      expect([seqsOf(a), seqsOf(b), seqsOf(c)]).toEqual([[1], [1, 2], [2]]);
    });

    it('write straight to a polling viewer once it has upgraded, and check a transport that changed again afresh', () => {
      const s = fakeSocket('a', { transport: 'polling' });
      const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      expect(s.emit).toHaveBeenCalledTimes(1);
      // The upgrade: engine.io's socket now has a WebSocket transport.
      const upgraded = fakeSocket('a');
      s.conn.transport = upgraded.conn.transport;
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(2) }]);
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(3) }]);
      expect(seqsOf(upgraded)).toEqual([2, 3]);
      // A transport the fan-out did not see before (another WebSocket), then one that is busy.
      const other = fakeSocket('a');
      s.conn.transport = other.conn.transport;
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(4) }]);
      (other.conn.transport as { writable: boolean }).writable = false;
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(5) }]);
      expect(seqsOf(other)).toEqual([4]);
      expect(s.emit).toHaveBeenCalledTimes(2);
      expect(s.emit).toHaveBeenLastCalledWith('goods.salesStatus', event(5));
      expect(fanout.counts).toEqual({ direct: 3, engine: 2, slowDisconnects: 0 });
    });

    it('are read afresh from a new adapter, and every event without an adapter that tells of joins', () => {
      const [a, b] = [fakeSocket('a'), fakeSocket('b')];
      const namespace = namespaceOf([a, b], { r: ['a'] });
      const fanout = new LiveFanout(namespace);
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      const first = namespace.adapter;
      (namespace as { adapter: unknown }).adapter = new FakeAdapter({ r: ['b'] });
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(2) }]);
      expect(first.listenerCount('join-room') + first.listenerCount('leave-room')).toBe(0);
      (namespace as { adapter: unknown }).adapter = { rooms: new Map([['r', new Set(['a'])]]) };
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(3) }]);
      (namespace.adapter.rooms.get('r') as Set<string>).add('b');
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(4) }]);
      expect([seqsOf(a), seqsOf(b)]).toEqual([
        [1, 3, 4],
        [2, 4],
      ]);
    });

    it('still check each viewer’s state: one that fell behind, closes or was disconnected since the previous event is not written to', () => {
      const [slow, closing, gone, fine] = [fakeSocket('slow'), fakeSocket('closing'), fakeSocket('gone'), fakeSocket('fine')];
      const fanout = new LiveFanout(namespaceOf([slow, closing, gone, fine], { r: ['slow', 'closing', 'gone', 'fine'] }));
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      (slow.conn.transport as { socket: { bufferedAmount: number } }).socket.bufferedAmount = MAX_BUFFERED_BYTES + 1;
      closing.conn.readyState = 'closing';
      gone.connected = false;
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(2) }]);
      expect([seqsOf(slow), seqsOf(closing), seqsOf(gone), seqsOf(fine)]).toEqual([[1], [1], [1], [1, 2]]);
      expect(slow.disconnect).toHaveBeenCalledWith(true);
      expect(slow.emit).not.toHaveBeenCalled();
      expect(closing.emit).toHaveBeenCalledWith('goods.salesStatus', event(2)); // socket.io's path, as for any closing connection
      expect(gone.emit).not.toHaveBeenCalled();
      expect(fanout.counts).toEqual({ direct: 5, engine: 1, slowDisconnects: 1 });
    });
  });

  describe('textFrame', () => {
    it.each([
      ['a short text (7-bit length)', 125],
      ['126 bytes (16-bit length)', 126],
      ['65,535 bytes (16-bit length)', 65535],
      ['65,536 bytes (64-bit length)', 65536],
    ])('frames %s as one unmasked text frame', (_name, length) => {
      const text = 'x'.repeat(length);
      expect(payloadOf(textFrame(text)).toString()).toBe(text);
    });

    it('counts the length in bytes, not characters', () => {
      const text = 'ü'.repeat(70); // 140 bytes: past the 7-bit length although 70 characters
      const frame = textFrame(text);
      expect(frame[1]).toBe(126);
      expect(payloadOf(frame).toString()).toBe(text);
    });
  });

  describe('several events for a room at once', () => {
    const events = (...seqs: number[]) => seqs.map((seq) => ({ type: 'goods.salesStatus' as const, payload: event(seq) }));

    it('writes them to each idle WebSocket in one write, in order, the same Buffer for every viewer', () => {
      const [a, b] = [fakeSocket('a'), fakeSocket('b')];
      const fanout = new LiveFanout(namespaceOf([a, b], { r: ['a', 'b'] }));
      expect(reachedBy(fanout, 'r', events(3, 4, 5))).toBe(2);
      for (const s of [a, b]) {
        expect(s.writes).toHaveLength(1);
        expect(seqsOf(s)).toEqual([3, 4, 5]);
      }
      expect(a.writes[0]).toBe(b.writes[0]);
      // Each frame is the one a single event would have been.
      const single = fakeSocket('s');
      const one = new LiveFanout(namespaceOf([single], { r: ['s'] }));
      for (const e of events(3, 4, 5)) one.toRoom('r', [e]);
      expect(single.writes).toHaveLength(3);
      expect(Buffer.concat(single.writes).equals(a.writes[0])).toBe(true);
      expect(fanout.counts).toEqual({ direct: 6, engine: 0, slowDisconnects: 0 });
    });

    it('gives a viewer that cannot be written to directly each event through socket.emit, in order', () => {
      const [ws, polling, queued] = [fakeSocket('ws'), fakeSocket('p', { transport: 'polling' }), fakeSocket('q', { queued: 1 })];
      const fanout = new LiveFanout(namespaceOf([ws, polling, queued], { r: ['ws', 'p', 'q'] }));
      expect(reachedBy(fanout, 'r', events(1, 2))).toBe(3);
      for (const s of [polling, queued]) {
        expect(s.sent).toEqual([]);
        expect(s.emit.mock.calls.map(([type, p]: [string, { seq: number }]) => [type, p.seq])).toEqual([
          ['goods.salesStatus', 1],
          ['goods.salesStatus', 2],
        ]);
      }
      expect(seqsOf(ws)).toEqual([1, 2]);
      expect(fanout.counts).toEqual({ direct: 2, engine: 4, slowDisconnects: 0 });
    });

    it('holds them all for a viewer waiting for its snapshot, and writes those after it', () => {
      const [waiting, other] = [fakeSocket('w'), fakeSocket('o')];
      const fanout = new LiveFanout(namespaceOf([waiting, other], { r: ['w', 'o'] }));
      fanout.holdUntilSnapshot(waiting as unknown as Socket);
      fanout.toRoom('r', events(4, 5, 6));
      expect(waiting.sent).toEqual([]);
      fanout.snapshotSent(waiting as unknown as Socket, 4);
      expect(seqsOf(waiting)).toEqual([5, 6]);
      expect(seqsOf(other)).toEqual([4, 5, 6]);
    });

    it('disconnects a slow viewer once, without writing any of them', () => {
      const [slow, fine] = [fakeSocket('slow', { buffered: MAX_BUFFERED_BYTES + 1 }), fakeSocket('fine')];
      const fanout = new LiveFanout(namespaceOf([slow, fine], { r: ['slow', 'fine'] }));
      expect(reachedBy(fanout, 'r', events(1, 2, 3))).toBe(1);
      expect(slow.disconnect).toHaveBeenCalledTimes(1);
      expect(slow.sent).toEqual([]);
      expect(fanout.counts.slowDisconnects).toBe(1);
    });

    it('cuts a run of large events into writes of at most MAX_COMBINED_BYTES, keeping the order', () => {
      const s = fakeSocket('a');
      const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
      const big = (seq: number) => ({ type: 'goods.salesStatus' as const, payload: { ...event(seq), note: 'x'.repeat(20_000) } });
      fanout.toRoom('r', [big(1), big(2), big(3), big(4), big(5), big(6), big(7)]);
      expect(seqsOf(s)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(s.writes.length).toBeGreaterThan(1);
      for (const w of s.writes) expect(w.length).toBeLessThanOrEqual(MAX_COMBINED_BYTES);
      // Each write is as full as the limit allows: three of these events fit, a fourth does not.
      expect(s.writes.map((w) => framesIn(w).length)).toEqual([3, 3, 1]);
    });

    it('writes nothing for no events or an empty room', () => {
      const s = fakeSocket('a');
      const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
      expect(reachedBy(fanout, 'r', [])).toBe(0);
      expect(reachedBy(fanout, 'nobody', events(1))).toBe(0);
      expect(s.writes).toEqual([]);
    });
  });

  it('toSocket writes one event to one socket the same way', () => {
    const s = fakeSocket('a');
    const fanout = new LiveFanout(namespaceOf([s], {}));
    fanout.toSocket(s as unknown as Socket, 'goods.salesStatus', payload);
    expect(s.sent.map((d) => d.toString())).toEqual([frame]);
  });

  it('an event encoded once is written to each socket as it is: the same Buffer, the same checks and counts', () => {
    const [a, b, polling, slow] = [
      fakeSocket('a'),
      fakeSocket('b'),
      fakeSocket('p', { transport: 'polling' }),
      fakeSocket('s', { buffered: MAX_BUFFERED_BYTES + 1 }),
    ];
    const fanout = new LiveFanout(namespaceOf([a, b, polling, slow], {}));
    const encoded = fanout.encode('goods.salesStatus', payload);
    const written = [a, b, polling, slow].map((s) => fanout.writeOne(s as unknown as Socket, encoded));
    expect(written).toEqual([true, true, true, false]);
    for (const s of [a, b]) expect(s.sent.map((d) => d.toString())).toEqual([frame]);
    expect(a.writes[0]).toBe(b.writes[0]);
    expect(polling.emit).toHaveBeenCalledWith('goods.salesStatus', payload);
    expect(slow.disconnect).toHaveBeenCalledWith(true);
    expect(fanout.counts).toEqual({ direct: 2, engine: 1, slowDisconnects: 1 });
  });

  it.each([
    ['its WebSocket holds more than MAX_BUFFERED_BYTES unsent', { buffered: MAX_BUFFERED_BYTES + 1 }],
    ['engine.io queues more than MAX_QUEUED_PACKETS for it', { queued: MAX_QUEUED_PACKETS + 1, transport: 'polling' }],
    ['engine.io queues more than MAX_BUFFERED_BYTES for it, in few packets', { queued: 9, packetChars: MAX_BUFFERED_BYTES / 8, transport: 'polling' }],
  ])('a viewer whose backlog is too big is disconnected instead of written to: %s', (_name, engine) => {
    const [slow, fine] = [fakeSocket('slow', engine), fakeSocket('fine')];
    const fanout = new LiveFanout(namespaceOf([slow, fine], { r: ['slow', 'fine'] }));
    fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: payload }]);
    expect(slow.disconnect).toHaveBeenCalledWith(true);
    expect(slow.sent).toEqual([]);
    expect(slow.emit).not.toHaveBeenCalled();
    expect(fine.sent).toHaveLength(1);
    expect(fanout.counts.slowDisconnects).toBe(1);
    expect(fanout.toSocket(slow as unknown as Socket, 'goods.salesStatus', payload)).toBe(false);
  });

  it("engine.io's queue is counted as it grows, and again from nothing once engine.io has sent it", () => {
    const s = fakeSocket('a', { queued: 8, packetChars: MAX_BUFFERED_BYTES / 8, transport: 'polling' });
    const fanout = new LiveFanout(namespaceOf([s], {}));
    // At the limit: written to (queued by engine.io; the fake's emit does not queue).
    expect(fanout.toSocket(s as unknown as Socket, 'goods.salesStatus', payload)).toBe(true);
    (s.conn.writeBuffer as unknown[]).push({ type: 'message', data: 'x' });
    expect(fanout.toSocket(s as unknown as Socket, 'goods.salesStatus', payload)).toBe(false);
    expect(s.disconnect).toHaveBeenCalledWith(true);
    // Sent by engine.io (a new, small queue): written to again.
    const t = fakeSocket('b', { queued: 8, packetChars: MAX_BUFFERED_BYTES / 8, transport: 'polling' });
    const other = new LiveFanout(namespaceOf([t], {}));
    expect(other.toSocket(t as unknown as Socket, 'goods.salesStatus', payload)).toBe(true);
    t.conn.writeBuffer = [{ type: 'message', data: 'x'.repeat(100) }];
    expect(other.toSocket(t as unknown as Socket, 'goods.salesStatus', payload)).toBe(true);
    expect(t.disconnect).not.toHaveBeenCalled();
  });

  it('a backlog at the limit is still written to', () => {
    const s = fakeSocket('a', { buffered: MAX_BUFFERED_BYTES });
    const fanout = new LiveFanout(namespaceOf([s], {}));
    expect(fanout.toSocket(s as unknown as Socket, 'goods.salesStatus', payload)).toBe(true);
    expect(s.sent).toHaveLength(1);
  });

  describe('a room too large to write in one slice', () => {
    /** 100 viewers whose every write takes 1 ms on the fan-out's clock, so that a slice ends after 32 of them. */
    function slowRoom(count = 100): { sockets: FakeSocket[]; fanout: LiveFanout; namespace: ReturnType<typeof namespaceOf> } {
      let clock = 0;
      const sockets = Array.from({ length: count }, (_, i) => fakeSocket(`v${i}`));
      for (const socket of sockets) {
        const sender = (socket.conn.transport as { socket: { _sender: { sendFrame: (list: Buffer[]) => void } } }).socket._sender;
        const write = sender.sendFrame;
        sender.sendFrame = (list) => {
          clock += 1;
          write(list);
        };
      }
      const namespace = namespaceOf(sockets, { r: sockets.map((s) => s.id) });
      return { sockets, fanout: new LiveFanout(namespace, () => clock), namespace };
    }
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

    it('goes on in later turns of the event loop, other work running in between, and says when it is done', async () => {
      expect(FANOUT_SLICE_MS).toBeLessThan(32);
      const { sockets, fanout } = slowRoom();
      const done = jest.fn();
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }], done);
      // The first slice: 32 viewers (the clock is read every 32), then the rest waits for the next turns.
      expect(sockets.filter((s) => s.sent.length === 1)).toHaveLength(32);
      expect(done).not.toHaveBeenCalled();
      expect(fanout.pending).toBe(1);
      let inBetween = -1;
      setImmediate(() => (inBetween = sockets.filter((s) => s.sent.length === 1).length));
      while (fanout.pending) await nextTurn();
      expect(inBetween).toBeGreaterThan(0);
      expect(inBetween).toBeLessThan(100); // other work ran before the room was done
      expect(done.mock.calls).toEqual([[100]]);
      for (const s of sockets) expect(seqsOf(s)).toEqual([1]);
      expect(fanout.counts).toEqual({ direct: 100, engine: 0, slowDisconnects: 0 });
    });

    it('events handed over meanwhile wait for it: every viewer gets every event in order', async () => {
      const { sockets, fanout } = slowRoom();
      const done: number[] = [];
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }], () => done.push(1));
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(2) }], () => done.push(2));
      expect(sockets[0].sent).toHaveLength(1); // event 2 is not written ahead of the rest of event 1
      await nextTurn();
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(3) }], () => done.push(3));
      while (fanout.pending) await nextTurn();
      for (const s of sockets) expect(seqsOf(s)).toEqual([1, 2, 3]);
      expect(done).toEqual([1, 2, 3]);
    });

    it('what comes for the room meanwhile goes out together in one more pass: two writes per viewer, not one per event', async () => {
      const { sockets, fanout, namespace } = slowRoom();
      const late = fakeSocket('late');
      (namespace.sockets as unknown as Map<string, FakeSocket>).set('late', late);
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(2) }]);
      await nextTurn();
      // One who joins before the last of them gets those that wait (its snapshot may lack them).
      namespace.adapter.join('r', 'late');
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(3) }]);
      expect(fanout.pending).toBe(2);
      while (fanout.pending) await nextTurn();
      for (const s of sockets) {
        expect(seqsOf(s)).toEqual([1, 2, 3]);
        expect(s.writes).toHaveLength(2);
      }
      expect(seqsOf(late)).toEqual([2, 3]);
    });

    it('holds at most two deliveries per room, however rooms take turns meanwhile', async () => {
      const { sockets, fanout, namespace } = slowRoom();
      const other = fakeSocket('o');
      (namespace.sockets as unknown as Map<string, FakeSocket>).set('o', other);
      namespace.adapter.join('s', 'o');
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      for (let seq = 2; seq <= 6; seq += 1) {
        fanout.toRoom('s', [{ type: 'goods.salesStatus', payload: event(100 + seq) }]);
        fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(seq) }]);
      }
      expect(fanout.pending).toBe(3); // r being written; then s's events and r's next ones, each joined
      while (fanout.pending) await nextTurn();
      for (const s of sockets) expect(seqsOf(s)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(seqsOf(other)).toEqual([102, 103, 104, 105, 106]);
      expect(other.writes).toHaveLength(1);
    });

    it('a delivery whose writing throws is dropped, and the next one goes out', () => {
      const broken = fakeSocket('broken');
      (broken.conn.transport as { socket: { _sender: { sendFrame: () => void } } }).socket._sender.sendFrame = () => {
        throw new Error('boom');
      };
      const fine = fakeSocket('fine');
      const fanout = new LiveFanout(namespaceOf([broken, fine], { r: ['broken'], s: ['fine'] }));
      expect(() => fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }])).toThrow('boom');
      expect(fanout.pending).toBe(0);
      expect(reachedBy(fanout, 's', [{ type: 'goods.salesStatus', payload: event(2) }])).toBe(1);
      expect(seqsOf(fine)).toEqual([2]);
    });

    it('goes to the viewers the room had when it was handed over: not to one who joined since, nor to one who left', async () => {
      const { sockets, fanout, namespace } = slowRoom();
      const [joiner] = [fakeSocket('late')];
      (namespace.sockets as unknown as Map<string, FakeSocket>).set('late', joiner);
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(1) }]);
      namespace.adapter.join('r', 'late'); // its snapshot holds event 1
      sockets[99].connected = false;
      namespace.adapter.leave('r', 'v99');
      while (fanout.pending) await nextTurn();
      expect(joiner.sent).toEqual([]);
      expect(sockets[99].sent).toEqual([]);
      expect(sockets.slice(0, 99).every((s) => s.sent.length === 1)).toBe(true);
      // The next event goes to the room as it is now.
      fanout.toRoom('r', [{ type: 'goods.salesStatus', payload: event(2) }]);
      while (fanout.pending) await nextTurn();
      expect(seqsOf(joiner)).toEqual([2]);
      expect(sockets[99].sent).toEqual([]);
    });
  });
});
