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
   * An import finished: how many rows were created, updated and refused. `source` says which kind (a
   * direct spreadsheet upload today; an import-jobs module records its job completions as `job`, with
   * its `jobId`).
   */
  'import.completed': {
    source: 'spreadsheet' | 'job';
    jobId?: string;
    fileName: string | null;
    total: number;
    created: number;
    updated: number;
    failed: number;
    finishedAt: number;
  };
}

export type WebhookEventType = keyof WebhookEventMap;

export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['goods.salesStatus', 'campaign.status', 'campaign.stockDepleted', 'import.completed'];
