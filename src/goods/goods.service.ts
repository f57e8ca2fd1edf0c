import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, EntityManager, Repository } from 'typeorm';
import { ApiException } from '../common/errors/api.exception';
import type { Tenant } from '../auth/decorators';
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
  async list(tenant: Tenant, query: ListGoodsQuery): Promise<GoodsListResponse> {
    const em = this.goods.manager;
    const keyword = query.searchKeyword ? normalizeForSearch(query.searchKeyword.trim()) : '';
    const version = await readCatalogVersion(em, tenant.id);
    let entry = this.listCache.get(tenant.id, keyword, version);
    if (!entry) {
      // A keyword costs one scan that yields both the count and the ids; the ids are kept only when few
      // (a dense keyword pages quickly off the (customerId, id) index anyway).
      const ids = keyword ? await matchingIds(em, tenant.id, keyword) : undefined;
      const count = ids ? ids.length : await countMatches(em, tenant.id, keyword);
      entry = { version, count, ids: ids && ids.length <= MAX_CACHED_IDS ? ids : undefined };
      this.listCache.set(tenant.id, keyword, entry);
    }

    const offset = (query.page - 1) * query.count;
    let rows: Goods[] = [];
    if (offset < entry.count) {
      rows = entry.ids
        ? await goodsByIds(em, tenant.id, entry.ids.slice(offset, offset + query.count))
        : await pageOfMatches(em, tenant.id, keyword, offset, query.count);
    }
    return { results: rows.map((g) => toGoodsResponse(g, tenant.currency, false)), totalCount: entry.count, _s: 0 };
  }

  async findBySku(tenant: Tenant, sku: string): Promise<GoodsResponse> {
    return toGoodsResponse(await this.locate(tenant, { by: 'sku', sku }), tenant.currency);
  }

  async findByUrl(tenant: Tenant, url: string): Promise<GoodsResponse> {
    return toGoodsResponse(await this.locate(tenant, { by: 'url', url }), tenant.currency);
  }

  async register(tenant: Tenant, body: RegisterGoodsDto): Promise<GoodsResponse> {
    const goods = newGoods(tenant.id, body, new Date());
    const saved = await this.writeGuarded(tenant, goods, async (em) => {
      await lockCatalog(em, tenant.id);
      await this.assertKeysFree(em, tenant, goods);
      const result = await em.insert(Goods, goods);
      goods.id = Number(result.identifiers[0]?.id ?? goods.id);
      await bumpCatalogVersion(em, tenant.id);
      return goods;
    });
    return toGoodsResponse(saved, tenant.currency);
  }

  updateById(tenant: Tenant, body: UpdateGoodsByIdDto): Promise<GoodsResponse> {
    return this.update(tenant, { by: 'id', id: body.id as number }, body);
  }

  updateBySku(tenant: Tenant, body: UpdateGoodsBySkuDto): Promise<GoodsResponse> {
    return this.update(tenant, { by: 'sku', sku: body.sku as string }, body);
  }

  updateByUrl(tenant: Tenant, body: UpdateGoodsByUrlDto): Promise<GoodsResponse> {
    return this.update(tenant, { by: 'url', url: body.url as string }, body);
  }

  async deleteById(tenant: Tenant, id: number): Promise<void> {
    await this.remove(tenant, { by: 'id', id });
  }

  /** `expectedId` is the optional `{goodsId}` path segment: it must name the item found. */
  async deleteBySku(tenant: Tenant, sku: string, expectedId?: number): Promise<void> {
    await this.remove(tenant, { by: 'sku', sku }, expectedId);
  }

  async deleteByUrl(tenant: Tenant, url: string, expectedId?: number): Promise<void> {
    await this.remove(tenant, { by: 'url', url }, expectedId);
  }

  private async update(tenant: Tenant, locator: Locator, body: GoodsWrite): Promise<GoodsResponse> {
    // The locating key stays as it is; the other keys may change (CONTRACT §3).
    const write: GoodsWrite = { ...body };
    delete write.id;
    if (locator.by === 'sku') delete write.sku;
    if (locator.by === 'url') delete write.url;
    const saved = await this.writeGuarded(tenant, null, async (em) => {
      await lockCatalog(em, tenant.id);
      const goods = await this.locate(tenant, locator, em);
      const changed = applyGoodsWrite(goods, write);
      if (changed.length === 0) return goods;
      if (changed.includes('sku') || changed.includes('url')) await this.assertKeysFree(em, tenant, goods);
      goods.updatedAt = new Date();
      const { customer: _omit, ...columns } = goods;
      await em.update(Goods, { id: goods.id, customerId: tenant.id }, columns);
      await bumpCatalogVersion(em, tenant.id);
      return goods;
    });
    return toGoodsResponse(saved, tenant.currency);
  }

  private async remove(tenant: Tenant, locator: Locator, expectedId?: number): Promise<void> {
    await this.transactions.run(async (em) => {
      await lockCatalog(em, tenant.id);
      const goods = await this.locate(tenant, locator, em);
      if (expectedId !== undefined && goods.id !== expectedId) {
        throw ApiException.notFound(`Goods ${expectedId} not found with that ${locator.by}`);
      }
      await em.delete(Goods, { id: goods.id, customerId: tenant.id });
      await bumpCatalogVersion(em, tenant.id);
    });
  }

  /** Runs a write; a unique-key race lost to a concurrent writer becomes the same 409 as a pre-check. */
  private async writeGuarded(
    tenant: Tenant,
    goods: Goods | null,
    work: (em: EntityManager) => Promise<Goods>,
  ): Promise<Goods> {
    try {
      return await this.transactions.run(work);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      if (goods) await this.assertKeysFree(this.goods.manager, tenant, goods);
      throw ApiException.conflict('sku or url is already used by another goods item');
    }
  }

  private async assertKeysFree(em: EntityManager, tenant: Tenant, goods: Goods): Promise<void> {
    const holders = await em
      .createQueryBuilder(Goods, 'g')
      .select(['g.id', 'g.skuHash', 'g.urlHash'])
      .where('g.customerId = :customerId', { customerId: tenant.id })
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

  private async locate(tenant: Tenant, locator: Locator, em: EntityManager = this.goods.manager): Promise<Goods> {
    const where =
      locator.by === 'id'
        ? { customerId: tenant.id, id: locator.id }
        : locator.by === 'sku'
          ? { customerId: tenant.id, skuHash: keyHash(locator.sku) }
          : { customerId: tenant.id, urlHash: keyHash(locator.url) };
    const goods = await em.findOne(Goods, { where });
    if (!goods) {
      const what = locator.by === 'id' ? `id ${locator.id}` : locator.by === 'sku' ? `sku '${locator.sku}'` : `url '${locator.url}'`;
      throw ApiException.notFound(`Goods not found: ${what}`);
    }
    return goods;
  }
}
