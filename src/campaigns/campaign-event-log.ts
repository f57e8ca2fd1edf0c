import { Injectable, Logger } from '@nestjs/common';
import { Between, EntityManager, In } from 'typeorm';
import { CampaignEvent } from './entities/campaign-event.entity';
import { Campaign } from './entities/campaign.entity';
import { LiveEvent, PendingEvent } from '../live/live-events';
import { isMysql } from '../database/engine';

/** Events kept per campaign for resync; a viewer further behind gets a fresh snapshot instead. */
export const EVENTS_KEPT = 500;

/**
 * Bytes of payload (JSON) kept per campaign for resync, besides EVENTS_KEPT: the newest events whose
 * payloads add up to at most this (or the newest alone, when it is larger: up to MAX_LOGGED_PAYLOAD_BYTES).
 * Counting events alone kept 500 of any size: 500 goods.list of a campaign of 1,000 goods (~720 KB each,
 * one per showingNow toggle) took 360 MB. A resync replays at most 256 KB (RESYNC_MAX_REPLAY_BYTES,
 * src/live/live.gateway.ts), always up to the newest event, so it never reaches past what this keeps
 * (four times as much); a resync from further back gets a snapshot, as for events past EVENTS_KEPT.
 * Between two trims the log grows by less than BYTES_KEPT (TRIM_EVERY), so a campaign's log stays under
 * 2 MB of payloads (more only when its newest event alone is larger).
 */
export const BYTES_KEPT = 1024 * 1024;

/**
 * The log is trimmed every TRIM_EVERY events, and after every write of events that add up to at least
 * BYTES_KEPT / TRIM_EVERY bytes: fewer than TRIM_EVERY smaller ones come in between, under BYTES_KEPT.
 */
const TRIM_EVERY = 100;

/**
 * The largest payload (bytes of JSON) the log keeps; a larger one is recorded with an empty payload (it
 * still takes its seq and is pushed whole to the viewers): a resync that reaches it gets a snapshot, as
 * for events no longer kept. The recording transaction thus never fails on the payload's size.
 *
 * What a goods.list (or goods.update) of n goods weighs, from the field limits (docs/api-reference.md,
 * Goods and Campaign goods summary; measured with JSON.stringify):
 * - typical goods (a 25-character name, a 35-character url, images): ~550 B a summary, so 0.55 MB at
 *   1,000 goods and 5.5 MB at CAMPAIGN_MAX_GOODS' ceiling of 10,000;
 * - every field at its limit in Hangul or other 3-byte text (name, brand and adminName 255 characters,
 *   sku 128, a 2,048-character url, 20-digit ids, image links on a 267-character base URL): ~5.9 KB a
 *   summary, 5.9 MB at 1,000 goods, 59 MB at 10,000;
 * - the same in control characters (JSON writes each as \u00XX, 6 bytes): ~18.8 KB a summary, 18.8 MB
 *   at 1,000 goods.
 * So MEDIUMTEXT (16,777,215 bytes; 1765000000000-WidenCampaignEventPayload) holds the goods.list of every
 * campaign of typical goods up to 10,000 and of any goods up to 1,000 in 3-byte text, but not the worst
 * case of 10,000: no column type helps there, as MariaDB's default max_allowed_packet (16 MB) bounds the
 * INSERT itself, whose text escapes every quote and backslash of the JSON (up to twice its size). Hence
 * this limit: 7 MB, which doubled is still under 16 MB, on both engines alike.
 */
export const MAX_LOGGED_PAYLOAD_BYTES = 7 * 1024 * 1024;

/**
 * Gives events their seq and records them, inside the caller's transaction. The seq comes from the
 * campaign row (`lastSeq`), so it is one sequence across all nodes; the row lock taken by that update
 * orders concurrent writers (which hold it already: CampaignWriter locks the campaign first). Publishing happens after commit (LiveNotifier).
 */
@Injectable()
export class CampaignEventLog {
  private readonly logger = new Logger(CampaignEventLog.name);

  async record(em: EntityManager, campaignId: number, events: PendingEvent[]): Promise<LiveEvent[]> {
    if (!events.length) return [];
    const last = await this.advance(em, campaignId, events.length);
    const first = last - events.length + 1;
    const now = new Date();
    // Each event keeps its own type and payload, now with its seq.
    const recorded = events.map((e, i) => ({ campaignId, seq: first + i, type: e.type, payload: { seq: first + i, ...e.payload } }) as LiveEvent);
    const rows = recorded.map((e) => {
      const payload = this.logged(e);
      return Object.assign(new CampaignEvent(), { campaignId, seq: e.seq, type: e.type, payload, payloadBytes: Buffer.byteLength(payload), createdAt: now });
    });
    await em.insert(CampaignEvent, rows);
    const bytes = rows.reduce((sum, r) => sum + r.payloadBytes, 0);
    const counted = Math.floor(last / TRIM_EVERY) !== Math.floor((first - 1) / TRIM_EVERY);
    if (counted || bytes >= BYTES_KEPT / TRIM_EVERY) await this.trim(em, campaignId, last, counted);
    return recorded;
  }

