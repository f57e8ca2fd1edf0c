import { Injectable } from '@nestjs/common';
import { EntityManager, MoreThan } from 'typeorm';
import { CampaignEvent } from '../campaigns/entities/campaign-event.entity';
import { Campaign } from '../campaigns/entities/campaign.entity';
import { LiveEvent, PendingEvent } from './live-events';

/** Events kept per campaign for resync; a viewer further behind gets a fresh snapshot instead. */
export const EVENTS_KEPT = 500;

/**
 * Gives events their seq and records them, inside the caller's transaction. The seq comes from the
 * campaign row (`lastSeq`), so it is one sequence across all nodes; the row lock taken by that update
 * orders concurrent writers. Publishing happens after commit (LiveNotifier).
 */
@Injectable()
export class LiveEventLog {
  async record(em: EntityManager, campaignId: number, events: PendingEvent[]): Promise<LiveEvent[]> {
    if (!events.length) return [];
    await em
      .createQueryBuilder()
      .update(Campaign)
      .set({ lastSeq: () => `lastSeq + ${events.length}` })
      .where('id = :id', { id: campaignId })
      .updateEntity(false)
      .execute();
    const rows: Array<{ lastSeq: number | string }> = await em.query('SELECT lastSeq FROM campaigns WHERE id = ?', [campaignId]);
    const last = Number(rows[0]?.lastSeq ?? events.length);
    const first = last - events.length + 1;
    const now = new Date();
    const recorded: LiveEvent[] = events.map((e, i) => ({
      campaignId,
      seq: first + i,
      type: e.type,
      payload: { seq: first + i, ...(e.payload as Record<string, unknown>) },
    }));
    await em.insert(
      CampaignEvent,
      recorded.map((e) =>
        Object.assign(new CampaignEvent(), { campaignId, seq: e.seq, type: e.type, payload: JSON.stringify(e.payload), createdAt: now }),
      ),
    );
    // Trim the log now and then (every 100 events), keeping the last EVENTS_KEPT.
    if (Math.floor(last / 100) !== Math.floor((first - 1) / 100) && last > EVENTS_KEPT) {
      await em.query('DELETE FROM campaign_events WHERE campaignId = ? AND seq <= ?', [campaignId, last - EVENTS_KEPT]);
    }
    return recorded;
  }

  /** Events after `sinceSeq`, in order; null when some of them are no longer kept. */
  async since(em: EntityManager, campaignId: number, sinceSeq: number, lastSeq: number): Promise<LiveEvent[] | null> {
    if (sinceSeq >= lastSeq) return [];
    const rows = await em.find(CampaignEvent, { where: { campaignId, seq: MoreThan(sinceSeq) }, order: { seq: 'ASC' } });
    if (!rows.length || rows[0].seq !== sinceSeq + 1) return null;
    return rows.map((r) => ({ campaignId, seq: r.seq, type: r.type as LiveEvent['type'], payload: JSON.parse(r.payload) }));
  }
}
