import type { Namespace, Socket } from 'socket.io';
import { Encoder } from 'socket.io-parser';
import type { LiveEventMap } from './live-events';
import { LiveFanout, MAX_BUFFERED_BYTES, MAX_HELD_EVENTS, MAX_QUEUED_PACKETS } from './live-fanout';

interface FakeSocket {
  id: string;
  connected: boolean;
  disconnect: jest.Mock;
  conn: Record<string, unknown>;
  emit: jest.Mock;
  sent: Buffer[];
}

/** A viewer socket as socket.io and engine.io shape it, with a WebSocket that records what it is sent. */
function fakeSocket(
  id: string,
  engine: { transport?: string; writable?: boolean; queued?: number; upgrading?: boolean; state?: string; wsState?: number; buffered?: number } = {},
): FakeSocket {
  const sent: Buffer[] = [];
  const ws = {
    readyState: engine.wsState ?? 1,
    bufferedAmount: engine.buffered ?? 0,
    send: (data: Buffer, opts: { binary: boolean }) => (expect(opts.binary).toBe(false), sent.push(data)),
  };
  return {
    id,
    sent,
    emit: jest.fn(),
    connected: true,
    disconnect: jest.fn(),
    conn: {
      readyState: engine.state ?? 'open',
      upgrading: engine.upgrading ?? false,
      writeBuffer: Array.from({ length: engine.queued ?? 0 }, () => ({ type: 'message' })),
      transport: { name: engine.transport ?? 'websocket', writable: engine.writable ?? true, socket: ws },
    },
  };
}

function namespaceOf(sockets: FakeSocket[], rooms: Record<string, string[]>): Namespace {
  return {
    name: '/live',
    server: { encoder: new Encoder() },
    sockets: new Map(sockets.map((s) => [s.id, s])),
    adapter: { rooms: new Map(Object.entries(rooms).map(([room, ids]) => [room, new Set(ids)])) },
  } as unknown as Namespace;
}

