import { Injectable } from '@nestjs/common';
import { Between, EntityManager, In } from 'typeorm';
import { CampaignEvent } from './entities/campaign-event.entity';
import { Campaign } from './entities/campaign.entity';
import { LiveEvent, PendingEvent } from '../live/live-events';
import { isMysql } from '../database/engine';

/** Events kept per campaign for resync; a viewer further behind gets a fresh snapshot instead. */
export const EVENTS_KEPT = 500;

/**
 * Gives events their seq and records them, inside the caller's transaction. The seq comes from the
 * campaign row (`lastSeq`), so it is one sequence across all nodes; the row lock taken by that update
 * orders concurrent writers (which hold it already: CampaignWriter locks the campaign first). Publishing happens after commit (LiveNotifier).
 */
@Injectable()
export class CampaignEventLog {
  async record(em: EntityManager, campaignId: number, events: PendingEvent[]): Promise<LiveEvent[]> {
    if (!events.length) return [];
    const last = await this.advance(em, campaignId, events.length);
    const first = last - events.length + 1;
    const now = new Date();
    // Each event keeps its own type and payload, now with its seq.
    const recorded = events.map((e, i) => ({ campaignId, seq: first + i, type: e.type, payload: { seq: first + i, ...e.payload } }) as LiveEvent);
    await em.insert(
      CampaignEvent,
      recorded.map((e) => Object.assign(new CampaignEvent(), { campaignId, seq: e.seq, type: e.type, payload: JSON.stringify(e.payload), createdAt: now })),
    );
    // Trim the log now and then (every 100 events), keeping the last EVENTS_KEPT.
    if (Math.floor(last / 100) !== Math.floor((first - 1) / 100) && last > EVENTS_KEPT) {
      await em.query('DELETE FROM campaign_events WHERE campaignId = ? AND seq <= ?', [campaignId, last - EVENTS_KEPT]);
    }
    return recorded;
  }

  /**
   * Moves the campaign's lastSeq on by `count` and answers the new one, from the UPDATE itself (RETURNING
   * on SQLite, LAST_INSERT_ID(expr) on MySQL: the OK packet's insert id): one statement while the
   * campaign's row lock is held, not an UPDATE and a SELECT.
   */
  private async advance(em: EntityManager, campaignId: number, count: number): Promise<number> {
    if (isMysql(em)) {
      const done: { insertId: number | string } = await em.query('UPDATE campaigns SET lastSeq = LAST_INSERT_ID(lastSeq + ?) WHERE id = ?', [
        count,
        campaignId,
      ]);
      return Number(done.insertId);
    }
    const rows: Array<{ lastSeq: number | string }> = await em.query('UPDATE campaigns SET lastSeq = lastSeq + ? WHERE id = ? RETURNING lastSeq', [
      count,
      campaignId,
    ]);
    return Number(rows[0]?.lastSeq ?? count);
  }

  /**
   * Events after `sinceSeq` up to `lastSeq`, in order; null when some of them are no longer kept, or when
   * together they are bigger than `maxBytes` (of JSON): then a snapshot is the cheaper answer. The last
   * EVENTS_KEPT are kept: a viewer further behind gets null even while older rows wait for the next trim,
   * so what a resync answers does not depend on when the log was last trimmed.
   */
  async since(em: EntityManager, campaignId: number, sinceSeq: number, lastSeq: number, maxBytes = Infinity): Promise<LiveEvent[] | null> {
    if (sinceSeq >= lastSeq) return [];
    if (lastSeq - sinceSeq > EVENTS_KEPT) return null;
    const rows = await em.find(CampaignEvent, {
      where: { campaignId, seq: Between(sinceSeq + 1, lastSeq) },
      order: { seq: 'ASC' },
    });
    if (!rows.length || rows[0].seq !== sinceSeq + 1 || rows[rows.length - 1].seq !== lastSeq) return null;
    let bytes = 0;
    for (const r of rows) if ((bytes += r.payload.length) > maxBytes) return null;
    return rows.map((r) => ({ campaignId, seq: r.seq, type: r.type, payload: JSON.parse(r.payload) as unknown }) as LiveEvent);
  }

  /** The current seq of each campaign (the last event recorded); campaigns that are gone are absent. */
  async lastSeqs(em: EntityManager, campaignIds: number[]): Promise<Map<number, number>> {
    if (!campaignIds.length) return new Map();
    const rows = await em.find(Campaign, { select: { id: true, lastSeq: true }, where: { id: In(campaignIds) } });
    return new Map(rows.map((c) => [c.id, c.lastSeq]));
  }
}
