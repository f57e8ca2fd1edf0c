import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, EntityManager, Repository } from 'typeorm';
import { ApiException } from '../common/errors/api.exception';
import type { Customer } from '../customers/entities/customer.entity';
import { Transactions } from '../database/transactions';
import {
  GoodsWrite,
  RegisterGoodsDto,
  UpdateGoodsByIdDto,
  UpdateGoodsBySkuDto,
  UpdateGoodsByUrlDto,
} from './dto/goods-body.dto';
import { ListGoodsQuery } from './dto/goods-query.dto';
import { GoodsListResponse, GoodsResponse, toGoodsResponse } from './dto/goods-response.dto';
import { Goods } from './entities/goods.entity';
import { keyHash, normalizeForSearch } from './goods-keys';
import { bumpCatalogVersion, GoodsListCache, lockCatalog, MAX_CACHED_IDS } from './goods-list-cache';
import { countMatches, goodsByIds, matchingIds, pageOfMatches, readCatalogVersion } from './goods-list.queries';
import { applyGoodsWrite, isUniqueViolation, keyTakenMessage, newGoods } from './goods-write';

type Locator = { by: 'id'; id: number } | { by: 'sku'; sku: string } | { by: 'url'; url: string };

/** The goods catalog of one customer: list, look-ups, register, the three updates, deletes. */
@Injectable()
export class GoodsService {
  constructor(
    @InjectRepository(Goods) private readonly goods: Repository<Goods>,
    private readonly transactions: Transactions,
    private readonly listCache: GoodsListCache,
  ) {}

  /**
   * Newest first. The page comes off the (customerId, id) index; the match count (and, for a selective
   * keyword, the matching ids) come from GoodsListCache while the catalog version is unchanged.
   */
  async list(customer: Customer, query: ListGoodsQuery): Promise<GoodsListResponse> {
    const em = this.goods.manager;
    const keyword = query.searchKeyword ? normalizeForSearch(query.searchKeyword.trim()) : '';
    const version = await readCatalogVersion(em, customer.id);
    let entry = this.listCache.get(customer.id, keyword, version);
    if (!entry) {
      // A keyword costs one scan that yields both the count and the ids; the ids are kept only when few
      // (a dense keyword pages quickly off the (customerId, id) index anyway).
      const ids = keyword ? await matchingIds(em, customer.id, keyword) : undefined;
      const count = ids ? ids.length : await countMatches(em, customer.id, keyword);
      entry = { version, count, ids: ids && ids.length <= MAX_CACHED_IDS ? ids : undefined };
      this.listCache.set(customer.id, keyword, entry);
    }

    const offset = (query.page - 1) * query.count;
    let rows: Goods[] = [];
    if (offset < entry.count) {
      rows = entry.ids
        ? await goodsByIds(em, customer.id, entry.ids.slice(offset, offset + query.count))
        : await pageOfMatches(em, customer.id, keyword, offset, query.count);
    }
    return { results: rows.map((g) => toGoodsResponse(g, customer.currency, false)), totalCount: entry.count, _s: 0 };
  }

  async findBySku(customer: Customer, sku: string): Promise<GoodsResponse> {
    return toGoodsResponse(await this.locate(customer, { by: 'sku', sku }), customer.currency);
  }

  async findByUrl(customer: Customer, url: string): Promise<GoodsResponse> {
    return toGoodsResponse(await this.locate(customer, { by: 'url', url }), customer.currency);
  }

  async register(customer: Customer, body: RegisterGoodsDto): Promise<GoodsResponse> {
    const goods = newGoods(customer.id, body, new Date());
    const saved = await this.writeGuarded(customer, goods, async (em) => {
      await lockCatalog(em, customer.id);
      await this.assertKeysFree(em, customer, goods);
      const result = await em.insert(Goods, goods);
      goods.id = Number(result.identifiers[0]?.id ?? goods.id);
      await bumpCatalogVersion(em, customer.id);
      return goods;
    });
    return toGoodsResponse(saved, customer.currency);
  }

  updateById(customer: Customer, body: UpdateGoodsByIdDto): Promise<GoodsResponse> {
    return this.update(customer, { by: 'id', id: body.id as number }, body);
  }

  updateBySku(customer: Customer, body: UpdateGoodsBySkuDto): Promise<GoodsResponse> {
    return this.update(customer, { by: 'sku', sku: body.sku as string }, body);
  }

