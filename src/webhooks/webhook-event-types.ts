/**
 * The events a webhook endpoint can subscribe to, and the `data` each carries (docs/webhooks.md, Events).
 * Every delivery's body is `{id, type, createdAt, data}`.
 */
export interface WebhookEventMap {
  /** A campaign item's sales status changed: by an operator (manual) or derived from its stock (stock). */
  'goods.salesStatus': {
    campaignKey: string;
    goodsId: string;
    salesStatus: 'ON_SALE' | 'ALMOST_SOLD_OUT' | 'SOLD_OUT';
    previousSalesStatus: 'ON_SALE' | 'ALMOST_SOLD_OUT' | 'SOLD_OUT';
    source: 'manual' | 'stock';
    adminName: string | null;
    updatedAt: number;
  };
  /** A campaign moved READY → ONAIR or ONAIR → CLOSED. */
  'campaign.status': {
    campaignKey: string;
    campaignStatus: 'ONAIR' | 'CLOSED';
    previousStatus: 'READY' | 'ONAIR';
    startedAt: number | null;
    endedAt: number | null;
  };
  /** The tracked stock of a campaign item reached 0. */
  'campaign.stockDepleted': { campaignKey: string; goodsId: string; sku: string; updatedAt: number };
  /**
   * An import finished: a spreadsheet upload applied at once (`source: "spreadsheet"`), or an import job
   * (`source: "job"`, with its `jobId`; `state` failed when the job stopped, `error` says why).
   */
  'import.completed': {
    source: 'spreadsheet' | 'job';
    jobId?: number;
    state: 'succeeded' | 'failed';
    fileName: string | null;
    total: number;
    created: number;
    updated: number;
    failed: number;
    error: string | null;
    finishedAt: number;
  };
}

export type WebhookEventType = keyof WebhookEventMap;

export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['goods.salesStatus', 'campaign.status', 'campaign.stockDepleted', 'import.completed'];
