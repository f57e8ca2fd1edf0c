import { EventEmitter } from 'node:events';
import type { Namespace } from 'socket.io';
import { Encoder } from 'socket.io-parser';
import type { AppConfig } from '../config/app-config';
import type { Metrics } from '../metrics/metrics.service';
import { LiveEvent, roomOf } from './live-events';
import { LiveFanout, RoomEvent } from './live-fanout';
import { CLUSTER_EVENTS, LiveNotifier } from './live-notifier';
import type { LiveSource } from './live-source';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A goods.salesStatus event of a campaign, numbered `seq`. */
function event(campaignId: number, seq: number): LiveEvent {
  return {
    campaignId,
    seq,
    type: 'goods.salesStatus',
    payload: { seq, campaignKey: `k${campaignId}`, goodsId: '1', salesStatus: 'SOLD_OUT', adminName: null, updatedAt: 0 },
  };
}

/** A notifier attached to a namespace whose rooms hold a viewer for each of `campaigns`; what it sends is recorded. */
function notifierFor(campaigns: number[], clustered = false) {
  const rooms = new Map(campaigns.map((id) => [roomOf(id), new Set([`viewer-${id}`])]));
  const emitter = new EventEmitter();
  const serverSideEmit = jest.fn();
  /** The rooms this node disconnected its own viewers of. */
  const disconnected: string[] = [];
  const namespace = {
    in: (room: string) => ({ local: { disconnectSockets: () => disconnected.push(room) } }),
    name: '/live',
    server: { encoder: new Encoder() },
    sockets: new Map(),
    adapter: Object.assign(new EventEmitter(), { rooms }),
    on: emitter.on.bind(emitter),
    serverSideEmit,
  } as unknown as Namespace;
  const counter = () => ({ inc: jest.fn() });
  const metrics = { liveEventsPublished: counter(), liveEventsDelivered: counter(), liveDeliveryLatency: { observe: jest.fn() } };
  // Every campaign exists, at seq 0 unless a test says otherwise (a campaign missing from lastSeqs was deleted).
  const source = {
    lastSeqs: jest.fn((ids: number[]) => Promise.resolve(new Map(ids.map((id) => [id, 0])))),
    eventsSince: jest.fn(),
  } as unknown as LiveSource;
  const config = { redis: { url: clustered ? 'redis://127.0.0.1:6379' : '' } } as unknown as AppConfig;
  const notifier = new LiveNotifier(config, source, metrics as unknown as Metrics);
  const sent: Array<{ room: string; seqs: number[] }> = [];
  /** What the gateway is told (`changed 1`: an event of campaign 1 came) and the room writes, in order. */
  const order: string[] = [];
  // Each room written to one viewer at once (LiveFanout's own spec covers deliveries over several turns).
  const spy = jest
    .spyOn(LiveFanout.prototype, 'toRoom')
    .mockImplementation((room: string, events: ReadonlyArray<RoomEvent>, done?: (reached: number) => void) => {
      sent.push({ room, seqs: events.map((e) => (e.payload as { seq: number }).seq) });
      order.push(`write ${room}`);
      done?.(1);
    });
  notifier.attach(
    namespace,
    () => Promise.resolve(),
    (campaignId) => order.push(`changed ${campaignId}`),
  );
  // The events another node sends over Redis, as the adapter hands them to this node.
  const fromOtherNode = (events: LiveEvent[]) => emitter.emit(CLUSTER_EVENTS, events);
  return {
    notifier,
    sent,
    order,
    serverSideEmit,
    metrics,
    fromOtherNode,
    source,
    disconnected,
    restore: () => spy.mockRestore(),
    stop: () => notifier.onModuleDestroy(),
  };
}

