import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce } from './steps';

/**
 * When the request holding an Idempotency-Key first committed a write (epoch ms; null before): written in
 * that write's own transaction, so that a retry after the node died between that commit and storing the
 * answer is told the request was applied instead of applying it again.
 */
export class AddIdempotencyKeyAppliedAt1765200000000 implements MigrationInterface {
  name = 'AddIdempotencyKeyAppliedAt1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumnsOnce(queryRunner, 'idempotency_keys', [new TableColumn({ name: 'appliedAt', type: 'bigint', isNullable: true })]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') {
      // In place: TypeORM's dropColumn rebuilds the table on SQLite, and dropping the old one inside the
      // revert's transaction (foreign keys on) would delete the stored answers' parts with it.
      if (await queryRunner.hasColumn('idempotency_keys', 'appliedAt')) await queryRunner.query('ALTER TABLE "idempotency_keys" DROP COLUMN "appliedAt"');
      return;
    }
    await dropColumnsOnce(queryRunner, 'idempotency_keys', ['appliedAt']);
  }
}
