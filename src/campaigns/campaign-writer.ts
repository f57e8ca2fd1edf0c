import { randomInt } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { isMysql, sameKey } from '../database/engine';
import { Transactions } from '../database/transactions';
import { CampaignEventLog } from './campaign-event-log';
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

/**
 * The operator name on a status change, notice or chat line: `name` when given, else the operator name
 * stored in the campaign's detail (a status change without a name is signed by the campaign's operator),
 * else the token's `name` claim, else null.
 */
export function adminNameOf(name: string | undefined, campaign: Pick<Campaign, 'operatorName'>, tenant: Tenant): string | null {
  return name?.trim() || campaign.operatorName || tenant.operator.name || null;
}

export function campaignNotFound(campaignKey: string): ApiException {
  return new ApiException(ErrorCode.CampaignNotFound, `Campaign not found: ${campaignKey}`);
}

/**
 * The customer's campaign with exactly this key (locked for the transaction when `forUpdate`, on
 * MySQL; `'share'` locks it in share mode: holders of that run side by side, but never while a writer
 * holds it), or null. Used by the console, the sales-status operations, the public endpoints and the
 * /live channel. The key is compared exactly after the indexed query (see sameKey: MySQL's
 * collation would match another case or trailing spaces).
 */
export async function findCampaignByKey(
  em: EntityManager,
  customerId: number,
  campaignKey: string,
  forUpdate: boolean | 'share' = false,
): Promise<Campaign | null> {
  const qb = em.createQueryBuilder(Campaign, 'c').where('c.customerId = :customerId', { customerId }).andWhere('c.campaignKey = :campaignKey', { campaignKey });
  if (forUpdate && isMysql(em)) qb.setLock(forUpdate === 'share' ? 'pessimistic_read' : 'pessimistic_write');
  const campaign = await qb.getOne();
  return campaign && sameKey(campaign.campaignKey, campaignKey) ? campaign : null;
}

/**
 * Campaign writes share one shape: in a transaction, lock the campaign row (so its writers, and the seq
 * they take, go one at a time), change things, record the resulting viewer events; after commit, push
 * those events. `change` is that shape.
 */
@Injectable()
export class CampaignWriter {
  constructor(
    private readonly transactions: Transactions,
    private readonly log: CampaignEventLog,
    private readonly notifier: LiveNotifier,
  ) {}

  async find(em: EntityManager, tenant: Tenant, campaignKey: string, forUpdate: boolean | 'share' = false): Promise<Campaign> {
    const campaign = await findCampaignByKey(em, tenant.id, campaignKey, forUpdate);
    if (!campaign) throw campaignNotFound(campaignKey);
    return campaign;
  }

  async change<T>(
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
