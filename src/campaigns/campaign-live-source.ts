import { Injectable } from '@nestjs/common';
import { CLOCK_SKEW_SECONDS, TokenRejected, verifyCustomerToken } from '../auth/token-verifier';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
import { Transactions } from '../database/transactions';
import type { LiveEvent, LiveEventMap } from '../live/live-events';
import { LiveAdmission, LiveRefusal, LiveSource } from '../live/live-source';
import { CampaignEventLog } from './campaign-event-log';
import { CampaignViews } from './campaign-views';
import { findCampaignByKey } from './campaign-writer';

/** What the viewer channel reads (see LiveSource): admissions, snapshots and the event log of campaigns. */
@Injectable()
export class CampaignLiveSource implements LiveSource {
  constructor(
    private readonly db: Transactions,
    private readonly customers: CustomersService,
    private readonly views: CampaignViews,
    private readonly log: CampaignEventLog,
    private readonly config: AppConfig,
  ) {}

  async admit(accessKey: string, campaignKey: string, operatorToken?: string): Promise<LiveAdmission> {
    const customer = await this.customers.findByAccessKey(accessKey);
    const campaign = customer ? await findCampaignByKey(this.db.manager, customer.id, campaignKey) : null;
    if (!customer || !campaign) throw new LiveRefusal(`campaign ${campaignKey} not found`);
    let operatorUntil: number | undefined;
    if (operatorToken !== undefined) {
      if (!operatorToken) throw new LiveRefusal("role 'operator' needs the customer's token (auth.token)");
      try {
        const claims = verifyCustomerToken(operatorToken, customer, accessKey, this.config.auth.tokenMaxTtlSeconds);
        operatorUntil = (claims.exp + CLOCK_SKEW_SECONDS) * 1000;
      } catch (err) {
        if (err instanceof TokenRejected) throw new LiveRefusal(`role 'operator': ${err.message}`);
        throw err;
      }
    }
    return { campaignId: campaign.id, customerId: customer.id, currency: customer.currency, counted: operatorToken === undefined, operatorUntil };
  }

  async operatorTokenValid(accessKey: string, token: string): Promise<boolean> {
    let customer: Awaited<ReturnType<CustomersService['findByAccessKey']>>;
    try {
      customer = await this.customers.findByAccessKey(accessKey);
    } catch {
      return true;
    }
    if (!customer) return false;
    try {
      verifyCustomerToken(token, customer, accessKey, this.config.auth.tokenMaxTtlSeconds);
      return true;
    } catch (err) {
      if (err instanceof TokenRejected) return false;
      throw err;
    }
  }

  snapshot(campaignId: number, currency: string, baseUrl: string, userCount: number): Promise<LiveEventMap['campaign.snapshot'] | null> {
    // seq and state from the same instant.
    return this.db.consistentRead((em) => this.views.snapshot(em, campaignId, currency, baseUrl, userCount));
  }

  lastSeqs(campaignIds: number[]): Promise<Map<number, number>> {
    return this.log.lastSeqs(this.db.manager, campaignIds);
  }

  eventsSince(campaignId: number, sinceSeq: number, lastSeq: number, maxBytes?: number): Promise<LiveEvent[] | null> {
    return this.log.since(this.db.manager, campaignId, sinceSeq, lastSeq, maxBytes);
  }
}
