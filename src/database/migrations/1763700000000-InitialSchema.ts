import { MigrationInterface, QueryRunner, Table, TableForeignKey, TableIndex } from 'typeorm';
import { createTableOnce, dropTableOnce } from './steps';

/** int64 auto-increment key; SQLite only auto-increments a column declared INTEGER (which is 64-bit there). */
const idColumn = (queryRunner: QueryRunner) => ({
  name: 'id',
  type: queryRunner.connection.driver.options.type === 'better-sqlite3' ? 'integer' : 'bigint',
  isPrimary: true,
  isGenerated: true,
  generationStrategy: 'increment' as const,
});
const timestamp = (name: string) => ({ name, type: 'datetime', precision: 3, isNullable: false });

/** Customers and goods. Written with the QueryRunner schema API so it runs on SQLite and MySQL alike. */
export class InitialSchema1763700000000 implements MigrationInterface {
  name = 'InitialSchema1763700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const id = idColumn(queryRunner);
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'customers',
        columns: [
          id,
          { name: 'accessKey', type: 'varchar', length: '32' },
          { name: 'secretKey', type: 'varchar', length: '64' },
          { name: 'name', type: 'varchar', length: '255' },
          { name: 'currency', type: 'varchar', length: '3', default: "'KRW'" },
          { name: 'catalogVersion', type: 'bigint', default: 0 },
          timestamp('createdAt'),
          timestamp('updatedAt'),
        ],
        indices: [new TableIndex({ name: 'UQ_customers_access_key', columnNames: ['accessKey'], isUnique: true })],
      }),
    );
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'goods',
        columns: [
          id,
          { name: 'customerId', type: 'bigint' },
          { name: 'name', type: 'varchar', length: '255' },
          { name: 'brand', type: 'varchar', length: '255', isNullable: true },
          { name: 'description', type: 'text', isNullable: true },
          { name: 'url', type: 'varchar', length: '2048' },
          { name: 'urlHash', type: 'varchar', length: '64' },
          { name: 'sku', type: 'varchar', length: '128' },
          { name: 'skuHash', type: 'varchar', length: '64' },
          { name: 'mediaUrl', type: 'varchar', length: '2048', isNullable: true },
          { name: 'originalPrice', type: 'decimal', precision: 17, scale: 4, isNullable: true },
          { name: 'discountedPrice', type: 'decimal', precision: 17, scale: 4, isNullable: true },
          { name: 'discountPercentage', type: 'decimal', precision: 7, scale: 4, isNullable: true },
          { name: 'searchText', type: 'varchar', length: '640' },
          timestamp('createdAt'),
          timestamp('updatedAt'),
        ],
        indices: [
          new TableIndex({ name: 'UQ_goods_customer_sku', columnNames: ['customerId', 'skuHash'], isUnique: true }),
          new TableIndex({ name: 'UQ_goods_customer_url', columnNames: ['customerId', 'urlHash'], isUnique: true }),
          new TableIndex({ name: 'IDX_goods_customer_id', columnNames: ['customerId', 'id'] }),
          new TableIndex({ name: 'IDX_goods_customer_search', columnNames: ['customerId', 'searchText'] }),
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'FK_goods_customer',
            columnNames: ['customerId'],
            referencedTableName: 'customers',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropTableOnce(queryRunner, 'goods');
    await dropTableOnce(queryRunner, 'customers');
  }
}
