import { Injectable } from '@nestjs/common';
import { Brackets, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api.exception';
import type { Tenant } from '../auth/decorators';
import { Transactions } from '../database/transactions';
import { RefreshMediaQuery } from '../media/dto/refresh-media.query';
import { Media } from '../media/entities/media.entity';
import { MediaPlan, planMedia } from '../media/media-plan';
import { MediaOutcome, MediaService } from '../media/media.service';
import { GoodsWrite, RegisterGoodsDto, UpdateGoodsByIdDto, UpdateGoodsBySkuDto, UpdateGoodsByUrlDto } from './dto/goods-body.dto';
import { ListGoodsQuery } from './dto/goods-query.dto';
import { GoodsListResponse, GoodsResponse, toGoodsResponse } from './dto/goods-response.dto';
import { Goods } from './entities/goods.entity';
import { changesWhatViewersSee, GoodsChangeHooks } from './goods-changes';
import { GoodsDeletionHooks } from './goods-deletion';
import { findGoodsOrFail, GoodsLocator } from './goods-lookup';
import { normalizeForSearch } from './goods-keys';
import { bumpCatalogVersion, GoodsListCache, lockCatalog } from './goods-list-cache';
import { GoodsSearchCorpus } from './goods-search-corpus';
import { countMatches, goodsByIds, matchingIds, mediaOfPage, pageAfter, pageOfMatches, readCatalogVersion } from './goods-list.queries';
import { Metrics } from '../metrics/metrics.service';
import { applyGoodsWrite, isUniqueViolation, keyTakenMessage, newGoods } from './goods-write';
import { lockRow } from '../database/engine';
import { WorkGate, WorkGateError } from '../common/util/work-gate';

/** Pages of the whole catalog that start below this many items are read while the catalog version is (see list()). */
const EARLY_PAGE_OFFSETS = 1000;
/**
 * Keyword scans of the catalog (a search the in-memory corpus cannot answer: a catalog over
 * SEARCH_MEMORY_MB, a corpus that did not load in time) a node runs at once, one customer's at most, and
 * how many may wait, each at most SCAN_WAIT_MS (then 503). Each scan holds a database connection for
 * seconds on a large catalog: 16 of one customer's at once took the whole pool, and another customer's
 * list waited for a connection up to 5 s, then 503.
 */
export const SCANS_AT_ONCE = 4;
export const SCANS_PER_CUSTOMER = 2;
export const SCANS_WAITING = 64;
export const SCANS_WAITING_PER_CUSTOMER = 16;
export const SCAN_WAIT_MS = 10_000;

interface SavedGoods {
  goods: Goods;
  media: Media | null;
  /** Media rows the write removed: their files go once the transaction has committed. */
  released: Media[];
  /** The write changed what viewers of a campaign holding the item see (its summary fields or image). */
  seen?: boolean;
  /** The catalog version the write committed (none when it changed nothing). */
  version?: number;
}

/** The goods catalog of one customer: list, look-ups, register, the three updates, deletes. */
@Injectable()
export class GoodsService {
  private readonly scans = new WorkGate(SCANS_AT_ONCE, SCANS_WAITING, SCANS_PER_CUSTOMER, SCANS_WAITING_PER_CUSTOMER);

  constructor(
    private readonly transactions: Transactions,
    private readonly listCache: GoodsListCache,
    private readonly searchCorpus: GoodsSearchCorpus,
    private readonly media: MediaService,
    private readonly deletionHooks: GoodsDeletionHooks,
    private readonly changeHooks: GoodsChangeHooks,
    private readonly metrics: Metrics,
  ) {
    metrics.countGate('search-scan', this.scans);
  }

  /** The ids of the customer's goods matching `keyword`, by a scan of the catalog in a turn of the node's scan gate. */
  private async scanned(em: EntityManager, customerId: number, keyword: string): Promise<number[]> {
    try {
      return await this.scans.run(Infinity, () => matchingIds(em, customerId, keyword), customerId, Date.now() + SCAN_WAIT_MS);
    } catch (err) {
      if (!(err instanceof WorkGateError)) throw err;
      this.metrics.workRefusals.inc({ work: 'search-scan', reason: err.reason });
      throw ApiException.unavailable('The server is busy searching large catalogs (this one included); try again shortly', 2);
    }
  }

  /** Counts one API write in livegoods_goods_rows_written_total: its outcome, or FAIL when it throws. */
  private async counted<T>(outcome: 'CREATE' | 'UPDATE', work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      this.metrics.goodsRows.inc({ source: 'api', outcome });
      return result;
    } catch (err) {
      this.metrics.goodsRows.inc({ source: 'api', outcome: 'FAIL' });
      throw err;
    }
  }

  /**
   * Newest first (or, with `after`, the next ids above it, oldest first). The page comes off the (customerId, id) index; the match count (and, for a
   * keyword, the matching ids, up to the cache's bounds) come from GoodsListCache while the catalog version is unchanged.
   */
  async list(tenant: Tenant, query: ListGoodsQuery): Promise<GoodsListResponse> {
    if (query.after !== undefined && query.page !== 1) {
      const message = 'page cannot be combined with after: send after alone (the last id of the previous answer)';
      throw ApiException.invalid(message, [{ field: 'page', message }]);
    }
    const em = this.transactions.manager;
    const keyword = query.searchKeyword ? normalizeForSearch(query.searchKeyword.trim()) : '';
    const offset = (query.page - 1) * query.count;
    // One of the first pages of the whole catalog (the usual request) does not depend on what the cache
    // holds, so it is read while the catalog version is: one round trip fewer to the database, which
    // counts most while it is busy with another customer's bulk write. A deeper page waits for the
    // count, so that a page past the end reads nothing.
    const early = !keyword && query.after === undefined && offset < EARLY_PAGE_OFFSETS;
    const [version, earlyRows] = await Promise.all([
      readCatalogVersion(em, tenant.id),
      early ? pageOfMatches(em, tenant.id, '', offset, query.count) : undefined,
    ]);
    const cached = this.listCache.get(tenant.id, keyword, version);
    let count = cached?.count;
    let ids: ArrayLike<number> | undefined = cached?.ids;
    if (count === undefined) {
      // A keyword is matched in the customer's in-memory corpus when it is at this version, else by one
      // scan; either yields both the count and the ids, which the cache keeps for the next pages (up to
      // its bounds: past them a page is read off the (customerId, id) index).
      const allIds = keyword ? ((await this.searchCorpus.match(tenant.id, keyword, version)) ?? (await this.scanned(em, tenant.id, keyword))) : undefined;
      count = allIds ? allIds.length : await countMatches(em, tenant.id, keyword);
      ids = allIds;
      this.listCache.set(tenant.id, keyword, version, count, allIds);
    }

    let rows: Goods[] = [];
    if (earlyRows) {
      if (offset < count) rows = earlyRows;
    } else if (query.after !== undefined) {
      // Cursor paging: the next ids above `after`, oldest first, off the (customerId, id) index.
      rows = await pageAfter(em, tenant.id, keyword, query.after, query.count);
    } else if (offset < count) {
      rows = ids
        ? await goodsByIds(
            em,
            tenant.id,
            Array.from({ length: Math.min(query.count, count - offset) }, (_, k) => ids[offset + k]),
          )
        : await pageOfMatches(em, tenant.id, keyword, offset, query.count);
    }
    const media = await mediaOfPage(
      em,
      rows.map((g) => g.id),
    );
    return {
      results: rows.map((g) => toGoodsResponse(g, tenant, { media: media.get(g.id), withMediaUrl: false })),
      totalCount: count,
      _s: 0,
    };
  }

  async findById(tenant: Tenant, id: number): Promise<GoodsResponse> {
    return this.withMedia(tenant, await this.locate(tenant, { by: 'id', id }));
  }

  async findBySku(tenant: Tenant, sku: string): Promise<GoodsResponse> {
    return this.withMedia(tenant, await this.locate(tenant, { by: 'sku', sku }));
  }

  async findByUrl(tenant: Tenant, url: string): Promise<GoodsResponse> {
    return this.withMedia(tenant, await this.locate(tenant, { by: 'url', url }));
  }

  register(tenant: Tenant, body: RegisterGoodsDto): Promise<GoodsResponse> {
    return this.counted('CREATE', () => this.insert(tenant, body));
  }

  private async insert(tenant: Tenant, body: RegisterGoodsDto): Promise<GoodsResponse> {
    const goods = newGoods(tenant.id, body, new Date());
    // Refuse a taken key before spending a fetch on the image; the transaction checks again.
    await this.assertKeysFree(this.transactions.manager, tenant, goods);
    // The image is fetched before the transaction (no network I/O inside one): a new item's image
    // depends on nothing the transaction could find changed.
    const fetched = goods.mediaUrl ? await this.media.tryPrepare(tenant.id, goods.mediaUrl) : null;
    const saved = await this.writeGuarded(tenant, goods, fetched, async (em) => {
      await lockCatalog(em, tenant.id);
      await this.assertKeysFree(em, tenant, goods);
      const result = await em.insert(Goods, goods);
      goods.id = Number(result.identifiers[0]?.id ?? goods.id);
      const media = fetched?.ok ? this.media.newRow(tenant.id, goods.id, fetched.media, goods.createdAt) : null;
      if (media) await this.media.insertRows(em, [media]);
      return { goods, media, released: [], version: await bumpCatalogVersion(em, tenant.id) };
    });
    return toGoodsResponse(saved.goods, tenant, { media: saved.media, withFileSize: true });
  }

  updateById(tenant: Tenant, body: UpdateGoodsByIdDto, options: RefreshMediaQuery = {}): Promise<GoodsResponse> {
    return this.counted('UPDATE', () => this.update(tenant, { by: 'id', id: body.id }, body, options));
  }

  updateBySku(tenant: Tenant, body: UpdateGoodsBySkuDto, options: RefreshMediaQuery = {}): Promise<GoodsResponse> {
    return this.counted('UPDATE', () => this.update(tenant, { by: 'sku', sku: body.sku as string }, body, options));
  }

  updateByUrl(tenant: Tenant, body: UpdateGoodsByUrlDto, options: RefreshMediaQuery = {}): Promise<GoodsResponse> {
    return this.counted('UPDATE', () => this.update(tenant, { by: 'url', url: body.url as string }, body, options));
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

  private async update(tenant: Tenant, locator: GoodsLocator, body: GoodsWrite, options: RefreshMediaQuery): Promise<GoodsResponse> {
    // The locating key stays as it is; the other keys may change.
    const write: GoodsWrite = { ...body };
    delete write.id;
    if (locator.by === 'sku') delete write.sku;
    if (locator.by === 'url') delete write.url;

    // Decide about the image before the transaction: fetching may take seconds, and no network I/O
    // happens inside a transaction. The transaction applies this decision as it is, never fetching.
    const before = await this.locate(tenant, locator);
    const stored = (await this.media.forGoods(this.transactions.manager, [before.id])).get(before.id) ?? null;
    const finalUrl = write.mediaUrl === undefined ? before.mediaUrl : write.mediaUrl;
    // A body without mediaUrl leaves the image alone (unless refreshMedia asks for a new fetch).
    const plan: MediaPlan =
      write.mediaUrl === undefined && !options.refreshMedia ? { action: 'keep' } : planMedia(finalUrl, stored?.originalUrl ?? null, !!options.refreshMedia);
    const fetched = plan.action === 'fetch' ? await this.media.tryPrepare(tenant.id, plan.url) : null;

    const saved = await this.writeGuarded(tenant, null, fetched, async (em) => {
      await lockCatalog(em, tenant.id);
      const goods = await this.locate(tenant, locator, em);
      const changed = applyGoodsWrite(goods, write);
      if (changed.includes('sku') || changed.includes('url')) await this.assertKeysFree(em, tenant, goods);
      const now = new Date();
      if (changed.length) {
        goods.updatedAt = now;
        const { customer: _omit, ...columns } = goods;
        await em.update(Goods, { id: goods.id, customerId: tenant.id }, columns);
      }
      let media = (await this.media.forGoods(em, [goods.id])).get(goods.id) ?? null;
      let released: Media[] = [];
      if (plan.action !== 'keep') {
        // A new URL whose image failed leaves the item without media (its data is saved all the same).
        released = await this.media.deleteRowsOf(em, [goods.id]);
        media = fetched?.ok ? this.media.newRow(tenant.id, goods.id, fetched.media, now) : null;
        if (media) await this.media.insertRows(em, [media]);
      }
      const version = changed.length || plan.action !== 'keep' ? await bumpCatalogVersion(em, tenant.id) : undefined;
      return { goods, media, released, seen: changesWhatViewersSee(changed) || plan.action !== 'keep', version };
    });
    // Campaigns holding the item tell their viewers (after commit).
    if (saved.seen) await this.changeHooks.changed(tenant, [saved.goods.id]);
    return toGoodsResponse(saved.goods, tenant, { media: saved.media });
  }

  /**
   * Deletes the item, its media row (files released after commit) and its places in campaigns; viewers
   * of those campaigns get the new goods.list.
   *
   * On MySQL/MariaDB the item's row is locked first, and the transaction reads at READ COMMITTED: a
   * campaign add of this item still open holds a shared lock on it (the add reads its goods so), so the
   * deletion waits for it and then finds the new place; and the campaigns' lists, read once their rows
   * are locked, show what the changes committed meanwhile left (at REPEATABLE READ they were read as of
   * the transaction's first read, and viewers were sent a list the database did not hold). A deadlock
   * with a campaign change runs the deletion again.
   */
  private async remove(tenant: Tenant, locator: GoodsLocator, expectedId?: number): Promise<void> {
    const { released, afterCommit, id, version } = await this.transactions.runAgainOnDeadlock(async (em) => {
      await lockCatalog(em, tenant.id);
      const goods = await this.locate(tenant, locator, em);
      if (expectedId !== undefined && goods.id !== expectedId) {
        throw ApiException.notFound(`Goods ${expectedId} not found with that ${locator.by}`);
      }
      await lockRow(em, 'goods', goods.id);
      // Other domains (campaigns) do their part in this transaction, before the row goes.
      const afterCommit = await this.deletionHooks.run(em, tenant, goods.id);
      const media = await this.media.deleteRowsOf(em, [goods.id]);
      await em.delete(Goods, { id: goods.id, customerId: tenant.id });
      return { released: media, afterCommit, id: goods.id, version: await bumpCatalogVersion(em, tenant.id) };
    }, 'READ COMMITTED');
    this.searchCorpus.patch(tenant.id, version, [], [id]);
    for (const done of afterCommit) done();
    await this.media.releaseFiles(released);
  }

  private async withMedia(tenant: Tenant, goods: Goods): Promise<GoodsResponse> {
    const media = (await this.media.forGoods(this.transactions.manager, [goods.id])).get(goods.id) ?? null;
    return toGoodsResponse(goods, tenant, { media });
  }

  /**
   * Runs a write transaction. Afterwards, files of media rows it removed are released; if it fails,
   * files fetched for it are. A unique-key race lost to a concurrent writer becomes the same 409 as the
   * pre-check.
   */
  private async writeGuarded(
    tenant: Tenant,
    goods: Goods | null,
    fetched: MediaOutcome | null,
    work: (em: EntityManager) => Promise<SavedGoods>,
  ): Promise<SavedGoods> {
    let saved: SavedGoods;
    try {
      saved = await this.transactions.run(work);
    } catch (err) {
      if (fetched?.ok) await this.media.releaseFiles([fetched.media]);
      if (!isUniqueViolation(err)) throw err;
      if (goods) await this.assertKeysFree(this.transactions.manager, tenant, goods);
      throw ApiException.conflict('sku or url is already used by another goods item');
    }
    // Searches keep matching in memory: the search corpora (this node's, and with Redis the others') take the item as written.
    if (saved.version !== undefined) this.searchCorpus.patch(tenant.id, saved.version, [saved.goods]);
    await this.media.releaseFiles(saved.released);
    return saved;
  }

  private async assertKeysFree(em: EntityManager, tenant: Tenant, goods: Goods): Promise<void> {
    const holders = await em
      .createQueryBuilder(Goods, 'g')
      .select(['g.id', 'g.skuHash', 'g.urlHash'])
      .where('g.customerId = :customerId', { customerId: tenant.id })
      .andWhere(new Brackets((b) => b.where('g.skuHash = :skuHash', { skuHash: goods.skuHash }).orWhere('g.urlHash = :urlHash', { urlHash: goods.urlHash })))
      .getMany();
    for (const holder of holders) {
      if (holder.id === goods.id) continue;
      if (holder.skuHash === goods.skuHash) throw ApiException.conflict(keyTakenMessage('sku', goods.sku, holder.id));
      throw ApiException.conflict(keyTakenMessage('url', goods.url, holder.id));
    }
  }

  private locate(tenant: Tenant, locator: GoodsLocator, em: EntityManager = this.transactions.manager): Promise<Goods> {
    return findGoodsOrFail(em, tenant.id, locator);
  }
}
