/**
 * The viewer protocol of the /live channel (docs/live-protocol.md): every event the server sends and its
 * payload. The live module only delivers; the campaign domain builds these payloads (its response DTOs
 * implement the shapes below), so this file imports nothing from the domains.
 */

export type LiveSalesStatus = 'ON_SALE' | 'ALMOST_SOLD_OUT' | 'SOLD_OUT';

/** A goods item of a campaign in the compact form viewers get. */
export interface LiveGoodsSummary {
  goodsId: string;
  sortOrder: number;
  showingNow: boolean;
  salesStatus: LiveSalesStatus;
  name: string;
  brand: string | null;
  url: string;
  sku: string;
  originalPrice: number | null;
  discountedPrice: number | null;
  discountPercentage: number | null;
  currency: string;
  imageUrl: string | null;
  thumbnailUrl: string | null;
  adminName: string | null;
  updatedAt: number;
  /** Units left (null: not tracked); only when the campaign's showStock is on. */
  stock?: number | null;
}

export interface LiveNotice {
  message: string;
  adminName: string | null;
  createdAt: number;
}

export interface LiveChatLine {
  id: string;
  message: string;
  adminName: string | null;
  createdAt: number;
}

/** The campaign record as viewers get it (the public detail form, without its goods). */
export interface LiveCampaign {
  campaignId: number;
  campaignKey: string;
  campaignStatus: 'READY' | 'ONAIR' | 'CLOSED';
  title: string;
  description?: string | null;
  scheduledAt: number | null;
  scheduledEndAt: number | null;
  startedAt: number | null;
  endedAt: number | null;
  posterUrl: string | null;
  liveUrl: string | null;
  operatorName: string | null;
  collectionVisible: boolean;
  showStock: boolean;
  notice: LiveNotice | null;
  userCount: number;
  createdAt: number;
  updatedAt: number;
  goods?: LiveGoodsSummary[];
}

export interface LiveEventMap {
  'campaign.snapshot': {
    seq: number;
    campaign: LiveCampaign;
    goods: LiveGoodsSummary[];
    notice: LiveNotice | null;
    chat: LiveChatLine[];
  };
  'goods.salesStatus': {
    seq: number;
    campaignKey: string;
    goodsId: string;
    salesStatus: LiveSalesStatus;
    adminName: string | null;
    updatedAt: number;
  };
  /** A stock change of an item, only in campaigns with showStock on (its status change, if any, comes as goods.salesStatus). */
  'goods.stock': { seq: number; campaignKey: string; goodsId: string; stock: number | null; updatedAt: number };
  'goods.list': { seq: number; goods: LiveGoodsSummary[] };
  /** Catalog edits (name, prices, image, …) of goods in the campaign: the changed items' summaries, in sortOrder. */
  'goods.update': { seq: number; goods: LiveGoodsSummary[] };
  'chat.notice': { seq: number; message: string; adminName: string | null; createdAt: number };
  'chat.message': { seq: number; id: string; message: string; adminName: string | null; createdAt: number };
  /** An edit of the campaign's fields (title, description, poster, schedule, settings): the whole record, as in the snapshot. */
  'campaign.update': { seq: number; campaign: LiveCampaign };
  'campaign.status': { seq: number; campaignStatus: LiveCampaign['campaignStatus'] | 'NOT_EXIST'; startedAt: number | null; endedAt: number | null };
}

export type LiveEventType = keyof LiveEventMap;

/** Events that go into the log and carry a seq (everything but the snapshot). */
export type LoggedEventType = Exclude<LiveEventType, 'campaign.snapshot'>;

export type EventPayload<T extends LoggedEventType> = Omit<LiveEventMap[T], 'seq'>;

/** An event before it has a seq. */
export type PendingEvent = { [T in LoggedEventType]: { type: T; payload: EventPayload<T> } }[LoggedEventType];

/** An event as recorded and pushed: its campaign, its seq, and its payload (which carries the seq too). */
export type LiveEvent = {
  [T in LoggedEventType]: {
    campaignId: number;
    seq: number;
    type: T;
    payload: LiveEventMap[T];
    /** When the publishing node published it (ms since the epoch), for the delivery-latency metric; never sent to viewers. */
    publishedAt?: number;
  };
}[LoggedEventType];

/**
 * Events for operators only (sockets admitted with role 'operator'), sent to their customer's
 * operators room on every node; never logged, never replayed.
 */
export interface OperatorEventMap {
  /** A spreadsheet import job's progress (at most ~2 a second per job, and once in each final state). */
  'import.progress': {
    jobId: number;
    state: 'queued' | 'running' | 'succeeded' | 'failed';
    rowsDone: number;
    rowsTotal: number | null;
    createCount: number;
    updateCount: number;
    failCount: number;
    /** Why a failed job failed; null otherwise. */
    error: string | null;
  };
}

/** What a client may send. */
export interface LiveClientEvents {
  resync: { sinceSeq: number };
}

export const roomOf = (campaignId: number): string => `campaign:${campaignId}`;

/** The room of a customer's operator sockets (whatever campaign they watch). */
export const operatorRoomOf = (customerId: number): string => `operators:${customerId}`;
