import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce } from './steps';

/**
 * Claims of an import job since its last committed chunk that were not handed back: a node that dies
 * while it runs the job (e.g. its file took the process down) leaves one each time. Past
 * IMPORT_JOB_MAX_ATTEMPTS the job fails instead of being claimed again (no crash loop).
 */
export class AddImportJobStalledClaims1764700000000 implements MigrationInterface {
  name = 'AddImportJobStalledClaims1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumnsOnce(queryRunner, 'import_jobs', [new TableColumn({ name: 'stalledClaims', type: 'integer', default: 0 })]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type === 'better-sqlite3') {
      // In place: TypeORM's dropColumn rebuilds the table on SQLite, and dropping the old one inside the
      // revert's transaction (foreign keys on) would delete the jobs' results with it.
      await queryRunner.query('ALTER TABLE "import_jobs" DROP COLUMN "stalledClaims"');
      return;
    }
    await dropColumnsOnce(queryRunner, 'import_jobs', ['stalledClaims']);
  }
}
