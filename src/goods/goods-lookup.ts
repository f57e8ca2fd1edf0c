import { EntityManager, FindOptionsWhere, In } from 'typeorm';
import { ApiException } from '../common/errors/api.exception';
import { Goods } from './entities/goods.entity';
import { keyHash } from './goods-keys';

/** How a request names one goods item: by its id, its sku or its url. */
export type GoodsLocator = { by: 'id'; id: number } | { by: 'sku'; sku: string } | { by: 'url'; url: string };

/** The where-clause of a locator, within one customer's catalog (keys compared by their hash index). */
export function locatorWhere(customerId: number, locator: GoodsLocator): FindOptionsWhere<Goods> {
  switch (locator.by) {
    case 'id':
      return { customerId, id: locator.id };
    case 'sku':
      return { customerId, skuHash: keyHash(locator.sku) };
    case 'url':
      return { customerId, urlHash: keyHash(locator.url) };
    default: {
      const unreachable: never = locator;
      return unreachable;
    }
  }
}

function describe(locator: GoodsLocator): string {
  return locator.by === 'id' ? `id ${locator.id}` : locator.by === 'sku' ? `sku '${locator.sku}'` : `url '${locator.url}'`;
}

/** The customer's goods item a locator names; 404 -404 "Goods not found: sku 'X'" when there is none. */
export async function findGoodsOrFail(em: EntityManager, customerId: number, locator: GoodsLocator): Promise<Goods> {
  const goods = await em.findOne(Goods, { where: locatorWhere(customerId, locator) });
  if (!goods) throw ApiException.notFound(`Goods not found: ${describe(locator)}`);
  return goods;
}

/**
 * The ids of many goods items named by one kind of key, in the order given; 404 -404 naming the keys
 * (at most 20) that name no item of the customer.
 */
export async function findGoodsIdsOrFail(em: EntityManager, customerId: number, by: GoodsLocator['by'], values: Array<number | string>): Promise<number[]> {
  const column = by === 'id' ? 'id' : by === 'sku' ? 'skuHash' : 'urlHash';
  const keys = by === 'id' ? values : values.map((v) => keyHash(String(v).trim()));
  const found = await em.find(Goods, { select: { id: true, skuHash: true, urlHash: true }, where: { customerId, [column]: In(keys) } });
  const idByKey = new Map<number | string, number>(found.map((g) => [column === 'id' ? g.id : column === 'skuHash' ? g.skuHash : g.urlHash, g.id]));
  const missing = values.filter((_, i) => !idByKey.has(keys[i]));
  if (missing.length) throw ApiException.notFound(`Goods not found: ${missing.slice(0, 20).join(', ')}`);
  return keys.map((k) => idByKey.get(k) as number);
}
