import { deflateSync, inflateSync } from 'node:zlib';
import { MigrationInterface, QueryRunner, Table, TableForeignKey } from 'typeorm';
import { createTableOnce, dropTableOnce } from './steps';

/** Results per group when rows of import_job_rows are packed (a chunk of the default job settings). */
const GROUP_ROWS = 1000;
/** Bytes of packed results per piece (a MySQL BLOB holds 65,535). */
const PART_BYTES = 60_000;

/**
 * Import job results stored per chunk instead of per row: `import_job_results` holds each group of
 * results (a chunk's) as deflated JSON lines, in pieces a MySQL BLOB holds, with the group's first
 * position, its size and its FAIL count. Writing one row per result was a third of a large job's time
 * on MariaDB. The results of existing jobs are packed into groups of 1,000; `import_job_rows` goes.
 */
export class PackImportJobResults1764600000000 implements MigrationInterface {
  name = 'PackImportJobResults1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'import_job_results',
        columns: [
          { name: 'jobId', type: 'bigint', isPrimary: true },
          { name: 'seq', type: 'integer', isPrimary: true },
          { name: 'part', type: 'integer', isPrimary: true },
          { name: 'rowCount', type: 'integer' },
          { name: 'failCount', type: 'integer' },
          { name: 'data', type: 'blob' },
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'FK_import_job_results_job',
            columnNames: ['jobId'],
            referencedTableName: 'import_jobs',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
        ],
      }),
    );
    // Run again after a cut (MySQL/MariaDB): import_job_rows already gone means the packing was done; else
    // each job is packed anew, its groups from the cut run deleted first.
    if (!(await queryRunner.hasTable('import_job_rows'))) return;
    const jobs = (await queryRunner.query('SELECT DISTINCT jobId FROM import_job_rows')) as Array<{ jobId: number | string }>;
    for (const { jobId } of jobs) {
      await queryRunner.query('DELETE FROM import_job_results WHERE jobId = ?', [jobId]);
      for (let from = 0; ;) {
        const rows = (await queryRunner.query('SELECT seq, status, result FROM import_job_rows WHERE jobId = ? AND seq >= ? ORDER BY seq LIMIT ?', [
          jobId,
          from,
          GROUP_ROWS,
        ])) as Array<{ seq: number; status: string; result: string }>;
        if (!rows.length) break;
        const seq = Number(rows[0].seq);
        const failCount = rows.filter((r) => r.status === 'FAIL').length;
        const packed = deflateSync(rows.map((r) => r.result).join('\n'));
        for (let part = 0; part * PART_BYTES < packed.length; part++) {
          await queryRunner.query('INSERT INTO import_job_results (jobId, seq, part, rowCount, failCount, data) VALUES (?, ?, ?, ?, ?, ?)', [
            jobId,
            seq,
            part,
            rows.length,
            failCount,
            packed.subarray(part * PART_BYTES, (part + 1) * PART_BYTES),
          ]);
        }
        from = Number(rows[rows.length - 1].seq) + 1;
      }
    }
    await dropTableOnce(queryRunner, 'import_job_rows');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
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
    // Run again after a cut: import_job_results already gone means the unpacking was done.
    if (!(await queryRunner.hasTable('import_job_results'))) return;
    const groups = (await queryRunner.query('SELECT DISTINCT jobId, seq FROM import_job_results ORDER BY jobId, seq')) as Array<{
      jobId: number | string;
      seq: number;
    }>;
    for (const { jobId, seq } of groups) {
      await queryRunner.query('DELETE FROM import_job_rows WHERE jobId = ? AND seq >= ? AND seq < ?', [jobId, seq, Number(seq) + GROUP_ROWS]);
      const parts = (await queryRunner.query('SELECT data FROM import_job_results WHERE jobId = ? AND seq = ? ORDER BY part', [jobId, seq])) as Array<{
        data: Buffer;
      }>;
      const text = inflateSync(Buffer.concat(parts.map((p) => p.data))).toString('utf8');
      const lines = text ? text.split('\n') : [];
      for (let n = 0; n < lines.length; n++) {
        const result = JSON.parse(lines[n]) as { row: number; status: string };
        await queryRunner.query('INSERT INTO import_job_rows (jobId, seq, row, status, result) VALUES (?, ?, ?, ?, ?)', [
          jobId,
          Number(seq) + n,
          result.row,
          result.status,
          lines[n],
        ]);
      }
    }
    await dropTableOnce(queryRunner, 'import_job_results');
  }
}
