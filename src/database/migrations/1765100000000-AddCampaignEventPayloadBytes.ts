import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce } from './steps';

/**
 * campaign_events.payloadBytes: the size of each logged payload in bytes (UTF-8), so that a resync can tell
 * from the sizes alone whether the events it asks for fit its limit, and the log can be trimmed by bytes
 * (BYTES_KEPT), without reading the payloads (src/campaigns/campaign-event-log.ts): a resync from 500
 * events back used to load all of them (up to 360 MB) before finding them too big. Existing events get their
 * sizes here (LENGTH counts bytes on MySQL/MariaDB; SQLite counts characters, but bytes of a BLOB).
 *
 * On SQLite the table is rebuilt with the column before `payload`: SQLite keeps a record's columns in
 * order, and reading one that comes after a large payload walks that payload's overflow pages.
 */
export class AddCampaignEventPayloadBytes1765100000000 implements MigrationInterface {
  name = 'AddCampaignEventPayloadBytes1765100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type !== 'better-sqlite3') {
      await addColumnsOnce(queryRunner, 'campaign_events', [new TableColumn({ name: 'payloadBytes', type: 'integer' })]);
      await queryRunner.query('UPDATE `campaign_events` SET `payloadBytes` = LENGTH(`payload`)');
      return;
    }
    await queryRunner.query(
      'CREATE TABLE "temporary_campaign_events" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "campaignId" bigint NOT NULL, "seq" bigint NOT NULL, ' +
        '"type" varchar(32) NOT NULL, "payloadBytes" integer NOT NULL, "payload" text NOT NULL, "createdAt" datetime(3) NOT NULL, ' +
        'CONSTRAINT "FK_campaign_events_campaign" FOREIGN KEY ("campaignId") REFERENCES "campaigns" ("id") ON DELETE CASCADE ON UPDATE CASCADE)',
    );
    await queryRunner.query(
      'INSERT INTO "temporary_campaign_events" ("id", "campaignId", "seq", "type", "payloadBytes", "payload", "createdAt") ' +
        'SELECT "id", "campaignId", "seq", "type", LENGTH(CAST("payload" AS BLOB)), "payload", "createdAt" FROM "campaign_events"',
    );
    await queryRunner.query('DROP INDEX "UQ_campaign_events_seq"');
    await queryRunner.query('DROP TABLE "campaign_events"');
    await queryRunner.query('ALTER TABLE "temporary_campaign_events" RENAME TO "campaign_events"');
    await queryRunner.query('CREATE UNIQUE INDEX "UQ_campaign_events_seq" ON "campaign_events" ("campaignId", "seq") ');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') {
      // In place, as SQLite allows (the column is in no index or constraint).
      await queryRunner.query('ALTER TABLE "campaign_events" DROP COLUMN "payloadBytes"');
      return;
    }
    await dropColumnsOnce(queryRunner, 'campaign_events', ['payloadBytes']);
  }
}