describe('LiveNotifier', () => {
  let cleanup: Array<() => void> = [];
  afterEach(() => {
    for (const fn of cleanup) fn();
    cleanup = [];
  });
  const make = (campaigns: number[], clustered = false) => {
    const made = notifierFor(campaigns, clustered);
    cleanup.push(made.restore, made.stop);
    return made;
  };

  it('sends what was published in one turn together on the next: one write to each room, in publish order', async () => {
    const { notifier, sent, metrics } = make([1, 2]);
    notifier.publish([event(1, 5)]);
    notifier.publish([event(2, 9), event(1, 6)]);
    notifier.publish([event(1, 7)]);
    expect(sent).toEqual([]); // not before the HTTP answer's turn is over
    await nextTurn();
    expect(sent).toEqual([
      { room: roomOf(1), seqs: [5, 6, 7] },
      { room: roomOf(2), seqs: [9] },
    ]);
    expect(metrics.liveEventsPublished.inc.mock.calls).toEqual([[1], [2], [1]]);
    expect(metrics.liveEventsDelivered.inc.mock.calls.flat().reduce((a: number, b: number) => a + b, 0)).toBe(4);
    expect(metrics.liveDeliveryLatency.observe).toHaveBeenCalledTimes(4);
  });

  it('does not hold an event for later ones: each turn sends what it has', async () => {
    const { notifier, sent } = make([1]);
    notifier.publish([event(1, 1)]);
    await nextTurn();
    notifier.publish([event(1, 2)]);
    await nextTurn();
    expect(sent).toEqual([
      { room: roomOf(1), seqs: [1] },
      { room: roomOf(1), seqs: [2] },
    ]);
  });

  it('with Redis, hands the events of one turn to the other nodes in one message, in publish order', async () => {
    const { notifier, serverSideEmit, sent } = make([1, 2], true);
    notifier.publish([event(1, 3)]);
    notifier.publish([event(2, 4), event(1, 4)]);
    await nextTurn();
    expect(serverSideEmit).toHaveBeenCalledTimes(1);
    expect(serverSideEmit.mock.calls[0][0]).toBe(CLUSTER_EVENTS);
    expect((serverSideEmit.mock.calls[0][1] as LiveEvent[]).map((e) => [e.campaignId, e.seq])).toEqual([
      [1, 3],
      [2, 4],
      [1, 4],
    ]);
    expect(sent).toEqual([
      { room: roomOf(1), seqs: [3, 4] },
      { room: roomOf(2), seqs: [4] },
    ]);
  });

  it('writes the messages from other nodes that arrived in one turn together on its check phase, in seq order, dropping what it already wrote', async () => {
    const { sent, fromOtherNode } = make([1, 2], true);
    fromOtherNode([event(1, 10), event(1, 11)]);
    fromOtherNode([event(2, 3), event(1, 12)]);
    expect(sent).toEqual([]);
    await nextTurn();
    expect(sent).toEqual([
      { room: roomOf(1), seqs: [10, 11, 12] },
      { room: roomOf(2), seqs: [3] },
    ]);
    fromOtherNode([event(1, 12), event(1, 13)]);
    await nextTurn();
    expect(sent.slice(2)).toEqual([{ room: roomOf(1), seqs: [13] }]);
  });

  it('an event ahead of its turn waits, then goes out with the ones that were missing', async () => {
    const { sent, fromOtherNode } = make([1], true);
    fromOtherNode([event(1, 1)]);
    await nextTurn();
    fromOtherNode([event(1, 3)]); // 2 is missing: 3 waits
    await nextTurn();
    expect(sent).toEqual([{ room: roomOf(1), seqs: [1] }]);
    fromOtherNode([event(1, 2)]);
    await nextTurn();
    expect(sent).toEqual([
      { room: roomOf(1), seqs: [1] },
      { room: roomOf(1), seqs: [2, 3] },
    ]);
  });

  it('a campaign found deleted when filling a gap (its delete never reached this node): its viewers here get what was held, then NOT_EXIST, then are disconnected', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const { sent, fromOtherNode, source, disconnected } = make([1], true);
      fromOtherNode([event(1, 1)]);
      await nextTurn();
      (source.lastSeqs as jest.Mock).mockResolvedValue(new Map());
      fromOtherNode([event(1, 3)]); // 2 is missing: the log is read, and the campaign is gone
      await jest.advanceTimersByTimeAsync(2000);
      // 3, held behind the gap that can no longer be filled, goes out past it; NOT_EXIST follows it.
      expect(sent).toEqual([
        { room: roomOf(1), seqs: [1] },
        { room: roomOf(1), seqs: [3, 4] },
      ]);
      expect(disconnected).toEqual([roomOf(1)]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('ignores a malformed message from another node', async () => {
    const { sent, fromOtherNode } = make([1], true);
    (fromOtherNode as (events: unknown) => void)({ not: 'a list' });
    await nextTurn();
    expect(sent).toEqual([]);
  });

  it('sends nothing to a campaign nobody watches here', async () => {
    const { notifier, sent } = make([1]);
    notifier.publish([event(2, 1)]);
    await nextTurn();
    expect(sent).toEqual([]);
  });

  it('tells the gateway of an event as soon as it is published or comes from another node, and again right before it goes to the room', async () => {
    const { notifier, order, fromOtherNode } = make([1, 2], true);
    notifier.publish([event(1, 5)]);
    expect(order).toEqual(['changed 1']); // at once, not on the next turn
    fromOtherNode([event(2, 3), event(1, 4)]);
    expect(order).toEqual(['changed 1', 'changed 2', 'changed 1']);
    await nextTurn();
    expect(order.slice(3)).toEqual(['changed 2', `write ${roomOf(2)}`, 'changed 1', `write ${roomOf(1)}`]);
    // An event that waited for a missing one is announced again when it finally goes out.
    fromOtherNode([event(1, 7)]);
    await nextTurn();
    order.length = 0;
    fromOtherNode([event(1, 6)]);
    await nextTurn();
    expect(order).toEqual(['changed 1', 'changed 1', `write ${roomOf(1)}`]);
  });

  it('tells the gateway of an event of a campaign nobody watches here too (a viewer may join it next)', () => {
    const { notifier, order } = make([1]);
    notifier.publish([event(2, 1)]);
    expect(order).toEqual(['changed 2']);
  });
});
