import { MigrationInterface, QueryRunner } from 'typeorm';
import { mysqlColumnType } from './steps';

/**
 * campaign_events.payload as MEDIUMTEXT (16 MB) on MySQL/MariaDB, where TEXT held 64 KB: the goods.list of
 * a campaign of about 180 goods, or a goods.update of about 170, was over it ("Data too long"), so adding
 * goods was a 500 and a bulk catalog write's goods.update was lost. SQLite's TEXT has no such limit: there
 * this does nothing. How large a payload gets, and what happens past what the column holds, is told at
 * MAX_LOGGED_PAYLOAD_BYTES (src/campaigns/campaign-event-log.ts).
 */
export class WidenCampaignEventPayload1765000000000 implements MigrationInterface {
  name = 'WidenCampaignEventPayload1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') return;
    // Run again after a cut: the table is not copied a second time.
    if ((await mysqlColumnType(queryRunner, 'campaign_events', 'payload')) === 'mediumtext') return;
    await queryRunner.query('ALTER TABLE `campaign_events` MODIFY `payload` MEDIUMTEXT NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') return;
    // Events over 64 KB would not fit TEXT (MariaDB would refuse, or cut them in non-strict mode): the
    // log only serves resyncs, and a viewer whose events are gone gets a snapshot, so they are dropped.
    await queryRunner.query('DELETE FROM `campaign_events` WHERE LENGTH(`payload`) > 65535');
    await queryRunner.query('ALTER TABLE `campaign_events` MODIFY `payload` TEXT NOT NULL');
  }
}
