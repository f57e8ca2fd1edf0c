import { EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api.exception';
import { Goods } from './entities/goods.entity';
import { keyHash } from './goods-keys';
import { hydrateRows } from '../database/bulk-sql';
import { isMysql } from '../database/engine';

/** How a request names one goods item: by its id, its sku or its url. */
export type GoodsLocator = { by: 'id'; id: number } | { by: 'sku'; sku: string } | { by: 'url'; url: string };

function describe(locator: GoodsLocator): string {
  return locator.by === 'id' ? `id ${locator.id}` : locator.by === 'sku' ? `sku '${locator.sku}'` : `url '${locator.url}'`;
}

/** 404 -404 "Goods not found: sku 'X'". */
export function goodsNotFound(locator: GoodsLocator): ApiException {
  return ApiException.notFound(`Goods not found: ${describe(locator)}`);
}

/** The goods column a locator compares (through its hash index for sku and url) and the value it looks for. */
export function locatorColumn(locator: GoodsLocator): ['id' | 'skuHash' | 'urlHash', number | string] {
  return locator.by === 'id' ? ['id', locator.id] : locator.by === 'sku' ? ['skuHash', keyHash(locator.sku)] : ['urlHash', keyHash(locator.url)];
}

/**
 * The customer's goods item a locator names; 404 -404 "Goods not found: sku 'X'" when there is none. One
 * plain statement with bound parameters (TypeORM's find would write the ids into the SQL, one statement
 * text per item, which SQLite then prepares again and again).
 */
export async function findGoodsOrFail(em: EntityManager, customerId: number, locator: GoodsLocator): Promise<Goods> {
  const [column, value] = locatorColumn(locator);
  const rows: Array<Record<string, unknown>> = await em.query(`SELECT * FROM goods WHERE customerId = ? AND ${column} = ?`, [customerId, value]);
  if (!rows.length) throw goodsNotFound(locator);
  return hydrateRows(em, Goods, rows)[0];
}

/**
 * The ids of many goods items named by one kind of key, in the order given; 404 -404 naming the keys
 * (at most 20) that name no item of the customer. On MySQL the rows are read with a shared lock (the
 * latest committed rows, held until the transaction ends), as the caller goes on to write rows referring
 * to them: a delete committed meanwhile is then a 404 here, not a foreign-key error at the insert, and
 * one coming after waits for the commit.
 */
export async function findGoodsIdsOrFail(em: EntityManager, customerId: number, by: GoodsLocator['by'], values: Array<number | string>): Promise<number[]> {
  const column = by === 'id' ? 'id' : by === 'sku' ? 'skuHash' : 'urlHash';
  const keys = by === 'id' ? values : values.map((v) => keyHash(String(v).trim()));
  const query = em
    .createQueryBuilder(Goods, 'g')
    .select(['g.id', 'g.skuHash', 'g.urlHash'])
    .where('g.customerId = :customerId', { customerId })
    .andWhere(`g.${column} IN (:...keys)`, { keys });
  if (isMysql(em)) query.setLock('pessimistic_read');
  const found = await query.getMany();
  const idByKey = new Map<number | string, number>(found.map((g) => [column === 'id' ? g.id : column === 'skuHash' ? g.skuHash : g.urlHash, g.id]));
  const missing = values.filter((_, i) => !idByKey.has(keys[i]));
  if (missing.length) throw ApiException.notFound(`Goods not found: ${missing.slice(0, 20).join(', ')}`);
  return keys.map((k) => idByKey.get(k) as number);
}
