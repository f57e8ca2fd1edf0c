import { Injectable, Logger } from '@nestjs/common';

/**
 * Told, on this node, after a change of a customer's campaigns has committed: `campaignId` names the
 * campaign changed, null a change of which campaigns there are (one created). It must not throw and
 * should be quick (it runs before the change answers).
 */
export type CampaignChangeHandler = (customerId: number, campaignId: number | null) => void;

/**
 * Lets other domains hear that a campaign changed without the writers knowing them (the public answers'
 * cache drops what it holds of it: src/public-campaigns/public-answer-cache.ts). Called after commit by
 * every write of a campaign or of its goods places: CampaignWriter.change (console edits, status moves,
 * goods added, removed, reordered or shown, sales status and stock changes, chat and notices, whether or
 * not viewers are told), campaign creation and deletion, a catalog delete of goods it holds
 * (CampaignGoodsDeletion) and an order's stock change that took the fast path (StockService). Catalog
 * edits of goods are told by the goods domain's own hooks (GoodsChangeHooks).
 */
@Injectable()
export class CampaignChanges {
  private readonly logger = new Logger(CampaignChanges.name);
  private readonly handlers: CampaignChangeHandler[] = [];

  register(handler: CampaignChangeHandler): void {
    this.handlers.push(handler);
  }

  changed(customerId: number, campaignId: number | null): void {
    for (const handler of this.handlers) {
      try {
        handler(customerId, campaignId);
      } catch (err) {
        this.logger.warn(`after a change of campaign ${campaignId ?? '(new)'}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}