  /**
   * Drops the events past BYTES_KEPT (the newest whose payloads add up to at most that stay), and with
   * `counted` those past EVENTS_KEPT. Reads the sizes of the last EVENTS_KEPT events, not their payloads.
   */
  private async trim(em: EntityManager, campaignId: number, last: number, counted: boolean): Promise<void> {
    const sizes: Array<{ seq: number | string; payloadBytes: number | string }> = await em.query(
      'SELECT seq, payloadBytes FROM campaign_events WHERE campaignId = ? AND seq > ? ORDER BY seq DESC',
      [campaignId, last - EVENTS_KEPT],
    );
    let through = counted ? last - EVENTS_KEPT : 0;
    let bytes = 0;
    for (const { seq, payloadBytes } of sizes) {
      // The newest event stays even when it alone is larger (up to MAX_LOGGED_PAYLOAD_BYTES).
      if ((bytes += Number(payloadBytes)) > BYTES_KEPT && Number(seq) !== last) {
        through = Number(seq);
        break;
      }
    }
    if (through > 0) await em.query('DELETE FROM campaign_events WHERE campaignId = ? AND seq <= ?', [campaignId, through]);
  }

  /** The payload's JSON as the log keeps it: empty past MAX_LOGGED_PAYLOAD_BYTES (see there). */
  private logged(event: LiveEvent): string {
    const json = JSON.stringify(event.payload);
    // A JSON string's UTF-8 size is at most 3 bytes per UTF-16 unit: most payloads need no count.
    if (json.length * 3 <= MAX_LOGGED_PAYLOAD_BYTES || Buffer.byteLength(json) <= MAX_LOGGED_PAYLOAD_BYTES) return json;
    this.logger.warn(
      `campaign ${event.campaignId}: ${event.type} seq ${event.seq} is ${Buffer.byteLength(json)} bytes, over ${MAX_LOGGED_PAYLOAD_BYTES}: ` +
        'pushed to viewers but not kept for resync (a resync reaching it gets a snapshot)',
    );
    return '';
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
   * Events after `sinceSeq` up to `lastSeq`, in order; null when some of them are no longer kept (or were
   * too large to keep), or when
   * together they are bigger than `maxBytes` (of JSON): then a snapshot is the cheaper answer. The last
   * EVENTS_KEPT are kept: a viewer further behind gets null even while older rows wait for the next trim,
   * so what a resync answers does not depend on when the log was last trimmed. (Nor does BYTES_KEPT's
   * trimming change it when `maxBytes` is below BYTES_KEPT, as the viewer channel's is: it drops only
   * events that a resync up to `lastSeq` could not replay within `maxBytes` anyway.)
   *
   * Whether the events are all kept and fit `maxBytes` is decided from their sizes (payloadBytes) before
   * any payload is read: a resync from far back must not load up to EVENTS_KEPT payloads to learn that
   * they are too big.
   */
  async since(em: EntityManager, campaignId: number, sinceSeq: number, lastSeq: number, maxBytes = Infinity): Promise<LiveEvent[] | null> {
    if (sinceSeq >= lastSeq) return [];
    if (lastSeq - sinceSeq > EVENTS_KEPT) return null;
    const count = lastSeq - sinceSeq;
    const [sizes]: Array<{ events: number | string; bytes: number | string | null; smallest: number | string | null }> = await em.query(
      'SELECT COUNT(*) AS events, SUM(payloadBytes) AS bytes, MIN(payloadBytes) AS smallest FROM campaign_events WHERE campaignId = ? AND seq > ? AND seq <= ?',
      [campaignId, sinceSeq, lastSeq],
    );
    // Some no longer kept, one too large to keep (an empty payload: MAX_LOGGED_PAYLOAD_BYTES), or too
    // many bytes together: a snapshot instead.
    if (Number(sizes?.events ?? 0) !== count || Number(sizes?.smallest ?? 0) === 0 || Number(sizes?.bytes ?? 0) > maxBytes) return null;
    const rows = await em.find(CampaignEvent, {
      where: { campaignId, seq: Between(sinceSeq + 1, lastSeq) },
      order: { seq: 'ASC' },
    });
    // Trimmed since the sizes were read (by another write): a snapshot as well.
    if (rows.length !== count || rows.some((r) => r.payload === '')) return null;
    return rows.map((r) => ({ campaignId, seq: r.seq, type: r.type, payload: JSON.parse(r.payload) as unknown }) as LiveEvent);
  }

  /** The current seq of each campaign (the last event recorded); campaigns that are gone are absent. */
  async lastSeqs(em: EntityManager, campaignIds: number[]): Promise<Map<number, number>> {
    if (!campaignIds.length) return new Map();
    const rows = await em.find(Campaign, { select: { id: true, lastSeq: true }, where: { id: In(campaignIds) } });
    return new Map(rows.map((c) => [c.id, c.lastSeq]));
  }
}
