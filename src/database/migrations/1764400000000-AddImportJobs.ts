import { MigrationInterface, QueryRunner, Table, TableForeignKey, TableIndex } from 'typeorm';
import { createTableOnce, dropTableOnce } from './steps';

/** Spreadsheet import jobs and their per-row results. */
export class AddImportJobs1764400000000 implements MigrationInterface {
  name = 'AddImportJobs1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const sqlite = queryRunner.connection.driver.options.type === 'better-sqlite3';
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'import_jobs',
        columns: [
          { name: 'id', type: sqlite ? 'integer' : 'bigint', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'customerId', type: 'bigint' },
          { name: 'state', type: 'varchar', length: '16' },
          { name: 'fileName', type: 'varchar', length: '255' },
          { name: 'filePath', type: 'varchar', length: '255' },
          { name: 'fileBytes', type: 'bigint' },
          { name: 'mimeType', type: 'varchar', length: '64', isNullable: true },
          { name: 'baseUrl', type: 'varchar', length: '2048' },
          { name: 'refreshMedia', type: 'boolean', default: 0 },
          { name: 'rowsTotal', type: 'integer', isNullable: true },
          { name: 'rowsDone', type: 'integer', default: 0 },
          { name: 'lastRow', type: 'integer', default: 0 },
          { name: 'createCount', type: 'integer', default: 0 },
          { name: 'updateCount', type: 'integer', default: 0 },
          { name: 'failCount', type: 'integer', default: 0 },
          { name: 'error', type: 'text', isNullable: true },
          { name: 'owner', type: 'varchar', length: '64', isNullable: true },
          { name: 'leaseUntil', type: 'bigint', isNullable: true },
          { name: 'attempts', type: 'integer', default: 0 },
          { name: 'createdAt', type: 'datetime', precision: 3 },
          { name: 'startedAt', type: 'datetime', precision: 3, isNullable: true },
          { name: 'finishedAt', type: 'datetime', precision: 3, isNullable: true },
        ],
        indices: [
          new TableIndex({ name: 'IDX_import_jobs_customer', columnNames: ['customerId', 'id'] }),
          new TableIndex({ name: 'IDX_import_jobs_state', columnNames: ['state', 'id'] }),
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'FK_import_jobs_customer',
            columnNames: ['customerId'],
            referencedTableName: 'customers',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
        ],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'import_job_rows',
        columns: [
          { name: 'jobId', type: 'bigint', isPrimary: true },
          { name: 'seq', type: 'integer', isPrimary: true },
          { name: 'row', type: 'integer' },
          { name: 'status', type: 'varchar', length: '8' },
          { name: 'result', type: 'text' },
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'FK_import_job_rows_job',
            columnNames: ['jobId'],
            referencedTableName: 'import_jobs',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropTableOnce(queryRunner, 'import_job_rows');
    await dropTableOnce(queryRunner, 'import_jobs');
  }
}
