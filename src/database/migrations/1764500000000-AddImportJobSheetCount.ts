import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { addColumnsOnce, dropColumnsOnce } from './steps';

/**
 * The quick row count an .xlsx upload got before it became an import job (JSON: rows, valueRows,
 * hasLinks), so that the job does not count the same file again; null for a CSV, or when the count at
 * upload could not be taken (the job counts then).
 */
export class AddImportJobSheetCount1764500000000 implements MigrationInterface {
  name = 'AddImportJobSheetCount1764500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await addColumnsOnce(queryRunner, 'import_jobs', [new TableColumn({ name: 'sheetCount', type: 'varchar', length: '100', isNullable: true })]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropColumnsOnce(queryRunner, 'import_jobs', ['sheetCount']);
  }
}
