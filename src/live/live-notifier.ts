import { Injectable, Logger } from '@nestjs/common';
import type { Namespace, Socket } from 'socket.io';
import { AppConfig } from '../config/app-config';
import { LiveEvent, roomOf } from './live-events';
import { FanoutCounts, LiveFanout } from './live-fanout';

/** The server-side event (Redis adapter, `serverSideEmit`) that carries committed events to the other nodes. */
export const CLUSTER_EVENTS = 'livegoods:events';

/**
 * The one way services reach viewers: call publish() with the events a transaction recorded, after it
 * committed. Each node writes to its own viewers (LiveFanout); with REDIS_URL the events first go to the
 * other nodes through the Redis adapter (`serverSideEmit`, one Redis channel, so in publish order), and
 * each of them writes to its viewers in turn.
 */
@Injectable()
export class LiveNotifier {
  private readonly logger = new Logger(LiveNotifier.name);
  private namespace: Namespace | null = null;
  private fanout: LiveFanout | null = null;

  constructor(private readonly config: AppConfig) {}

  attach(namespace: Namespace): void {
    this.namespace = namespace;
    this.fanout = new LiveFanout(namespace);
    if (this.clustered) {
      namespace.on(CLUSTER_EVENTS, (events: unknown) => {
        if (Array.isArray(events)) this.deliver(events as LiveEvent[]);
        else this.logger.warn(`ignored a malformed ${CLUSTER_EVENTS} message from another node`);
      });
    }
  }

  private get clustered(): boolean {
    return Boolean(this.config.redis.url);
  }

  /**
   * Sends on the next turn of the event loop, so that the operator's HTTP answer is not held up by a
   * fan-out to thousands of sockets; callbacks run in order, so events keep their seq order.
   */
  publish(events: LiveEvent[]): void {
    const namespace = this.namespace;
    if (!namespace || !events.length) return;
    setImmediate(() => {
      if (this.clustered) namespace.serverSideEmit(CLUSTER_EVENTS, events);
      this.deliver(events);
    });
  }

  /** Sends one event to one viewer of this node (snapshot, resync), through the same writer as room events. */
  sendTo(socket: Socket, type: string, payload: unknown): void {
    this.fanout?.toSocket(socket, type, payload);
  }

  /** Writes so far on this node: straight to a WebSocket, or through socket.io's queue. */
  get writes(): FanoutCounts {
    return { ...(this.fanout?.counts ?? { direct: 0, engine: 0 }) };
  }

  /** Disconnects every viewer of a campaign (it was deleted), on all nodes. */
  disconnectCampaign(campaignId: number): void {
    this.namespace?.in(roomOf(campaignId)).disconnectSockets(true);
  }

  private deliver(events: LiveEvent[]): void {
    const fanout = this.fanout;
    if (!fanout) return;
    for (const event of events) fanout.toRoom(roomOf(event.campaignId), event.type, event.payload);
  }
}
