import { MigrationInterface, QueryRunner, Table, TableForeignKey, TableIndex } from 'typeorm';
import { createTableOnce, dropTableOnce } from './steps';

/** The media table: one hosted image per goods item, files addressed by checksum. */
export class AddMedia1763800000000 implements MigrationInterface {
  name = 'AddMedia1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const sqlite = queryRunner.connection.driver.options.type === 'better-sqlite3';
    await createTableOnce(
      queryRunner,
      new Table({
        name: 'media',
        columns: [
          { name: 'id', type: sqlite ? 'integer' : 'bigint', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'customerId', type: 'bigint' },
          { name: 'goodsId', type: 'bigint' },
          { name: 'mediaType', type: 'varchar', length: '16', default: "'IMAGE'" },
          { name: 'originalUrl', type: 'varchar', length: '2048' },
          { name: 'checksum', type: 'varchar', length: '64' },
          { name: 'contentType', type: 'varchar', length: '64' },
          { name: 'fileKey', type: 'varchar', length: '160' },
          { name: 'size', type: 'integer' },
          { name: 'width', type: 'integer' },
          { name: 'height', type: 'integer' },
          { name: 'thumbnails', type: 'text' },
          { name: 'createdAt', type: 'datetime', precision: 3 },
          { name: 'updatedAt', type: 'datetime', precision: 3 },
        ],
        indices: [
          new TableIndex({ name: 'UQ_media_goods', columnNames: ['goodsId'], isUnique: true }),
          new TableIndex({ name: 'IDX_media_checksum', columnNames: ['checksum'] }),
        ],
        foreignKeys: [
          new TableForeignKey({
            name: 'FK_media_customer',
            columnNames: ['customerId'],
            referencedTableName: 'customers',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
          new TableForeignKey({
            name: 'FK_media_goods',
            columnNames: ['goodsId'],
            referencedTableName: 'goods',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
            onUpdate: 'CASCADE',
          }),
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await dropTableOnce(queryRunner, 'media');
  }
}