  updateByUrl(customer: Customer, body: UpdateGoodsByUrlDto): Promise<GoodsResponse> {
    return this.update(customer, { by: 'url', url: body.url as string }, body);
  }

  async deleteById(customer: Customer, id: number): Promise<void> {
    await this.remove(customer, { by: 'id', id });
  }

  /** `expectedId` is the optional `{goodsId}` path segment: it must name the item found. */
  async deleteBySku(customer: Customer, sku: string, expectedId?: number): Promise<void> {
    await this.remove(customer, { by: 'sku', sku }, expectedId);
  }

  async deleteByUrl(customer: Customer, url: string, expectedId?: number): Promise<void> {
    await this.remove(customer, { by: 'url', url }, expectedId);
  }

  private async update(customer: Customer, locator: Locator, body: GoodsWrite): Promise<GoodsResponse> {
    // The locating key stays as it is; the other keys may change (CONTRACT §3).
    const write: GoodsWrite = { ...body };
    delete write.id;
    if (locator.by === 'sku') delete write.sku;
    if (locator.by === 'url') delete write.url;
    const saved = await this.writeGuarded(customer, null, async (em) => {
      await lockCatalog(em, customer.id);
      const goods = await this.locate(customer, locator, em);
      const changed = applyGoodsWrite(goods, write);
      if (changed.length === 0) return goods;
      if (changed.includes('sku') || changed.includes('url')) await this.assertKeysFree(em, customer, goods);
      goods.updatedAt = new Date();
      const { customer: _omit, ...columns } = goods;
      await em.update(Goods, { id: goods.id, customerId: customer.id }, columns);
      await bumpCatalogVersion(em, customer.id);
      return goods;
    });
    return toGoodsResponse(saved, customer.currency);
  }

  private async remove(customer: Customer, locator: Locator, expectedId?: number): Promise<void> {
    await this.transactions.run(async (em) => {
      await lockCatalog(em, customer.id);
      const goods = await this.locate(customer, locator, em);
      if (expectedId !== undefined && goods.id !== expectedId) {
        throw ApiException.notFound(`Goods ${expectedId} not found with that ${locator.by}`);
      }
      await em.delete(Goods, { id: goods.id, customerId: customer.id });
      await bumpCatalogVersion(em, customer.id);
    });
  }

  /** Runs a write; a unique-key race lost to a concurrent writer becomes the same 409 as a pre-check. */
  private async writeGuarded(
    customer: Customer,
    goods: Goods | null,
    work: (em: EntityManager) => Promise<Goods>,
  ): Promise<Goods> {
    try {
      return await this.transactions.run(work);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      if (goods) await this.assertKeysFree(this.goods.manager, customer, goods);
      throw ApiException.conflict('sku or url is already used by another goods item');
    }
  }

  private async assertKeysFree(em: EntityManager, customer: Customer, goods: Goods): Promise<void> {
    const holders = await em
      .createQueryBuilder(Goods, 'g')
      .select(['g.id', 'g.skuHash', 'g.urlHash'])
      .where('g.customerId = :customerId', { customerId: customer.id })
      .andWhere(
        new Brackets((b) =>
          b.where('g.skuHash = :skuHash', { skuHash: goods.skuHash }).orWhere('g.urlHash = :urlHash', { urlHash: goods.urlHash }),
        ),
      )
      .getMany();
    for (const holder of holders) {
      if (holder.id === goods.id) continue;
      if (holder.skuHash === goods.skuHash) throw ApiException.conflict(keyTakenMessage('sku', goods.sku, holder.id));
      throw ApiException.conflict(keyTakenMessage('url', goods.url, holder.id));
    }
  }

  private async locate(customer: Customer, locator: Locator, em: EntityManager = this.goods.manager): Promise<Goods> {
    const where =
      locator.by === 'id'
        ? { customerId: customer.id, id: locator.id }
        : locator.by === 'sku'
          ? { customerId: customer.id, skuHash: keyHash(locator.sku) }
          : { customerId: customer.id, urlHash: keyHash(locator.url) };
    const goods = await em.findOne(Goods, { where });
    if (!goods) {
      const what = locator.by === 'id' ? `id ${locator.id}` : locator.by === 'sku' ? `sku '${locator.sku}'` : `url '${locator.url}'`;
      throw ApiException.notFound(`Goods not found: ${what}`);
    }
    return goods;
  }
}
