import type { EntityManager } from 'typeorm';
import { isMysql } from '../database/engine';

/** Places written by one UPDATE (see writePlaces). */
const PLACES_PER_STATEMENT = 400;

/**
 * Gives these goods of a campaign their new places: one UPDATE (a CASE of the places) per
 * PLACES_PER_STATEMENT goods, not one per goods item (a reorder of 1,000 goods held the event loop about
 * 250 ms on SQLite statement by statement).
 */
export async function writePlaces(em: EntityManager, campaignId: number, moves: ReadonlyArray<{ goodsId: number; place: number }>): Promise<void> {
  for (let i = 0; i < moves.length; i += PLACES_PER_STATEMENT) {
    const chunk = moves.slice(i, i + PLACES_PER_STATEMENT);
    await em.query(
      `UPDATE campaign_goods SET sortOrder = CASE goodsId ${chunk.map(() => 'WHEN ? THEN ?').join(' ')} END ` +
        `WHERE campaignId = ? AND goodsId IN (${chunk.map(() => '?').join(', ')})`,
      [...chunk.flatMap((m) => [m.goodsId, m.place]), campaignId, ...chunk.map((m) => m.goodsId)],
    );
  }
}

/**
 * Gives the goods of a campaign the places 1..n again, keeping their order (sortOrder, then goodsId, as
 * every list reads them): run in the transaction that removed goods from it, so that no reader ever sees
 * a gap. One UPDATE per campaign on SQLite, one per 400 moved goods on MySQL, touching only rows whose place changes.
 */
export async function renumberCampaignGoods(em: EntityManager, campaignId: number): Promise<void> {
  if (isMysql(em)) {
    // The places are computed here, then written (writePlaces): joined as a derived table, MariaDB
    // may materialize it again as the rows are written, numbering rows it has already moved.
    const rows = await em.query<Array<{ goodsId: number | string; sortOrder: number | string }>>(
      'SELECT goodsId, sortOrder FROM campaign_goods WHERE campaignId = ? ORDER BY sortOrder, goodsId',
      [campaignId],
    );
    await writePlaces(
      em,
      campaignId,
      rows.map((r, i) => ({ goodsId: Number(r.goodsId), place: i + 1, was: Number(r.sortOrder) })).filter((m) => m.was !== m.place),
    );
    return;
  }
  await em.query(
    `UPDATE campaign_goods SET sortOrder = ranked.place
       FROM (SELECT goodsId, ROW_NUMBER() OVER (ORDER BY sortOrder, goodsId) AS place
               FROM campaign_goods WHERE campaignId = ?) AS ranked
      WHERE campaign_goods.campaignId = ? AND campaign_goods.goodsId = ranked.goodsId AND campaign_goods.sortOrder <> ranked.place`,
    [campaignId, campaignId],
  );
}
