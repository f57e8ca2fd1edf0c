import type { EntityManager } from 'typeorm';
import { isMysql } from '../database/engine';

/**
 * Gives the goods of a campaign the places 1..n again, keeping their order (sortOrder, then goodsId, as
 * every list reads them): run in the transaction that removed goods from it, so that no reader ever sees
 * a gap. One UPDATE per campaign, whatever the number of goods, touching only rows whose place changes.
 */
export async function renumberCampaignGoods(em: EntityManager, campaignId: number): Promise<void> {
  if (isMysql(em)) {
    // The derived table (a window function) is materialized before the join writes.
    await em.query(
      `UPDATE campaign_goods cg
         JOIN (SELECT goodsId, ROW_NUMBER() OVER (ORDER BY sortOrder, goodsId) AS place
                 FROM campaign_goods WHERE campaignId = ?) ranked ON ranked.goodsId = cg.goodsId
          SET cg.sortOrder = ranked.place
        WHERE cg.campaignId = ? AND cg.sortOrder <> ranked.place`,
      [campaignId, campaignId],
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
