import type { LiveEvent, LiveEventMap } from './live-events';

/** Who may watch a campaign: what the viewer channel needs to know once a connection is admitted. */
export interface LiveAdmission {
  campaignId: number;
  /** The campaign's customer (operators also join its operators room). */
  customerId: number;
  /** The customer's currency (goods prices in snapshots). */
  currency: string;
  /** false for an operator's console (it showed the customer's token): not counted as a viewer. */
  counted: boolean;
  /** For an operator's console: when its token stops being valid (epoch ms, its `exp` and the clock skew allowed). */
  operatorUntil?: number;
}

/** A connection that may not watch: the message goes to the client as its connect_error. */
export class LiveRefusal extends Error {}

/**
 * What the viewer channel reads, provided by the campaign domain (token LIVE_SOURCE): the live module
 * delivers events and never reads campaign tables itself, so the dependency points one way (campaigns
 * use live to push; live asks campaigns through this port).
 */
export interface LiveSource {
  /** The campaign a connection asks for, or a LiveRefusal (unknown keys, a bad operator token). */
  admit(accessKey: string, campaignKey: string, operatorToken?: string): Promise<LiveAdmission>;
  /**
   * Whether an operator's console token still passes as it did at admission: false once the key that
   * signed it was retired (a rotation with no grace left) or the customer is gone; true when it cannot be
   * told (the database is away: an outage is no reason to cut operators).
   */
  operatorTokenValid(accessKey: string, token: string): Promise<boolean>;
  /** The campaign's state at one instant with the seq of the last event it reflects; null when it is gone. */
  snapshot(campaignId: number, currency: string, baseUrl: string, userCount: number): Promise<LiveEventMap['campaign.snapshot'] | null>;
  /** The current seq of each campaign; campaigns that are gone are absent. */
  lastSeqs(campaignIds: number[]): Promise<Map<number, number>>;
  /**
   * The events after `sinceSeq` up to `lastSeq`, in order; null when the log no longer holds some of
   * them, or when together they are bigger than `maxBytes` of JSON in UTF-8 bytes (a snapshot is then the
   * answer), which is told without reading the events.
   */
  eventsSince(campaignId: number, sinceSeq: number, lastSeq: number, maxBytes?: number): Promise<LiveEvent[] | null>;
}

export const LIVE_SOURCE = Symbol('LiveSource');
