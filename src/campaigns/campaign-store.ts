import { randomInt } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { isMysql } from '../database/engine';
import { Transactions } from '../database/transactions';
import { LiveEventLog } from '../live/live-event-log';
import { LiveEvent, PendingEvent } from '../live/live-events';
import { LiveNotifier } from '../live/live-notifier';
import { Campaign } from './entities/campaign.entity';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A new campaignKey: 16 random alphanumeric characters (95 bits). */
export function newCampaignKey(): string {
  let key = '';
  for (let i = 0; i < 16; i += 1) key += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return key;
}

export function campaignNotFound(campaignKey: string): ApiException {
  return new ApiException(ErrorCode.CampaignNotFound, `Campaign not found: ${campaignKey}`);
}

/**
 * Campaign writes share one shape: in a transaction, lock the campaign row (so its writers, and the seq
 * they take, go one at a time), change things, record the resulting viewer events; after commit, push
 * those events. `mutate` is that shape.
 */
@Injectable()
export class CampaignStore {
  constructor(
    private readonly transactions: Transactions,
    private readonly log: LiveEventLog,
    private readonly notifier: LiveNotifier,
  ) {}

  async find(em: EntityManager, tenant: Tenant, campaignKey: string, forUpdate = false): Promise<Campaign> {
    const qb = em
      .createQueryBuilder(Campaign, 'c')
      .where('c.customerId = :customerId', { customerId: tenant.id })
      .andWhere('c.campaignKey = :campaignKey', { campaignKey });
    if (forUpdate && isMysql(em)) qb.setLock('pessimistic_write');
    const campaign = await qb.getOne();
    if (!campaign) throw campaignNotFound(campaignKey);
    return campaign;
  }

  async mutate<T>(
    tenant: Tenant,
    campaignKey: string,
    work: (em: EntityManager, campaign: Campaign) => Promise<{ result: T; events: PendingEvent[] }>,
  ): Promise<T> {
    const { result, recorded } = await this.transactions.run(async (em) => {
      const campaign = await this.find(em, tenant, campaignKey, true);
      const done = await work(em, campaign);
      return { result: done.result, recorded: await this.log.record(em, campaign.id, done.events) };
    });
    this.publish(recorded);
    return result;
  }

  publish(events: LiveEvent[]): void {
    this.notifier.publish(events);
  }
}
