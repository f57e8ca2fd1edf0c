import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce } from './steps';

/**
 * Stock-driven sales status: the stock of each campaign item and its ALMOST_SOLD_OUT threshold (both
 * null when not tracked / no such stage), and the campaign setting that shows the count to viewers.
 */
export class AddStock1764100000000 implements MigrationInterface {
  name = 'AddStock1764100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumnsOnce(queryRunner, 'campaign_goods', [
      new TableColumn({ name: 'stock', type: 'integer', isNullable: true }),
      new TableColumn({ name: 'almostSoldOutAt', type: 'integer', isNullable: true }),
    ]);
    await addColumnsOnce(queryRunner, 'campaigns', [new TableColumn({ name: 'showStock', type: 'boolean', default: 0 })]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropColumnsOnce(queryRunner, 'campaigns', ['showStock']);
    await dropColumnsOnce(queryRunner, 'campaign_goods', ['almostSoldOutAt', 'stock']);
  }
}
