import { randomInt } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { ErrorCode } from '../common/errors/error-codes';
import { isMysql, sameKey } from '../database/engine';
import { Transactions } from '../database/transactions';
import { CampaignChanges } from './campaign-changes';
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
 * The longest a committed change's events wait for the changes of the same campaign queued behind it on
 * this node (see CampaignWriter.change).
 */
export const MAX_EVENT_HOLD_MS = 25;

/** A campaign's changes running on this node, and the events of those that committed while others still ran. */
interface CampaignQueue {
  running: number;
  held: LiveEvent[];
  timer: NodeJS.Timeout | null;
}

/**
 * Campaign writes share one shape: in a transaction, lock the campaign row (so its writers, and the seq
 * they take, go one at a time), change things, record the resulting viewer events; after commit, push
 * those events. `change` is that shape.
 */
@Injectable()
export class CampaignWriter {
  /** Per customer and campaignKey: the changes running on this node (a burst of orders on a hot item). */
  private readonly queues = new Map<string, CampaignQueue>();

  constructor(
    private readonly transactions: Transactions,
    private readonly log: CampaignEventLog,
    private readonly notifier: LiveNotifier,
    private readonly changes: CampaignChanges,
  ) {}

  async find(em: EntityManager, tenant: Tenant, campaignKey: string, forUpdate: boolean | 'share' = false): Promise<Campaign> {
    const campaign = await findCampaignByKey(em, tenant.id, campaignKey, forUpdate);
    if (!campaign) throw campaignNotFound(campaignKey);
    return campaign;
  }

  /**
   * Runs `work` on the campaign in a transaction, then pushes the events it recorded.
   *
   * Changes of one campaign take its row lock one after the other. When more of them run on this node
   * (orders on a hot item), each one's commit lands in a turn of its own, and each would start its own
   * fan-out to every viewer, which holds the event loop (and so the changes queued behind it) for as
   * long: the events of a committed change wait instead for the others running on this node, and go out
   * with those of the last one to finish, or MAX_EVENT_HOLD_MS after the first of them committed. The
   * fan-out then writes them to each viewer at once (LiveNotifier.publish). A change that runs alone is
   * pushed at once, as before.
   */
  async change<T>(
    tenant: Tenant,
    campaignKey: string,
    work: (em: EntityManager, campaign: Campaign) => Promise<{ result: T; events: PendingEvent[] }>,
  ): Promise<T> {
    const id = `${tenant.id}:${campaignKey}`;
    let queue = this.queues.get(id);
    if (!queue) {
      queue = { running: 0, held: [], timer: null };
      this.queues.set(id, queue);
    }
    queue.running += 1;
    let recorded: LiveEvent[] = [];
    try {
      // Database work only (events are pushed after the commit): a deadlock's victim runs again.
      const done = await this.transactions.runAgainOnDeadlock(async (em) => {
        const campaign = await this.find(em, tenant, campaignKey, true);
        const changed = await work(em, campaign);
        return { result: changed.result, campaignId: campaign.id, recorded: await this.log.record(em, campaign.id, changed.events) };
      });
      recorded = done.recorded;
      // Every committed change, told to viewers or not (notify=false): the public answers' cache drops it.
      this.changed(tenant.id, done.campaignId);
      // Stamped at the commit, so that the delivery-latency metric counts a hold too.
      const committedAt = Date.now();
      for (const event of recorded) event.publishedAt = committedAt;
      return done.result;
    } finally {
      queue.running -= 1;
      for (const event of recorded) queue.held.push(event);
      if (queue.running === 0) {
        this.queues.delete(id);
        this.release(queue);
      } else if (queue.held.length && !queue.timer) {
        const held = queue;
        held.timer = setTimeout(() => this.release(held), MAX_EVENT_HOLD_MS);
      }
    }
  }

  /** Pushes what the queue holds, in seq order (one campaign's), and stops its timer. */
  private release(queue: CampaignQueue): void {
    if (queue.timer) clearTimeout(queue.timer);
    queue.timer = null;
    const events = queue.held.sort((a, b) => a.seq - b.seq);
    queue.held = [];
    if (events.length) this.publish(events);
  }

  /**
   * Tells CampaignChanges that a campaign changed (committed), and the live channel, whose shared
   * snapshots of it are then out of date even when no event follows (notify=false).
   */
  changed(customerId: number, campaignId: number | null): void {
    if (campaignId !== null) this.notifier.campaignStored(campaignId);
    this.changes.changed(customerId, campaignId);
  }

  publish(events: LiveEvent[]): void {
    this.notifier.publish(events);
  }
}
