import { Injectable, Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { chunked } from '../common/util/chunks';
import { hydrateRows, insertRows, pipelined, updateRowsById } from '../database/bulk-sql';
import type { Tenant } from '../auth/decorators';
import { Transactions } from '../database/transactions';
import { GoodsWrite } from '../goods/dto/goods-body.dto';
import { GoodsResponse, toGoodsResponse } from '../goods/dto/goods-response.dto';
import { Goods } from '../goods/entities/goods.entity';
import { changesWhatViewersSee, GoodsChangeHooks } from '../goods/goods-changes';
import { memoizedKeyHash } from '../goods/goods-keys';
import { GoodsSearchCorpus } from '../goods/goods-search-corpus';
import { bumpCatalogVersion, lockCatalog } from '../goods/goods-list-cache';
import { toMediaResponse } from '../media/dto/media-response.dto';
import { Media } from '../media/entities/media.entity';
import { MediaPlan, planMedia } from '../media/media-plan';
import { MediaOutcome, MediaService } from '../media/media.service';
import { applyGoodsWrite, isUniqueViolation, keyTakenMessage, newGoods } from '../goods/goods-write';
import { BatchElement, ParsedElement } from './element-parser';
import { ElementValidator } from './element-validator';
import { RowStatus, SyncResponse, UploadGoodsRowResult } from './dto/sync-response.dto';
import { TimeSlicer } from '../common/util/time-slicer';
import { GoodsSource, Metrics } from '../metrics/metrics.service';

export type { BatchElement } from './element-parser';

export interface BatchOptions {
  /** Fetch every mediaUrl again even when it equals the stored one. */
  refreshMedia?: boolean;
  /** Where the batch comes from, for livegoods_goods_rows_written_total (default sync). */
  source?: GoodsSource;
  /** Decide and answer every element as a real call would, but write nothing and fetch no image. */
  dryRun?: boolean;
  /**
   * Runs inside the batch's transaction, after its writes and before its commit, with the answer the
   * batch will give: an import job records its progress and row results here, so that they commit (or
   * roll back) together with the rows. It may run more than once (a retried transaction).
   */
  beforeCommit?: (em: EntityManager, response: SyncResponse) => Promise<void>;
  /**
   * The elements already validated (parseElement, same order): an import job's rows come validated from
   * the sheet reader's worker, which reads and validates the next ones while these are written.
   */
  validated?: Promise<ParsedElement[]>;
}

/** Rows per look-up by id: ~25 bound values a row keeps SQLite and MySQL far below their limits. */
const CHUNK = 400;
/**
 * Rows per multi-row INSERT and UPDATE. On SQLite a statement runs on the event loop and cannot be cut
 * (400 rows take ~10 ms), so its statements are kept to ~3 ms; MySQL and MariaDB run them elsewhere.
 */
const WRITE_ROWS = { mysql: { insert: 400, update: 200 }, sqlite: { insert: 100, update: 100 } } as const;
/**
 * Elements validated, decided and written together (without images: see apply). 500 rather than 1,000:
 * less of a batch in flight at once (its segments validated ahead, the one being decided, the one being
 * written), and a segment's pieces that run in one go (its look-ups read and hydrated, its statements
 * formatted) half as long; measured, other requests waited less and the rows per second did not drop
 * (docs/decisions/0008-bulk-writes-in-slices.md).
 */
const SEGMENT = 500;
/** Segments handed to the validator beyond the one being planned. */
const VALIDATE_AHEAD = 2;
/** Keys (sku or url hashes) one look-up query carries. */
const KEYS_CHUNK = 400;
/** Transactions a batch may start after losing a unique-key race to a concurrent writer. */
const ATTEMPTS = 3;
/**
 * Transactions a batch may start because the catalog changed under it and needs images not fetched
 * yet; the last one writes without them.
 */
const MEDIA_ROUNDS = 3;
/** Why a row kept no image when the catalog changed under the batch in every round. */
const NOT_FETCHED = 'the goods changed while this call fetched images, so it was not fetched; send the row again to fetch it';
const UPDATED_COLUMNS = [
  'name',
  'brand',
  'description',
  'url',
  'urlHash',
  'sku',
  'skuHash',
  'mediaUrl',
  'originalPrice',
  'discountedPrice',
  'discountPercentage',
  'searchText',
  'updatedAt',
] as const;
type UpdatedColumn = (typeof UPDATED_COLUMNS)[number];
/** The columns of the unique keys, and what they are derived from. */
const KEY_COLUMNS: ReadonlySet<UpdatedColumn> = new Set(['url', 'urlHash', 'sku', 'skuHash']);

/** The columns an update sets: all but the keys if they did not change, and the search text likewise. */
function updatedColumns(keysChanged: boolean, searchChanged: boolean): UpdatedColumn[] {
  return UPDATED_COLUMNS.filter((c) => (keysChanged || !KEY_COLUMNS.has(c)) && (searchChanged || c !== 'searchText'));
}

interface Item {
  goods: Goods;
  /** The media row the item had before this call. */
  storedMedia: Media | null;
  /** Some element of this call set the item's mediaUrl. */
  mediaMentioned: boolean;
  /** The row of the last element of this call that set the item's mediaUrl (to a URL or to null). */
  lastMediaRow?: number;
  /** After the write: the item's media, or why its image could not be stored. */
  finalMedia?: Media | null;
  mediaError?: string;
  /** Dry run: the image a real call would fetch (not fetched). */
  mediaNotFetched?: string;
  /** Row of the element that created it in this batch (it has no id before the write). */
  createdAtRow?: number;
  /** Created by this batch (named by its row in messages, even once inserted). */
  isNew: boolean;
  /** A new item whose row has been inserted (a later segment updates it by id). */
  inserted?: boolean;
  dirty: boolean;
  /** Since its last write: its sku or url changed (their unique index entries must be rewritten). */
  keysChanged: boolean;
  /** Since its last write: its searchText changed (its search index entry must be rewritten). */
  searchChanged: boolean;
  /** Some write of this batch changed its searchText (the search corpus takes it after the commit). */
  searchWritten?: boolean;
}

interface Outcome {
  row: number;
  /** The element set a (non-null) mediaUrl: an image failure is reported in its message. */
  setsMedia?: boolean;
  status: RowStatus;
  message: string | null;
  /** A FAIL row naming items of this batch: its message, written once their ids exist (after the write). */
  names?: Conflict;
  item?: Item;
  snapshot?: GoodsResponse;
  echo?: Record<string, unknown>;
}

/**
 * Why an element failed. Its message may name items this batch creates, which have ids only once they
 * are written: `describe` writes it with the names of that moment (see itemName).
 */
class Conflict extends Error {
  constructor(readonly describe: string | ((name: (item: Item) => string) => string)) {
    super(typeof describe === 'string' ? describe : describe(itemName));
  }

  /** The message with the items' names as they are now. */
  now(): string {
    return typeof this.describe === 'string' ? this.describe : this.describe(itemName);
  }
}

/** An item as a message names it: `goods 12`; one this batch created `goods 12 (created at row 3)`, or by its row alone before it has an id (a dry run). */
function itemName(item: Item): string {
  if (!item.isNew) return `goods ${item.goods.id}`;
  return item.goods.id == null ? `the goods created at row ${item.createdAtRow}` : `goods ${item.goods.id} (created at row ${item.createdAtRow})`;
}

/** The plan inside the transaction needs images the batch has not fetched: leave it without writing. */
class ImagesMissing extends Error {
  constructor(readonly urls: string[]) {
    super(`${urls.length} image(s) to fetch before writing`);
  }
}

type Parsed = ParsedElement;

/** What deciding the elements of a batch in order works on. */
interface PlanState {
  tenant: Tenant;
  now: Date;
  hashOf: (key: string) => string;
  byId: Map<number, Item>;
  bySku: Map<string, Item>;
  byUrl: Map<string, Item>;
  /** Some statement changed the catalog (its version is bumped before the commit). */
  changed: boolean;
  /** Stored items (not created by this batch) whose summary fields or image changed: told after commit. */
  seen: Set<number>;
}

interface Plan {
  outcomes: Outcome[];
  items: Item[];
}

/**
 * Applies a batch of goods writes (the JSON sync and the spreadsheet import) with the sync rules
 * (docs/api-reference.md): elements apply in order, each on its own, later ones see earlier ones. Matching and key
 * checks happen in memory against the rows the batch touches, loaded with a few IN queries; the result
 * is written with multi-row statements, so a batch of N costs O(N / chunk) queries in one transaction.
 */
@Injectable()
export class GoodsBatchWriter {
  private readonly logger = new Logger(GoodsBatchWriter.name);

  constructor(
    private readonly transactions: Transactions,
    private readonly media: MediaService,
    private readonly metrics: Metrics,
    private readonly changeHooks: GoodsChangeHooks,
    private readonly validator: ElementValidator,
    private readonly searchCorpus: GoodsSearchCorpus,
  ) {}

  async apply(tenant: Tenant, elements: BatchElement[], options: BatchOptions = {}): Promise<SyncResponse> {
    // A batch of 10,000 costs a second or more of CPU: it runs in slices of ~5 ms so that other
    // customers' requests and live viewers are served in between (on SQLite too: reads there go
    // through a connection of their own and see only committed writes; see Transactions).
    const slicer = new TimeSlicer();
    const refresh = !!options.refreshMedia;
    if (options.dryRun) return this.dryRun(tenant, elements, refresh, slicer);
    // Decide once outside any transaction, only to learn which images to fetch: fetching can take
    // seconds and must not hold the catalog's write lock. Each distinct URL is fetched once.
    const setsImages = elements.some((e) => isRecord(e.data) && typeof e.data.mediaUrl === 'string');
    let parsed: Parsed[] | undefined = options.validated ? await options.validated : undefined;
    let fetched = new Map<string, MediaOutcome>();
    if (setsImages) {
      parsed ??= await this.validator.parse(elements, slicer);
      const preview = await this.plan(this.transactions.manager, tenant, parsed, slicer);
      fetched = await this.media.prepareAll(tenant.id, this.urlsToFetch(preview.items, refresh));
    }
    try {
      let races = 0;
      let round = 1;
      for (;;) {
        try {
          const lastRound = round >= MEDIA_ROUNDS;
          const { outcomes, released, seen, answer, version } = await this.transactions.run(async (em) => {
            await lockCatalog(em, tenant.id);
            // Without images, elements are validated in segments inside the transaction while the
            // previous segment's statements run (on MySQL/MariaDB the database works meanwhile).
            const segment = parsed ? Math.max(parsed.length, 1) : SEGMENT;
            // Segments go to the validator up to VALIDATE_AHEAD ahead of the one being planned (the
            // worker validates them meanwhile, in order; the lead bounds what waits in memory).
            const validated = new Map<number, Promise<Parsed[]>>();
            const validate = (start: number) => {
              if (parsed || start >= elements.length || validated.has(start)) return;
              // The first segment is needed at once: validated here (a few ms) rather than after the
              // worker's round trip (50-60 ms for 1,000 elements on a 2-core machine); the next ones go
              // to the worker while it is planned and written.
              const chunk = elements.slice(start, start + segment);
              const part = start === 0 ? this.validator.parseHere(chunk, slicer) : this.validator.parse(chunk, slicer);
              part.catch(() => undefined);
              validated.set(start, part);
            };
            const state = this.newState(tenant);
            const outcomes: Outcome[] = [];
            const released: Media[] = [];
            let pending: Promise<Media[]> | undefined;
            for (let start = 0; start < elements.length; start += segment) {
              for (let ahead = 0; ahead <= VALIDATE_AHEAD; ahead++) validate(start + ahead * segment);
              const part = parsed ? parsed.slice(start, start + segment) : await (validated.get(start) as Promise<Parsed[]>);
              validated.delete(start);
              const decided = await this.decideAll(em, state, part, slicer);
              outcomes.push(...decided.outcomes);
              // Rare: the catalog changed since the preview and the plan now needs images not fetched
              // yet. No network I/O inside a transaction (on SQLite it would hold up every writer):
              // leave it, fetch them, and plan again; the last round writes without them.
              const missing = this.urlsToFetch(decided.items, refresh).filter((url) => !fetched.has(url));
              if (missing.length && !lastRound) throw new ImagesMissing(missing);
              if (pending) released.push(...(await pending));
              pending = this.write(em, state, decided.items, fetched, refresh, slicer);
              // Awaited before the next segment's statements or the commit; a failure meanwhile is
              // not unhandled (the await below throws it).
              pending.catch(() => undefined);
            }
            if (pending) released.push(...(await pending));
            const version = state.changed ? await bumpCatalogVersion(em, tenant.id) : undefined;
            let answer: SyncResponse | undefined;
            if (options.beforeCommit) {
              answer = await this.envelope(tenant, outcomes, slicer);
              await options.beforeCommit(em, answer);
            }
            // The commit writes the whole batch out (SQLite: to its WAL file): give it a slice of its own.
            await slicer.yield();
            return { outcomes, released, seen: state.seen, answer, version };
          });
          // Searches keep matching in memory: the search corpora (this node's, and with Redis the others') take the items whose text this batch wrote.
          if (version !== undefined) this.searchCorpus.patch(tenant.id, version, this.searchTextsWritten(outcomes));
          await this.media.releaseFiles(released);
          // One call for the whole batch: campaigns holding changed items tell their viewers (one event each).
          await this.changeHooks.changed(tenant, seen);
          const response = answer ?? (await this.envelope(tenant, outcomes, slicer));
          const source = options.source ?? 'sync';
          if (response.createCount) this.metrics.goodsRows.inc({ source, outcome: 'CREATE' }, response.createCount);
          if (response.updateCount) this.metrics.goodsRows.inc({ source, outcome: 'UPDATE' }, response.updateCount);
          if (response.failCount) this.metrics.goodsRows.inc({ source, outcome: 'FAIL' }, response.failCount);
          return response;
        } catch (err) {
          if (err instanceof ImagesMissing) {
            this.logger.debug(`sync for customer ${tenant.id}: the catalog changed; fetching ${err.urls.length} more image(s)`);
            for (const [url, outcome] of await this.media.prepareAll(tenant.id, err.urls)) fetched.set(url, outcome);
            round += 1;
            continue;
          }
          // A concurrent writer took a key between our read and our write: read again and re-decide.
          races += 1;
          if (!isUniqueViolation(err) || races >= ATTEMPTS) throw err;
          this.logger.warn(`sync for customer ${tenant.id} raced another writer; retrying (${races})`);
        }
      }
    } finally {
      // Files fetched for this call that no row ended up using (failed call, item changed meanwhile).
      const prepared = [...fetched.values()].flatMap((o) => (o.ok ? [o.media] : []));
      await this.media.releaseFiles(prepared);
    }
  }

  /**
   * The answer of a real call without writing: the whole batch decided in memory against the stored
   * catalog, in order, exactly as the write path decides it (the same plan), outside any transaction.
   * Nothing is written, so the catalog version, the viewers and the metrics do not move; no image is
   * fetched: a row whose image a real call would fetch keeps no media and says so in its message.
   */
  private async dryRun(tenant: Tenant, elements: BatchElement[], refresh: boolean, slicer: TimeSlicer): Promise<SyncResponse> {
    const parsed = await this.validator.parse(elements, slicer);
    const { outcomes, items } = await this.plan(this.transactions.manager, tenant, parsed, slicer);
    for (const item of items) {
      const plan = this.mediaPlan(item, refresh);
      item.finalMedia = plan.action === 'keep' ? item.storedMedia : null;
      if (plan.action === 'fetch') item.mediaNotFetched = plan.url;
    }
    return this.envelope(tenant, outcomes, slicer);
  }

  /** The items this batch inserted or whose search text it changed, as they are stored now. */
  private searchTextsWritten(outcomes: Outcome[]): Goods[] {
    const items = new Set<Item>();
    for (const o of outcomes) if (o.item && (o.item.isNew || o.item.searchWritten)) items.add(o.item);
    return [...items].map((item) => item.goods);
  }

  /** The images this plan needs: items whose final mediaUrl differs from their stored media's. */
  private urlsToFetch(items: Item[], refresh: boolean): string[] {
    const urls = new Set<string>();
    for (const item of items) {
      const plan = this.mediaPlan(item, refresh);
      if (plan.action === 'fetch') urls.add(plan.url);
    }
    return [...urls];
  }

  /** Elements that do not mention mediaUrl leave an item's image alone. */
  private mediaPlan(item: Item, refresh: boolean): MediaPlan {
    if (!item.mediaMentioned) return { action: 'keep' };
    return planMedia(item.goods.mediaUrl, item.storedMedia?.originalUrl ?? null, refresh);
  }

  private newState(tenant: Tenant): PlanState {
    // Every key is hashed once per batch, however many times the plan looks it up.
    return { tenant, now: new Date(), hashOf: memoizedKeyHash(), byId: new Map(), bySku: new Map(), byUrl: new Map(), changed: false, seen: new Set() };
  }

  /** The whole batch decided without writing (the preview that tells which images to fetch). */
  private plan(em: EntityManager, tenant: Tenant, parsed: Parsed[], slicer: TimeSlicer): Promise<Plan> {
    return this.decideAll(em, this.newState(tenant), parsed, slicer);
  }

  /**
   * Loads the stored items these elements name that the batch has not met yet, then decides each
   * element in order, in memory (what earlier elements and segments did is in `state`). Returns the
   * outcomes and the items the elements touched.
   */
  private async decideAll(em: EntityManager, state: PlanState, parsed: Parsed[], slicer: TimeSlicer): Promise<Plan> {
    const writes = parsed.filter((p) => p.write).map((p) => p.write as GoodsWrite);
    const existing = await this.loadTouched(em, state, writes, slicer);
    const stored = await this.media.forGoods(
      em,
      existing.map((g) => g.id),
      () => slicer.pause(),
    );
    const { byId, bySku, byUrl } = state;
    for (const goods of existing) {
      const item: Item = {
        goods,
        storedMedia: stored.get(goods.id) ?? null,
        mediaMentioned: false,
        isNew: false,
        dirty: false,
        keysChanged: false,
        searchChanged: false,
      };
      byId.set(goods.id, item);
      bySku.set(goods.skuHash, item);
      byUrl.set(goods.urlHash, item);
    }

    const outcomes: Outcome[] = [];
    for (const p of parsed) {
      if (slicer.due()) await slicer.yield();
      outcomes.push(this.outcome(state, p));
    }

    const items = new Set<Item>();
    for (const o of outcomes) if (o.item) items.add(o.item);
    return { outcomes, items: [...items] };
  }

  private outcome(state: PlanState, p: Parsed): Outcome {
    if (!p.write) return { row: p.row, status: 'FAIL', message: p.error ?? 'invalid element', echo: p.echo };
    try {
      const decided = this.decide(state, p.row, p.write);
      if (p.write.mediaUrl !== undefined && decided.item) {
        decided.item.mediaMentioned = true;
        decided.item.lastMediaRow = p.row;
      }
      return { row: p.row, setsMedia: typeof p.write.mediaUrl === 'string', ...decided };
    } catch (err) {
      if (err instanceof Conflict) return { row: p.row, status: 'FAIL', message: err.message, names: err, echo: p.echo };
      throw err;
    }
  }

  /** Decides one element against the in-memory state, and updates that state. */
  private decide(state: PlanState, row: number, write: GoodsWrite): Pick<Outcome, 'status' | 'message' | 'item' | 'snapshot'> {
    const { tenant, now, hashOf, byId, bySku, byUrl } = state;
    let target: Item | undefined;
    if (write.id !== undefined) {
      target = byId.get(write.id);
      if (!target) throw new Conflict(`Goods not found: id ${write.id}`);
    } else {
      const bySkuItem = write.sku !== undefined ? bySku.get(hashOf(write.sku)) : undefined;
      const byUrlItem = write.url !== undefined ? byUrl.get(hashOf(write.url)) : undefined;
      if (bySkuItem && byUrlItem && bySkuItem !== byUrlItem) {
        throw new Conflict(
          (name) =>
            `sku '${write.sku}' belongs to ${name(bySkuItem)} but url '${write.url}' belongs to ${name(byUrlItem)}; ` +
            'send the id to say which one to update',
        );
      }
      target = bySkuItem ?? byUrlItem;
    }

    if (!target) {
      const missing = (['name', 'sku', 'url'] as const).filter((f) => write[f] === undefined);
      if (missing.length) throw new Conflict(`${missing.join(', ')} required to create a goods item`);
      const goods = newGoods(tenant.id, write, now, hashOf);
      const item: Item = {
        goods,
        storedMedia: null,
        mediaMentioned: false,
        createdAtRow: row,
        isNew: true,
        dirty: true,
        keysChanged: false,
        searchChanged: false,
      };
      bySku.set(item.goods.skuHash, item);
      byUrl.set(item.goods.urlHash, item);
      return { status: 'CREATE', message: null, item, snapshot: toGoodsResponse(item.goods, tenant) };
    }

    const next = Object.assign(new Goods(), target.goods);
    // applyGoodsWrite reads the writable fields only (never the id that named the item).
    const changed = applyGoodsWrite(next, write, hashOf);
    const skuHolder = bySku.get(next.skuHash);
    if (skuHolder && skuHolder !== target) throw new Conflict((name) => keyTakenMessage('sku', next.sku, name(skuHolder)));
    const urlHolder = byUrl.get(next.urlHash);
    if (urlHolder && urlHolder !== target) throw new Conflict((name) => keyTakenMessage('url', next.url, name(urlHolder)));

    if (changed.length) {
      if (next.skuHash !== target.goods.skuHash) {
        bySku.delete(target.goods.skuHash);
        bySku.set(next.skuHash, target);
        target.keysChanged = true;
      }
      if (next.urlHash !== target.goods.urlHash) {
        byUrl.delete(target.goods.urlHash);
        byUrl.set(next.urlHash, target);
        target.keysChanged = true;
      }
      if (next.searchText !== target.goods.searchText) target.searchChanged = target.searchWritten = true;
      next.updatedAt = now;
      target.goods = next;
      target.dirty = true;
      if (!target.isNew && changesWhatViewersSee(changed)) state.seen.add(next.id);
    }
    return { status: 'UPDATE', message: null, item: target, snapshot: toGoodsResponse(next, tenant) };
  }

  /**
   * The stored items these elements name by id, sku or url that the batch has not met yet: one query per
   * 400 skus, then one per 400 urls those did not find a holder for (through the two unique indexes),
   * then one per 400 ids the rows named by an id only. What the batch already holds in memory wins over what
   * the database says (its own statements may still be on their way there).
   */
  private async loadTouched(em: EntityManager, state: PlanState, writes: GoodsWrite[], slicer: TimeSlicer): Promise<Goods[]> {
    const { tenant, hashOf, byId, bySku, byUrl } = state;
    const found = new Map<number, Goods>();
    const keep = (raw: Array<Record<string, unknown>>) => {
      for (const g of hydrateRows(em, Goods, raw)) if (!byId.has(g.id)) found.set(g.id, g);
    };
    const inList = (n: number) => `(${Array.from({ length: n }, () => '?').join(', ')})`;
    const byKey = (column: 'skuHash' | 'urlHash') => (chunk: string[]) =>
      em.query(`SELECT * FROM goods WHERE customerId = ? AND ${column} IN ${inList(chunk.length)}`, [tenant.id, ...chunk]);
    // The skus first, then only the urls whose holder those did not bring: an element naming both keys
    // of a stored item (every update of a full row) finds it by its sku alone, and a url has one holder.
    // (Each look-up goes through its unique index; an OR may lead a planner to scan the whole catalog.)
    const skus = new Set<string>();
    for (const w of writes) if (w.sku !== undefined && !bySku.has(hashOf(w.sku))) skus.add(hashOf(w.sku));
    await pipelined(em, chunked([...skus], KEYS_CHUNK), byKey('skuHash'), keep, slicer);
    const held = new Set<string>();
    for (const g of found.values()) held.add(g.urlHash);
    const urls = new Set<string>();
    for (const w of writes) {
      if (w.url === undefined) continue;
      const hash = hashOf(w.url);
      if (!byUrl.has(hash) && !held.has(hash)) urls.add(hash);
    }
    await pipelined(em, chunked([...urls], KEYS_CHUNK), byKey('urlHash'), keep, slicer);
    const ids = [...new Set(writes.flatMap((w) => (w.id !== undefined && !found.has(w.id) && !byId.has(w.id) ? [w.id] : [])))];
    await pipelined(
      em,
      chunked(ids, CHUNK),
      (chunk) => em.query(`SELECT * FROM goods WHERE customerId = ? AND id IN ${inList(chunk.length)}`, [tenant.id, ...chunk]),
      keep,
      slicer,
    );
    return [...found.values()];
  }

  /**
   * Writes what deciding these items changed; returns the media rows it removed (their files go after
   * commit). What to write is taken when it is called, so the next segment may be decided while these
   * statements run (its own write starts only after this one has finished).
   */
  private async write(
    em: EntityManager,
    state: PlanState,
    items: Item[],
    fetched: Map<string, MediaOutcome>,
    refresh: boolean,
    slicer: TimeSlicer,
  ): Promise<Media[]> {
    const { tenant } = state;
    const inserting = items.filter((i) => i.isNew && !i.inserted);
    // Rows to update, grouped by the columns they need: a key or the search text that did not change is
    // left out of the statement, so that its index entry is not rewritten (SQLite rewrites the entries of
    // every indexed column a statement sets, changed or not).
    const updates = new Map<string, { columns: UpdatedColumn[]; rows: Goods[] }>();
    for (const item of items) {
      if (!item.dirty || (item.isNew && !item.inserted)) continue;
      const key = `${item.keysChanged ? 'k' : ''}${item.searchChanged ? 's' : ''}`;
      let group = updates.get(key);
      if (!group) updates.set(key, (group = { columns: updatedColumns(item.keysChanged, item.searchChanged), rows: [] }));
      group.rows.push(item.goods);
    }
    const inserts = inserting.map((i) => i.goods);
    // Keys may move between items inside one batch (even swap); park the moving ones on unique
    // placeholders first so that no intermediate state breaks the unique indexes.
    const parked = items
      .filter((i) => i.keysChanged && !(i.isNew && !i.inserted))
      .map((item) => Object.assign(new Goods(), item.goods, { skuHash: `moving:${item.goods.id}`, urlHash: `moving:${item.goods.id}` }));
    const media = items.map((item) => ({ item, plan: this.mediaPlan(item, refresh) }));
    for (const item of items) {
      item.dirty = false;
      item.keysChanged = false;
      item.searchChanged = false;
      item.mediaMentioned = false;
    }
    if (updates.size || inserts.length) state.changed = true;
    const { insert: INSERT_CHUNK, update: UPDATE_CHUNK } = WRITE_ROWS[this.transactions.isMysql ? 'mysql' : 'sqlite'];

    await pipelined(
      em,
      chunked(parked, UPDATE_CHUNK),
      (rows) => this.updateRows(em, tenant, rows, ['skuHash', 'urlHash']),
      () => undefined,
      slicer,
    );
    await pipelined(
      em,
      [...updates.values()].flatMap(({ columns, rows }) => chunked(rows, UPDATE_CHUNK).map((chunk) => ({ columns, rows: chunk }))),
      ({ columns, rows }) => this.updateRows(em, tenant, rows, columns),
      () => undefined,
      slicer,
    );
    // Each new item with its row as it is now (a later segment may change the item while this runs).
    const newRows = chunked(
      inserting.map((item, k) => ({ item, row: inserts[k] })),
      INSERT_CHUNK,
    );
    const insertInto = async (chunk: Array<{ row: Goods }>) => {
      const rows = chunk.map((c) => c.row);
      const returned = await insertRows(em, Goods, rows, ['id', 'skuHash']);
      return (returned ??
        (await em.query(`SELECT id, skuHash FROM goods WHERE customerId = ? AND skuHash IN (${rows.map(() => '?').join(', ')})`, [
          tenant.id,
          ...rows.map((g) => g.skuHash),
        ]))) as Array<{ id: number | string; skuHash: string }>;
    };
    const assignIds = (stored: Array<{ id: number | string; skuHash: string }>, chunk: Array<{ item: Item; row: Goods }>) => {
      const idBySku = new Map(stored.map((g) => [g.skuHash, Number(g.id)]));
      for (const { item, row } of chunk) {
        // The row inserted, and the item's state now (a later element may already have changed it).
        const id = idBySku.get(row.skuHash) as number;
        row.id = id;
        item.goods.id = id;
        item.inserted = true;
      }
    };
    await pipelined(em, newRows, insertInto, assignIds, slicer);

    // Media: replace or drop where the final mediaUrl says so (ids of new items are known by now).
    const now = new Date();
    const replaced: number[] = [];
    const attached: Media[] = [];
    for (const { item, plan } of media) {
      item.finalMedia = item.storedMedia;
      if (plan.action === 'keep') continue;
      if (!item.isNew) state.seen.add(item.goods.id);
      if (item.storedMedia) replaced.push(item.goods.id);
      item.finalMedia = null;
      if (plan.action === 'fetch') {
        const outcome = fetched.get(plan.url);
        if (outcome?.ok) {
          item.finalMedia = this.media.newRow(tenant.id, item.goods.id, outcome.media, now);
          attached.push(item.finalMedia);
        } else {
          item.mediaError = outcome ? outcome.error : NOT_FETCHED;
        }
      }
      // What a later segment compares its elements with.
      item.storedMedia = item.finalMedia;
    }
    const released = await this.media.deleteRowsOf(em, replaced);
    await this.media.insertRows(em, attached);
    if (replaced.length || attached.length) state.changed = true;
    return released;
  }

  private async updateRows(em: EntityManager, tenant: Tenant, rows: Goods[], columns: readonly UpdatedColumn[]): Promise<void> {
    await updateRowsById(em, Goods, rows, columns, { property: 'customerId', value: tenant.id });
  }

  private async envelope(tenant: Tenant, outcomes: Outcome[], slicer: TimeSlicer): Promise<SyncResponse> {
    let createCount = 0;
    let updateCount = 0;
    let failCount = 0;
    const results: UploadGoodsRowResult[] = [];
    for (const o of outcomes) {
      if (slicer.due()) await slicer.yield();
      results.push(this.result(tenant, o));
      if (o.status === 'FAIL') failCount += 1;
      else if (o.status === 'CREATE') createCount += 1;
      else updateCount += 1;
    }
    // Serialising the answer (a few MB for 10,000 rows) gets a slice of its own too.
    await slicer.yield();
    return { results, totalCount: outcomes.length, createCount, updateCount, failCount, _s: 0 };
  }

  private result(tenant: Tenant, o: Outcome): UploadGoodsRowResult {
    if (o.status === 'FAIL') {
      return { ...failedGoods(o.echo ?? {}, tenant.currency), row: o.row, status: 'FAIL', message: o.names?.now() ?? o.message };
    }
    const snapshot = o.snapshot as GoodsResponse;
    const item = o.item as Item;
    // Only the item's last mediaUrl of the call is fetched. A row whose mediaUrl a later row of the same
    // call replaced reports no image of its own, and, when it set that URL, says why.
    const replacedLater = (snapshot.mediaUrl ?? null) !== (item.goods.mediaUrl ?? null);
    let message: string | null = null;
    if (o.setsMedia && replacedLater) message = `image not fetched: row ${item.lastMediaRow} of the same request set another mediaUrl for this item`;
    else if (o.setsMedia && item.mediaError) message = `saved without image: ${item.mediaError}`;
    else if (o.setsMedia && item.mediaNotFetched) message = `dry run: image not fetched: ${item.mediaNotFetched}`;
    // The snapshot is this row's own: it becomes the row (same keys in the same order, row fields last).
    // (A dry run creates nothing: its CREATE rows have no id.)
    return Object.assign(snapshot as UploadGoodsRowResult, {
      id: item.goods.id ?? snapshot.id ?? null,
      medias: item.finalMedia && !replacedLater ? [toMediaResponse(item.finalMedia, tenant.baseUrl)] : [],
      row: o.row,
      status: o.status,
      message,
    });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A FAIL row still has every Goods field, so that clients mapping each row to Goods never trip on one:
 * the submitted values where the element had them (as sent), null where unknown, no media, the
 * customer's currency.
 */
function failedGoods(echo: Record<string, unknown>, currency: string): GoodsResponse {
  const sentOrNull = (key: string) => (echo[key] === undefined ? null : echo[key]);
  return {
    id: sentOrNull('id'),
    name: sentOrNull('name'),
    brand: sentOrNull('brand'),
    description: sentOrNull('description'),
    url: sentOrNull('url'),
    sku: sentOrNull('sku'),
    mediaUrl: sentOrNull('mediaUrl'),
    medias: [],
    originalPrice: sentOrNull('originalPrice'),
    discountedPrice: sentOrNull('discountedPrice'),
    currency,
    discountPercentage: sentOrNull('discountPercentage'),
  } as unknown as GoodsResponse;
}
