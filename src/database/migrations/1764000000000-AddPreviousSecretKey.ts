import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce } from './steps';

/**
 * Secret-key rotation with a grace period: the previous secret key of a customer and the instant
 * until which tokens signed with it are still accepted. Both null when there is none.
 */
export class AddPreviousSecretKey1764000000000 implements MigrationInterface {
  name = 'AddPreviousSecretKey1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumnsOnce(queryRunner, 'customers', [
      new TableColumn({ name: 'previousSecretKey', type: 'varchar', length: '64', isNullable: true }),
      new TableColumn({ name: 'previousKeyValidUntil', type: 'datetime', precision: 3, isNullable: true }),
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropColumnsOnce(queryRunner, 'customers', ['previousKeyValidUntil', 'previousSecretKey']);
  }
}
