import type { CampaignGoodsSummary, ChatLineResponse, CampaignResponse, NoticeResponse } from '../campaigns/dto/campaign-response.dto';

/**
 * The viewer protocol (CONTRACT §7): every event the server sends on /live and its payload. `seq` grows
 * by one per event per campaign, across all nodes.
 */
export interface LiveEventMap {
  'campaign.snapshot': {
    seq: number;
    campaign: CampaignResponse;
    goods: CampaignGoodsSummary[];
    notice: NoticeResponse | null;
    chat: ChatLineResponse[];
  };
  'goods.salesStatus': {
    seq: number;
    campaignKey: string;
    goodsId: string;
    salesStatus: string;
    adminName: string | null;
    updatedAt: number;
  };
  'goods.list': { seq: number; goods: CampaignGoodsSummary[] };
  'chat.notice': { seq: number; message: string; adminName: string | null; createdAt: number };
  'chat.message': { seq: number; id: string; message: string; adminName: string | null; createdAt: number };
  'campaign.status': { seq: number; campaignStatus: string; startedAt: number | null; endedAt: number | null };
}

/** Events that go into the log and carry a seq (everything but the snapshot). */
export type LoggedEventType = Exclude<keyof LiveEventMap, 'campaign.snapshot'>;

export type EventPayload<T extends LoggedEventType> = Omit<LiveEventMap[T], 'seq'>;

/** An event before it has a seq. */
export type PendingEvent = { [T in LoggedEventType]: { type: T; payload: EventPayload<T> } }[LoggedEventType];

/** An event as recorded and pushed. */
export interface LiveEvent {
  campaignId: number;
  seq: number;
  type: LoggedEventType;
  payload: Record<string, unknown> & { seq: number };
}

/** What a client may send. */
export interface LiveClientEvents {
  resync: { sinceSeq: number };
}

export const roomOf = (campaignId: number): string => `campaign:${campaignId}`;
