import { MigrationInterface, QueryRunner, Table, TableForeignKey, TableIndex } from 'typeorm';
import { createTableOnce, dropTableOnce } from './steps';

/**
 * Idempotency-Key of authenticated writes: one row per customer and key (its primary key is the lock
 * every node takes), and the stored answer's body in parts.
 */
export class AddIdempotencyKeys1764300000000 implements MigrationInterface {
  name = 'AddIdempotencyKeys1764300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'idempotency_keys',
        columns: [
          { name: 'customerId', type: 'bigint', isPrimary: true },
          { name: 'keyHash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'fingerprint', type: 'varchar', length: '64' },
          { name: 'owner', type: 'varchar', length: '36' },
          { name: 'statusCode', type: 'integer', isNullable: true },
          { name: 'headers', type: 'text', isNullable: true },
          { name: 'bodyParts', type: 'integer', isNullable: true },
          { name: 'leaseUntil', type: 'bigint' },
          { name: 'expiresAt', type: 'bigint' },
        ],
        indices: [new TableIndex({ name: 'IDX_idempotency_keys_expires', columnNames: ['expiresAt'] })],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'idempotency_key_parts',
        columns: [
          { name: 'customerId', type: 'bigint', isPrimary: true },
          { name: 'keyHash', type: 'varchar', length: '64', isPrimary: true },
          { name: 'part', type: 'integer', isPrimary: true },
          { name: 'data', type: 'blob' },
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'FK_idempotency_key_parts_key',
            columnNames: ['customerId', 'keyHash'],
            referencedTableName: 'idempotency_keys',
            referencedColumnNames: ['customerId', 'keyHash'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropTableOnce(queryRunner, 'idempotency_key_parts');
    await dropTableOnce(queryRunner, 'idempotency_keys');
  }
}