describe('LiveFanout', () => {
  // Any JSON goes through unchanged (an extra field, non-ASCII text, quotes).
  const payload = { seq: 7, goodsId: '12', salesStatus: 'SOLD_OUT', note: 'ünïcode "quoted"' } as unknown as LiveEventMap['goods.salesStatus'];
  const frame = `42/live,${JSON.stringify(['goods.salesStatus', payload])}`;

  it('writes the Engine.IO message a socket.io emit would carry straight to each idle WebSocket of the room', () => {
    const [a, b, other] = [fakeSocket('a'), fakeSocket('b'), fakeSocket('c')];
    const fanout = new LiveFanout(namespaceOf([a, b, other], { r1: ['a', 'b'], r2: ['c'] }));
    expect(fanout.toRoom('r1', 'goods.salesStatus', payload)).toBe(2);
    for (const s of [a, b]) expect(s.sent.map((d) => d.toString())).toEqual([frame]);
    expect(a.sent[0]).toBe(b.sent[0]); // encoded once
    expect(other.sent).toEqual([]);
    expect(fanout.counts).toEqual({ direct: 2, engine: 0, slowDisconnects: 0 });
  });

  describe('a viewer waiting for its snapshot', () => {
    const event = (seq: number) => ({ seq, goodsId: '12', salesStatus: 'SOLD_OUT' }) as unknown as LiveEventMap['goods.salesStatus'];
    const seqsOf = (s: FakeSocket) => s.sent.map((d) => (JSON.parse(d.toString().slice('42/live,'.length)) as [string, { seq: number }])[1].seq);
    const snapshot = { seq: 5 } as unknown as LiveEventMap['campaign.snapshot'];

    it('gets the room’s events only after its snapshot, and only those that come after it, in order', () => {
      const [waiting, live] = [fakeSocket('w'), fakeSocket('l')];
      const fanout = new LiveFanout(namespaceOf([waiting, live], { r: ['w', 'l'] }));
      fanout.holdUntilSnapshot(waiting as unknown as Socket);
      for (const seq of [4, 5, 6, 7]) fanout.toRoom('r', 'goods.salesStatus', event(seq));
      expect(waiting.sent).toEqual([]);
      expect(seqsOf(live)).toEqual([4, 5, 6, 7]);
      fanout.toSocket(waiting as unknown as Socket, 'campaign.snapshot', snapshot);
      fanout.snapshotSent(waiting as unknown as Socket, 5);
      expect(seqsOf(waiting)).toEqual([5, 6, 7]); // the snapshot (seq 5), then 6 and 7
      fanout.toRoom('r', 'goods.salesStatus', event(8));
      expect(seqsOf(waiting)).toEqual([5, 6, 7, 8]);
    });

    it('gets nothing held when no snapshot went out; one that waits too long is disconnected', () => {
      const [a, b] = [fakeSocket('a'), fakeSocket('b')];
      const fanout = new LiveFanout(namespaceOf([a, b], { r: ['a', 'b'] }));
      fanout.holdUntilSnapshot(a as unknown as Socket);
      fanout.holdUntilSnapshot(b as unknown as Socket);
      fanout.toRoom('r', 'goods.salesStatus', event(1));
      fanout.snapshotSent(a as unknown as Socket, null);
      expect(a.sent).toEqual([]);
      for (let seq = 2; seq <= MAX_HELD_EVENTS + 1; seq += 1) fanout.toRoom('r', 'goods.salesStatus', event(seq));
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
  ])('hands the event to socket.io (queued behind what is pending) for %s', (_name, engine) => {
    const s = fakeSocket('a', engine);
    const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
    fanout.toRoom('r', 'goods.salesStatus', payload);
    expect(s.sent).toEqual([]);
    expect(s.emit).toHaveBeenCalledWith('goods.salesStatus', payload);
    expect(fanout.counts).toEqual({ direct: 0, engine: 1, slowDisconnects: 0 });
  });

  it('an engine.io socket without the expected internals takes socket.io’s path', () => {
    const s = fakeSocket('a');
    delete s.conn.writeBuffer;
    const fanout = new LiveFanout(namespaceOf([s], { r: ['a'] }));
    fanout.toRoom('r', 'goods.salesStatus', payload);
    expect(s.emit).toHaveBeenCalledTimes(1);
  });

  it('an empty or unknown room reaches nobody; a room member already gone is skipped', () => {
    const s = fakeSocket('a');
    const fanout = new LiveFanout(namespaceOf([s], { r: ['a', 'gone'] }));
    expect(fanout.toRoom('nobody', 'goods.salesStatus', payload)).toBe(0);
    expect(fanout.toRoom('r', 'goods.salesStatus', payload)).toBe(1);
  });

  it('toSocket writes one event to one socket the same way', () => {
    const s = fakeSocket('a');
    const fanout = new LiveFanout(namespaceOf([s], {}));
    fanout.toSocket(s as unknown as Socket, 'goods.salesStatus', payload);
    expect(s.sent.map((d) => d.toString())).toEqual([frame]);
  });

  it.each([
    ['its WebSocket holds more than MAX_BUFFERED_BYTES unsent', { buffered: MAX_BUFFERED_BYTES + 1 }],
    ['engine.io queues more than MAX_QUEUED_PACKETS for it', { queued: MAX_QUEUED_PACKETS + 1, transport: 'polling' }],
  ])('a viewer whose backlog is too big is disconnected instead of written to: %s', (_name, engine) => {
    const [slow, fine] = [fakeSocket('slow', engine), fakeSocket('fine')];
    const fanout = new LiveFanout(namespaceOf([slow, fine], { r: ['slow', 'fine'] }));
    fanout.toRoom('r', 'goods.salesStatus', payload);
    expect(slow.disconnect).toHaveBeenCalledWith(true);
    expect(slow.sent).toEqual([]);
    expect(slow.emit).not.toHaveBeenCalled();
    expect(fine.sent).toHaveLength(1);
    expect(fanout.counts.slowDisconnects).toBe(1);
    expect(fanout.toSocket(slow as unknown as Socket, 'goods.salesStatus', payload)).toBe(false);
  });

  it('a backlog at the limit is still written to', () => {
    const s = fakeSocket('a', { buffered: MAX_BUFFERED_BYTES });
    const fanout = new LiveFanout(namespaceOf([s], {}));
    expect(fanout.toSocket(s as unknown as Socket, 'goods.salesStatus', payload)).toBe(true);
    expect(s.sent).toHaveLength(1);
  });
});
