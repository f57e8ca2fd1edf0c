import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableForeignKey, TableIndex } from 'typeorm';
import { createTableOnce, dropTableOnce } from './steps';

const fk = (name: string, column: string, table: string) =>
  new TableForeignKey({
    name,
    columnNames: [column],
    referencedTableName: table,
    referencedColumnNames: ['id'],
    onDelete: 'CASCADE',
    onUpdate: 'CASCADE',
  });

/** Campaigns, their goods, operator chat and the per-campaign event log of the viewer channel. */
export class AddCampaigns1763900000000 implements MigrationInterface {
  name = 'AddCampaigns1763900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const sqlite = queryRunner.connection.driver.options.type === 'better-sqlite3';
    const id: TableColumnOptions = {
      name: 'id',
      type: sqlite ? 'integer' : 'bigint',
      isPrimary: true,
      isGenerated: true,
      generationStrategy: 'increment',
    };
    const at = (name: string, nullable = false): TableColumnOptions => ({ name, type: 'datetime', precision: 3, isNullable: nullable });

    await createTableOnce(
      queryRunner,
      new Table({
        name: 'campaigns',
        columns: [
          id,
          { name: 'customerId', type: 'bigint' },
          { name: 'campaignKey', type: 'varchar', length: '32' },
          { name: 'title', type: 'varchar', length: '255' },
          { name: 'description', type: 'text', isNullable: true },
          at('scheduledAt', true),
          at('scheduledEndAt', true),
          at('startedAt', true),
          at('endedAt', true),
          { name: 'posterUrl', type: 'varchar', length: '2048', isNullable: true },
          { name: 'liveUrl', type: 'varchar', length: '2048', isNullable: true },
          { name: 'campaignStatus', type: 'varchar', length: '16', default: "'READY'" },
          { name: 'operatorName', type: 'varchar', length: '255', isNullable: true },
          { name: 'collectionVisible', type: 'boolean', default: 0 },
          { name: 'noticeMessage', type: 'text', isNullable: true },
          { name: 'noticeAdminName', type: 'varchar', length: '255', isNullable: true },
          at('noticeAt', true),
          { name: 'lastSeq', type: 'bigint', default: 0 },
          at('createdAt'),
          at('updatedAt'),
        ],
        indices: [
          new TableIndex({ name: 'UQ_campaigns_key', columnNames: ['campaignKey'], isUnique: true }),
          new TableIndex({ name: 'IDX_campaigns_customer_schedule', columnNames: ['customerId', 'scheduledAt'] }),
        ],
        foreignKeys: [fk('FK_campaigns_customer', 'customerId', 'customers')],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'campaign_goods',
        columns: [
          { name: 'campaignId', type: 'bigint', isPrimary: true },
          { name: 'goodsId', type: 'bigint', isPrimary: true },
          { name: 'sortOrder', type: 'integer' },
          { name: 'showingNow', type: 'boolean', default: 0 },
          { name: 'salesStatus', type: 'varchar', length: '16', default: "'ON_SALE'" },
          { name: 'adminName', type: 'varchar', length: '255', isNullable: true },
          { name: 'adminId', type: 'varchar', length: '255', default: "''" },
          at('createdAt'),
          at('updatedAt'),
        ],
        indices: [
          new TableIndex({ name: 'IDX_campaign_goods_order', columnNames: ['campaignId', 'sortOrder'] }),
          new TableIndex({ name: 'IDX_campaign_goods_goods', columnNames: ['goodsId'] }),
        ],
        foreignKeys: [fk('FK_campaign_goods_campaign', 'campaignId', 'campaigns'), fk('FK_campaign_goods_goods', 'goodsId', 'goods')],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'campaign_chat',
        columns: [
          id,
          { name: 'campaignId', type: 'bigint' },
          { name: 'message', type: 'text' },
          { name: 'adminName', type: 'varchar', length: '255', isNullable: true },
          at('createdAt'),
        ],
        indices: [new TableIndex({ name: 'IDX_campaign_chat_campaign', columnNames: ['campaignId', 'id'] })],
        foreignKeys: [fk('FK_campaign_chat_campaign', 'campaignId', 'campaigns')],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'campaign_events',
        columns: [
          id,
          { name: 'campaignId', type: 'bigint' },
          { name: 'seq', type: 'bigint' },
          { name: 'type', type: 'varchar', length: '32' },
          { name: 'payload', type: 'text' },
          at('createdAt'),
        ],
        indices: [new TableIndex({ name: 'UQ_campaign_events_seq', columnNames: ['campaignId', 'seq'], isUnique: true })],
        foreignKeys: [fk('FK_campaign_events_campaign', 'campaignId', 'campaigns')],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropTableOnce(queryRunner, 'campaign_events');
    await dropTableOnce(queryRunner, 'campaign_chat');
    await dropTableOnce(queryRunner, 'campaign_goods');
    await dropTableOnce(queryRunner, 'campaigns');
  }
}
