import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Gives the goods of every campaign the places 1..n again, keeping their order (sortOrder, then goodsId):
 * removals used to leave gaps (1, 3, 4 after the second item left), where sortOrder is documented as the
 * 1-based place in the campaign. Removals renumber since; this closes the gaps they left before. A data
 * migration only: there is nothing to undo (the old gaps carried no meaning).
 */
export class RenumberCampaignGoods1764900000000 implements MigrationInterface {
  name = 'RenumberCampaignGoods1764900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') {
      await queryRunner.query(
        `UPDATE campaign_goods SET sortOrder = ranked.place
           FROM (SELECT campaignId, goodsId, ROW_NUMBER() OVER (PARTITION BY campaignId ORDER BY sortOrder, goodsId) AS place
                   FROM campaign_goods) AS ranked
          WHERE campaign_goods.campaignId = ranked.campaignId AND campaign_goods.goodsId = ranked.goodsId
            AND campaign_goods.sortOrder <> ranked.place`,
      );
      return;
    }
    // The places are computed whole into a temporary table first: joined as a derived table, MariaDB may
    // materialize it per campaign as the rows are written (split materialization), numbering rows it has
    // already moved, which gave two goods one place.
    await queryRunner.query('DROP TEMPORARY TABLE IF EXISTS campaign_goods_places');
    await queryRunner.query(
      `CREATE TEMPORARY TABLE campaign_goods_places (PRIMARY KEY (campaignId, goodsId))
         SELECT campaignId, goodsId, ROW_NUMBER() OVER (PARTITION BY campaignId ORDER BY sortOrder, goodsId) AS place
           FROM campaign_goods`,
    );
    try {
      await queryRunner.query(
        `UPDATE campaign_goods cg
           JOIN campaign_goods_places ranked ON ranked.campaignId = cg.campaignId AND ranked.goodsId = cg.goodsId
            SET cg.sortOrder = ranked.place
          WHERE cg.sortOrder <> ranked.place`,
      );
    } finally {
      await queryRunner.query('DROP TEMPORARY TABLE IF EXISTS campaign_goods_places');
    }
  }

  async down(): Promise<void> {
    // The gaps are not restored: they meant nothing.
  }
}
