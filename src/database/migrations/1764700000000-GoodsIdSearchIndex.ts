import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

/**
 * One index on goods (customerId, id, searchText) instead of two, (customerId, id) and (customerId,
 * searchText). It serves everything they served: list pages and cursor walks in id order (its prefix),
 * and the keyword scan and the search corpus's load as a covering index (it holds every column they
 * read). A new item's entry goes at the end of its customer's range, where the sorted-by-text index put
 * it at a random place among the customer's texts: a bulk write maintains one index less, and no index
 * sorted by a 640-character text (docs/decisions/0015).
 */
export class GoodsIdSearchIndex1764700000000 implements MigrationInterface {
  name = 'GoodsIdSearchIndex1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Created first: on MySQL/MariaDB the customer foreign key always has an index beginning with customerId.
    await queryRunner.createIndex('goods', new TableIndex({ name: 'IDX_goods_customer_id_search', columnNames: ['customerId', 'id', 'searchText'] }));
    await queryRunner.dropIndex('goods', 'IDX_goods_customer_search');
    await queryRunner.dropIndex('goods', 'IDX_goods_customer_id');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex('goods', new TableIndex({ name: 'IDX_goods_customer_id', columnNames: ['customerId', 'id'] }));
    await queryRunner.createIndex('goods', new TableIndex({ name: 'IDX_goods_customer_search', columnNames: ['customerId', 'searchText'] }));
    await queryRunner.dropIndex('goods', 'IDX_goods_customer_id_search');
  }
}
