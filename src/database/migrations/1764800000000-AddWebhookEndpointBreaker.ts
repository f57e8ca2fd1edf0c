import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce, createIndexOnce, dropIndexOnce } from './steps';

/**
 * Fair webhook claiming and the endpoints' circuit breaker (docs/webhooks.md, How it works): each endpoint
 * counts its failed tries in a row and is paused (none of its deliveries claimed) until `pausedUntil`; an
 * index on (endpointId, state, nextAttemptAt) finds one endpoint's due deliveries, and its pending ones
 * when a pause moves them, without reading the others'.
 */
export class AddWebhookEndpointBreaker1764800000000 implements MigrationInterface {
  name = 'AddWebhookEndpointBreaker1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumnsOnce(queryRunner, 'webhook_endpoints', [
      new TableColumn({ name: 'failureStreak', type: 'integer', default: 0 }),
      new TableColumn({ name: 'pausedUntil', type: 'datetime', precision: 3, isNullable: true }),
    ]);
    await createIndexOnce(
      queryRunner,
      'webhook_deliveries',
      new TableIndex({ name: 'IDX_webhook_deliveries_endpoint_due', columnNames: ['endpointId', 'state', 'nextAttemptAt'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropIndexOnce(queryRunner, 'webhook_deliveries', 'IDX_webhook_deliveries_endpoint_due');
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') {
      // In place: TypeORM's dropColumn rebuilds the table on SQLite, and dropping the old one inside the
      // revert's transaction (foreign keys on) would delete the endpoints' deliveries with it.
      await queryRunner.query('ALTER TABLE "webhook_endpoints" DROP COLUMN "pausedUntil"');
      await queryRunner.query('ALTER TABLE "webhook_endpoints" DROP COLUMN "failureStreak"');
      return;
    }
    await dropColumnsOnce(queryRunner, 'webhook_endpoints', ['pausedUntil']);
    await dropColumnsOnce(queryRunner, 'webhook_endpoints', ['failureStreak']);
  }
}
