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

/** Webhooks: each customer's endpoints, and the outbox of deliveries (one row per event and endpoint). */
export class AddWebhooks1764200000000 implements MigrationInterface {
  name = 'AddWebhooks1764200000000';

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
        name: 'webhook_endpoints',
        columns: [
          id,
          { name: 'customerId', type: 'bigint' },
          { name: 'url', type: 'varchar', length: '2048' },
          { name: 'events', type: 'varchar', length: '512' },
          { name: 'active', type: 'boolean', default: 1 },
          { name: 'description', type: 'varchar', length: '255', isNullable: true },
          { name: 'secret', type: 'varchar', length: '64' },
          at('createdAt'),
          at('updatedAt'),
        ],
        indices: [new TableIndex({ name: 'IDX_webhook_endpoints_customer', columnNames: ['customerId'] })],
        foreignKeys: [fk('FK_webhook_endpoints_customer', 'customerId', 'customers')],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'webhook_deliveries',
        columns: [
          id,
          { name: 'customerId', type: 'bigint' },
          { name: 'endpointId', type: 'bigint' },
          { name: 'eventId', type: 'varchar', length: '40' },
          { name: 'eventType', type: 'varchar', length: '64' },
          { name: 'body', type: 'text' },
          { name: 'state', type: 'varchar', length: '16' },
          { name: 'attempts', type: 'integer', default: 0 },
          at('nextAttemptAt'),
          { name: 'claimToken', type: 'varchar', length: '40', isNullable: true },
          { name: 'lastStatusCode', type: 'integer', isNullable: true },
          { name: 'lastDurationMs', type: 'integer', isNullable: true },
          { name: 'lastError', type: 'varchar', length: '512', isNullable: true },
          at('createdAt'),
          at('lastAttemptAt', true),
          at('finishedAt', true),
        ],
        indices: [
          new TableIndex({ name: 'IDX_webhook_deliveries_due', columnNames: ['state', 'nextAttemptAt'] }),
          new TableIndex({ name: 'IDX_webhook_deliveries_endpoint', columnNames: ['endpointId', 'id'] }),
          new TableIndex({ name: 'IDX_webhook_deliveries_finished', columnNames: ['finishedAt'] }),
        ],
        foreignKeys: [fk('FK_webhook_deliveries_endpoint', 'endpointId', 'webhook_endpoints')],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropTableOnce(queryRunner, 'webhook_deliveries');
    await dropTableOnce(queryRunner, 'webhook_endpoints');
  }
}
