import { Injectable } from '@nestjs/common';
import type { Namespace } from 'socket.io';
import { LiveEvent, roomOf } from './live-events';

/**
 * The one way services reach viewers: call publish() with the events a transaction recorded, after it
 * committed. With the Redis adapter, every node delivers them to its own viewers.
 */
@Injectable()
export class LiveNotifier {
  private namespace: Namespace | null = null;

  attach(namespace: Namespace): void {
    this.namespace = namespace;
  }

  /**
   * Emits on the next turn of the event loop, so that the operator's HTTP answer is not held up by a
   * broadcast to thousands of sockets; callbacks run in order, so events keep their seq order.
   */
  publish(events: LiveEvent[]): void {
    const namespace = this.namespace;
    if (!namespace || !events.length) return;
    setImmediate(() => {
      for (const event of events) namespace.to(roomOf(event.campaignId)).emit(event.type, event.payload);
    });
  }

  /** Disconnects every viewer of a campaign (it was deleted), on all nodes. */
  disconnectCampaign(campaignId: number): void {
    this.namespace?.in(roomOf(campaignId)).disconnectSockets(true);
  }
}
