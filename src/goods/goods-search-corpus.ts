import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { EntityManager } from 'typeorm';
import { finishedWithin } from '../common/util/finished-within';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics.service';
import { REDIS_LIVENESS_MS, RedisConnection } from '../redis/redis.module';
import { readCatalogVersion } from './goods-list.queries';
import { PAGE_ITEMS, PagedLayout, PagedText, SEPARATOR } from './paged-text';
import { PairIndex } from './search-pairs';

/** Rows read per query while loading a corpus: each query is short, and requests run between them. */
const LOAD_CHUNK = 5000;
/** A corpus is reloaded at most once per this many times its last load took (so reloading uses ≤ 20% of the time). */
const RELOAD_SPACING = 4;
/**
 * A search finding no corpus at its version while one loads waits for the load this long at most, then
 * scans. Scanning beside the load instead cost a pass over the catalog per new keyword (on SQLite one
 * query holding the event loop, 80-100 ms at 300,000 goods), and a few clients searching right after a
 * restart kept the load, whose pages queue behind those scans, from ever finishing (attack audit).
 */
const LOAD_WAIT_MS = 10_000;
/** The one collation whose INSTR the in-memory match reproduces (MariaDB's UCA 4.0.0, primary level). */
const FOLDED_COLLATION = 'utf8mb4_unicode_ci';
/**
 * The most items a corpus keeps patched over its load (see GoodsSearchCorpus#patch): a tenth of the items
 * loaded, at least 2,000 and at most 50,000 (each search also passes over them). Past it the corpus is
 * left behind, and reloaded after the next search.
 */
const maxPatched = (loaded: number) => Math.min(50_000, Math.max(2_000, Math.floor(loaded / 10)));

/** An item as a write left it, over the loaded corpus: its search text (and its weights on MariaDB). */
interface PatchedItem {
  text: string;
  folded?: string;
}

/** What one patched item costs in memory, roughly: two bytes a code unit, and the map's entry. */
const patchedBytes = (item: PatchedItem | null | undefined) => (item ? 2 * (item.text.length + (item.folded?.length ?? 0)) : 0) + 64;
/**
 * A search finding the corpus behind waits for the steps on their way this long at most, if the corpus took
 * a step (this node's or another's) within RECENT_WRITE_MS: a customer written in bulk commits every second
 * or two, and a step from another node comes in parts through two busy event loops, while a scan instead
 * costs a pass over the catalog on the database (hundreds of ms at 100,000 goods while a bulk write runs).
 * When no step comes (Redis away), such a search is scanned this much later.
 */
const CATCH_UP_MS = 100;
const RECENT_WRITE_MS = 10_000;
/**
 * With REDIS_URL, steps go to the other nodes (on `<REDIS_PREFIX>:search-steps`) in messages of at most this
 * many items each; a step of more than MAX_STEP_ITEMS is not shared (the other nodes reload after it).
 */
const SHARED_STEP_ITEMS = 2_000;
/** The most items all kept steps of one customer hold (the oldest go first). */
const MAX_STEP_ITEMS = 50_000;
/** The most messages a shared step takes: its written items' parts, and its deleted ids'. */
const MAX_SHARED_PARTS = Math.ceil(MAX_STEP_ITEMS / SHARED_STEP_ITEMS) + 1;
/** The most nodes whose shared step a node puts together at once (see received). */
const MAX_ASSEMBLING = 64;
/** A rebuild that could not install its corpus is not tried again for the customer for this long (a load is, after a search). */
const REBUILD_RETRY_MS = 10_000;
/**
 * A search finding at least SETTLED_PATCHED items patched, and no step taken for SETTLE_MS (the writes have
 * gone quiet), starts a rebuild (see rebuildIfCrowded), so that the searches after a bulk write stop passing
 * over its items one by one (about 0.14 µs of CPU per patched item and search on a 2.1 GHz VM: 20,000
 * left after an import into a catalog of 1,000,000 made each search about four times as costly). Only on a
 * search: a catalog nobody searches costs no rebuild.
 */
const SETTLED_PATCHED = 1_000;
const SETTLE_MS = 2_000;

/** How long a search works before letting the event loop run (see SearchSlices); tests set 0. */
export const searchSlicing = { budgetMs: 5 };
/** Items a search checks between two readings of the clock, less one (a power of two, less one). */
const SLICE_CHECK_MASK = 1023;

/**
 * A search's slices: `pause()` lets the event loop run whatever is ready (setImmediate) once the search
 * has worked searchSlicing.budgetMs since the last one. Not the bulk writes' TimeSlicer: a search is itself an
 * interactive request, and waits neither for the bulk work's turns nor for other requests.
 */
class SearchSlices {
  private started = performance.now();

  async pause(): Promise<void> {
    if (performance.now() - this.started < searchSlicing.budgetMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }
}

/**
 * One customer's searchable text at one catalog version: the ids ascending, the searchTexts in the same
 * order (item i of `text`; a keyword without SEPARATOR can only match inside one item) and, on MariaDB,
 * the same texts as collation weights (one UTF-16 code unit per 16-bit primary weight).
 */
interface Corpus {
  version: number;
  ids: Float64Array;
  text: PagedText;
  folded?: PagedText;
  /** The pairs of the searched texts: `folded` on MariaDB, `text` on SQLite. */
  pairs: PairIndex;
  /** What the corpus costs, the patched items included. */
  bytes: number;
  /**
   * Items written since the load (by id): their text now, null once deleted. They take the
   * place of the loaded item of the same id, if any. `version`, `bytes` and this move on together, in
   * place, with each step (GoodsSearchCorpus#step).
   */
  patched?: Map<number, PatchedItem | null>;
}

/**
 * What `items` ids and their texts laid out in `pages` (and `foldedPages` on MariaDB) cost in memory: two
 * bytes a character (a string holding Hangul is stored two bytes a character), 8 an id, 4 a start.
 */
const layoutBytes = (items: number, pages: PagedLayout, foldedPages: PagedLayout | null) =>
  2 * pages.length + 12 * items + (foldedPages ? 2 * foldedPages.length + 4 * items : 0);

/** UTF-8 length of one code point. */
const utf8Length = (cp: number) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/** Where `id` is, or would go, in the ascending `ids`: the first place whose id is not below it. */
function lowerBound(ids: Float64Array, id: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The primary weights of the column collation (utf8mb4_unicode_ci on MariaDB), per character, as the
 * server's WEIGHT_STRING gives them: learnt for each new character once, kept for the process.
 */
export class CollationWeights {
  private readonly weights = new Map<number, string>();
  /** The same for the characters of one UTF-16 unit (not surrogates), by unit: an array reads faster than the map. */
  private readonly units: Array<string | undefined> = new Array<string | undefined>(0x10000).fill(undefined);

  /** Asks the server for the weights of the characters of `texts` not known yet. */
  async learn(em: EntityManager, texts: Iterable<string>): Promise<void> {
    const unknown = new Set<number>();
    // By UTF-16 unit, through the array of known units first: a bulk write's step brings 10,000 texts,
    // which a walk by code point through the map took 15 ms to check.
    for (const text of texts) {
      for (let i = 0; i < text.length; i++) {
        if (this.units[text.charCodeAt(i)] !== undefined) continue;
        const cp = text.codePointAt(i) as number;
        if (!this.weights.has(cp)) unknown.add(cp);
        if (cp > 0xffff) i++;
      }
    }
    const pending = [...unknown];
    for (let start = 0; start < pending.length; start += 1000) {
      const batch = pending.slice(start, start + 1000);
      const columns = batch.map((_, i) => `HEX(WEIGHT_STRING(CONVERT(? USING utf8mb4) COLLATE ${FOLDED_COLLATION})) AS w${i}`);
      const rows: Array<Record<string, string | null>> = await em.query(
        `SELECT ${columns.join(', ')}`,
        batch.map((cp) => String.fromCodePoint(cp)),
      );
      batch.forEach((cp, i) => {
        const hex = rows[0]?.[`w${i}`] ?? '';
        let units = '';
        for (let at = 0; at + 4 <= hex.length; at += 4) units += String.fromCharCode(parseInt(hex.slice(at, at + 4), 16));
        this.weights.set(cp, units);
        if (cp < 0xd800 || (cp > 0xdfff && cp < 0x10000)) this.units[cp] = units;
      });
    }
  }

  /** Whether every character of the text has been learnt (fold would give its weights). */
  knows(text: string): boolean {
    for (let i = 0; i < text.length; i++) {
      if (this.units[text.charCodeAt(i)] !== undefined) continue;
      const cp = text.codePointAt(i) as number;
      if (!this.weights.has(cp)) return false;
      if (cp > 0xffff) i++;
    }
    return true;
  }

  /** The weights of a text whose characters are all learnt. */
  fold(text: string): string {
    let folded = '';
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      const known = this.units[unit];
      if (known !== undefined) {
        folded += known;
        continue;
      }
      // A surrogate: the character it starts (or a lone one, weighed as itself).
      const cp = text.codePointAt(i) as number;
      folded += this.weights.get(cp) as string;
      if (cp > 0xffff) i++;
    }
    return folded;
  }

  /**
   * Whether MariaDB's INSTR(text, keyword) under the collation is > 0. It compares, at each character
   * boundary of the text where the keyword's byte length still fits, the window of that many bytes with
   * the keyword by the collation (no space padding). A window ending inside a character holds a broken
   * sequence, which equals no keyword without the replacement weight (`supported` keeps those out).
   */
  instr(text: string, folded: string, keywordBytes: number, keywordFolded: string): boolean {
    // The weights of the text's characters laid end to end are `folded`, so a window whose weights equal
    // the keyword's is one of its occurrences there. When every character met has weights (none is
    // ignorable) and is not a surrogate, an occurrence is a window exactly when it starts and ends on
    // character boundaries and its characters take the keyword's byte length (then the window ends where
    // the byte count reaches that length, as INSTR's does). Found with indexOf and one walk along the
    // text, without the per-position copies of the general comparison below, which a keyword in a
    // hundred thousand items made take hundreds of milliseconds at a time.
    const needle = keywordFolded.length;
    if (needle === 0) return this.instrByWindows(text, keywordBytes, keywordFolded);
    let at = folded.indexOf(keywordFolded);
    let char = 0; // the character whose weights start at `start` in folded
    let start = 0;
    while (at >= 0) {
      for (; start < at; char++) {
        const weights = char < text.length ? this.units[text.charCodeAt(char)] : undefined;
        if (!weights) return this.instrByWindows(text, keywordBytes, keywordFolded);
        start += weights.length;
      }
      if (start === at) {
        let end = start;
        let bytes = 0;
        let next = char;
        for (; end < at + needle; next++) {
          const unit = text.charCodeAt(next);
          const weights = next < text.length ? this.units[unit] : undefined;
          if (!weights) return this.instrByWindows(text, keywordBytes, keywordFolded);
          end += weights.length;
          bytes += utf8Length(unit);
        }
        if (end === at + needle && bytes === keywordBytes) return true;
        // A shorter window would reach on into the next character, which must then have weights of its own.
        if (end === at + needle && bytes < keywordBytes && next < text.length && !this.units[text.charCodeAt(next)]) {
          return this.instrByWindows(text, keywordBytes, keywordFolded);
        }
      }
      at = folded.indexOf(keywordFolded, at + 1);
    }
    return false;
  }

  /** instr by comparing the folded window at every character boundary: any text. */
  private instrByWindows(text: string, keywordBytes: number, keywordFolded: string): boolean {
    const chars = Array.from(text);
    const lengths = chars.map((ch) => utf8Length(ch.codePointAt(0) as number));
    for (let p = 0; p < chars.length; p++) {
      let bytes = 0;
      let q = p;
      while (q < chars.length && bytes < keywordBytes) bytes += lengths[q++];
      if (bytes < keywordBytes) return false;
      if (bytes === keywordBytes && this.fold(chars.slice(p, q).join('')) === keywordFolded) return true;
    }
    return false;
  }
}

/**
 * Whether a folded keyword can be matched in memory: it has weights, and none of them is the separator or
 * the replacement weight that MariaDB gives supplementary characters (and, by the same token, a broken
 * byte sequence): those keywords are left to the database.
 */
function supported(folded: string): boolean {
  if (!folded) return false;
  for (let i = 0; i < folded.length; i++) {
    const unit = folded.charCodeAt(i);
    if (unit === 0 || unit >= 0xfffd) return false;
  }
  return true;
}

interface LoadState {
  loading?: Promise<void>;
  /** The catalog version the load under way started at (the steps after it are kept for it). */
  loadingFrom?: number;
  lastLoadMs: number;
  finishedAt: number;
  /** A rebuild (see rebuildIfCrowded) is under way (then `loading` is set too). */
  rebuilding?: boolean;
  /** When a rebuild last ended without installing its corpus. */
  rebuildFailedAt?: number;
}

/** What one goods write transaction changed in the searchable texts (see GoodsSearchCorpus#patch). */
interface Step {
  written: Array<{ id: number; searchText: string }>;
  deleted: number[];
}

/**
 * Matches a keyword against a customer's catalog in memory, exactly as `INSTR(searchText, ?) > 0` does in
 * the database, so that a keyword never searched before costs a pass over a string instead of a scan of
 * the customer's search column.
 *
 * A customer's corpus is loaded on its first search, in the background (that search and any before the
 * load completes are scanned), keyset page by page, between two reads of the catalog version: every goods
 * write transaction bumps that version as its last statement, so equal readings prove that no write
 * committed during the load, and the corpus is the catalog at that version. It is used only while the
 * database reports that version or an older one (read by the list on every request, on any node: a request
 * that read an older one runs beside a write that committed since). Each write moves it on by a step (see
 * patch, docs/decisions/0018): a write on this node, and with REDIS_URL one on another node. A corpus that
 * missed a step is reloaded in the background after the next search, at most once per RELOAD_SPACING
 * times its last load time, and searches scan meanwhile. All corpora together stay within
 * SEARCH_MEMORY_MB (least recently searched dropped
 * first); a catalog larger than that is always scanned.
 *
 * SQLite: INSTR is a plain substring test on the stored text, which String#indexOf is too. MariaDB: INSTR
 * compares with the column's collation (case- and accent-insensitive, `ß` = `ss`) window by window (see
 * CollationWeights#instr); the corpus keeps the texts also as collation weights, a keyword's weights as a
 * substring of an item's is a necessary condition for a match (a window equal to the keyword has the same
 * weights, and lies on character boundaries), and each such candidate is then checked exactly. Other
 * servers or collations (MySQL, a column not in utf8mb4_unicode_ci) are always scanned.
 */
@Injectable()
export class GoodsSearchCorpus implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(GoodsSearchCorpus.name);
  private readonly corpora = new Map<number, Corpus>();
  private readonly states = new Map<number, LoadState>();
  /** Per customer: when this node last took a step (see matchInMemory), and the searches waiting for the corpus to catch up. */
  private readonly lastStepAt = new Map<number, number>();
  private readonly waiters = new Map<number, Set<() => void>>();
  /** Per customer, by the version each one committed: the steps not yet applied, or still needed by a load. */
  private readonly steps = new Map<number, Map<number, Step>>();
  private weights?: CollationWeights | null;
  private weightsChecked?: Promise<CollationWeights | null>;
  private used = 0;
  private closed = false;
  /** With REDIS_URL: the channel steps are shared on, and this node's subscription to it. */
  private channel?: string;
  private subscriber?: Redis;
  /** This node, in the steps it shares (it skips its own when they come back). */
  private readonly node = randomUUID();
  /** The steps this node is publishing, one after the other (see share), and how many items they hold. */
  private readonly sharing = { queue: Promise.resolve(), items: 0 };
  /** Per node that shares steps: the step whose parts are arriving (see received). */
  private readonly assembling = new Map<string, Step & { customerId: number; version: number; parts: number; next: number }>();

  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly redis: RedisConnection,
  ) {}

  /** With REDIS_URL, the nodes share their steps: each node's corpora follow the writes of all of them. */
  onModuleInit(): void {
    const { url, prefix } = this.config.redis;
    if (!url || !this.redis.client) return;
    const channel = `${prefix}:search-steps`;
    // Its own connection (a subscriber can do nothing else); the subscription is replayed after a reconnect.
    const subscriber = RedisConnection.open(url, this.logger, { offlineQueue: true });
    subscriber.on('message', (from: string, message: string) => {
      if (from === channel) this.received(message);
    });
    subscriber.subscribe(channel).catch((err: Error) => this.logger.warn(`search steps of other nodes not followed: ${err.message}`));
    this.channel = channel;
    this.subscriber = subscriber;
    // A subscriber only listens: a PING tells whether its connection still carries anything.
    RedisConnection.pingEvery(subscriber, REDIS_LIVENESS_MS);
  }

  onApplicationShutdown(): void {
    this.closed = true;
    this.subscriber?.disconnect();
  }

  /**
   * The ids of the customer's goods whose searchText holds `keyword` (normalized, non-empty), newest
   * first, if the customer's corpus is at `version` or later. Otherwise the corpus is (re)loaded in the
   * background and the search waits for the load (LOAD_WAIT_MS at most); undefined (the caller scans)
   * when no load runs (one ended lately: see RELOAD_SPACING), it does not end in time, or it installs no
   * corpus at that version.
   */
  async match(customerId: number, keyword: string, version: number): Promise<number[] | undefined> {
    const found = await this.matchInMemory(customerId, keyword, version);
    this.metrics.searches.inc({ path: found ? 'memory' : 'scan' });
    return found;
  }

  private async matchInMemory(customerId: number, keyword: string, version: number, waited = false): Promise<number[] | undefined> {
    // A keyword with the separator or a lone surrogate (which the database would read as U+FFFD) is scanned.
    if (this.config.limits.searchMemoryBytes === 0 || keyword.includes(SEPARATOR) || !keyword.isWellFormed()) return undefined;
    let corpus = this.corpora.get(customerId);
    // Just behind while the catalog is being written: the steps of commits this request already sees are
    // usually on their way (commits are told after they happen, not always in order; other nodes' over Redis).
    if (corpus && corpus.version < version && performance.now() - (this.lastStepAt.get(customerId) ?? -Infinity) < RECENT_WRITE_MS) {
      corpus = await this.caughtUp(customerId, version);
    }
    // A corpus ahead of the version read is the catalog after a write that committed since: newer than
    // what the request saw, as a scan started now would be too.
    if (!corpus || corpus.version < version) {
      this.refresh(customerId, version);
      const loading = this.states.get(customerId)?.loading;
      if (!loading || waited || !(await finishedWithin(loading, LOAD_WAIT_MS))) return undefined;
      return this.matchInMemory(customerId, keyword, version, true);
    }
    // Most recently searched last: the map's order is the eviction order.
    this.corpora.delete(customerId);
    this.corpora.set(customerId, corpus);
    if (performance.now() - (this.lastStepAt.get(customerId) ?? -Infinity) >= SETTLE_MS) {
      this.rebuildIfCrowded(customerId, corpus, this.steps.get(customerId) ?? new Map<number, Step>(), true);
    }

    // The string searched: the texts themselves on SQLite, their collation weights on MariaDB, where an
    // item whose weights hold the keyword's is then checked as INSTR compares (`instr`, given the item's
    // text and weights).
    let needle = keyword;
    let instr: ((text: string, folded: string) => boolean) | undefined;
    if (corpus.folded !== undefined) {
      const weights = this.weights as CollationWeights;
      await weights.learn(this.transactions.manager, [keyword]);
      const folded = weights.fold(keyword);
      if (!supported(folded)) return undefined;
      const bytes = Buffer.byteLength(keyword, 'utf8');
      needle = folded;
      instr = (text, itemFolded) => weights.instr(text, itemFolded, bytes, folded);
    }
    const haystack = corpus.folded ?? corpus.text;
    // A keyword held by a large share of a large catalog means hundreds of thousands of items to check
    // (a Hangul syllable of a common word, at 1,000,000 goods: 100 ms and more on a 2-core VM): the checks
    // go in slices, and whatever else is ready runs between them. The corpus's loaded texts do not change
    // meanwhile; its patched items are read once, at the end, so the answer is the catalog at one version
    // (the one the corpus has reached by then, which is never older than the request's).
    const slices = new SearchSlices();
    let items: number[] = [];
    if (needle.length === 1) {
      // One code unit: none of the items if no item holds it, else a pass over all the texts.
      if (corpus.pairs.hasUnit(needle.charCodeAt(0))) {
        for (let page = 0; page < haystack.pageCount; page++) {
          haystack.holding(needle, page, page + 1, items);
          await slices.pause();
        }
      }
    } else {
      const candidates = corpus.pairs.candidates(needle);
      // Two units are one pair: the items holding it are the candidates.
      if (needle.length === 2) items = Array.from(candidates);
      else {
        for (let k = 0; k < candidates.length; k++) {
          if (haystack.item(candidates[k]).includes(needle)) items.push(candidates[k]);
          if ((k & SLICE_CHECK_MASK) === 0) await slices.pause();
        }
      }
    }
    if (instr && corpus.folded) {
      const { text, folded } = corpus;
      const kept: number[] = [];
      for (let k = 0; k < items.length; k++) {
        if (instr(text.item(items[k]), folded.item(items[k]))) kept.push(items[k]);
        if ((k & SLICE_CHECK_MASK) === 0) await slices.pause();
      }
      items = kept;
    }
    let ids = new Array<number>(items.length);
    for (let k = 0; k < items.length; k++) ids[items.length - 1 - k] = corpus.ids[items[k]];
    const patched = corpus.patched;
    if (patched?.size) {
      // Written since the load: the loaded text of such an item no longer counts, its text now does.
      ids = ids.filter((id) => !patched.has(id));
      let added = false;
      for (const [id, item] of patched) {
        if (!item) continue;
        if (instr && item.folded !== undefined ? instr(item.text, item.folded) : item.text.includes(needle)) {
          ids.push(id);
          added = true;
        }
      }
      if (added) ids.sort((a, b) => b - a);
    }
    return ids;
  }

  /**
   * After the commit of a goods write transaction that took the customer's catalog to `version` (what
   * bumpCatalogVersion returned: from version - 1, under the catalog's write lock): the items it inserted or whose search text
   * it changed, and the ids it deleted. Kept as the step to `version`; a corpus at version - 1 takes it
   * (and any later steps already kept: commits may be told out of order) and is then at `version`, so
   * that searches after a write are still answered from memory, without a reload. A load under way uses
   * the steps too (see load). With REDIS_URL the step also goes to the other nodes, which take it the
   * same way (received). A step the patched items cannot take (their bound, the memory budget, or on
   * MariaDB a character whose weights are not known yet) waits for a rebuild of the corpus in memory
   * (rebuildIfCrowded). A step that never comes (missed while Redis was away, or too large to share)
   * leaves the corpus behind, to be reloaded after the next search as before.
   */
  patch(customerId: number, version: number, written: ReadonlyArray<{ id: number; searchText: string }>, deleted: readonly number[] = []): void {
    if (this.closed) return;
    const step: Step = { written: written.map(({ id, searchText }) => ({ id, searchText })), deleted: [...deleted] };
    this.take(customerId, version, step);
    if (this.channel && step.written.length + step.deleted.length <= MAX_STEP_ITEMS) this.share(customerId, version, step);
  }

  /**
   * Publishes the step for the other nodes, in parts of at most SHARED_STEP_ITEMS items (a message each,
   * stringified one per turn of the event loop), this node's steps one after the other: the parts of
   * one step follow each other on the channel, in order, which is how a node puts them back together
   * (received). A node that misses one (Redis away) finds its corpus behind and reloads.
   */
  private share(customerId: number, version: number, step: Step): void {
    const parts: Step[] = [];
    for (let at = 0; at < step.written.length; at += SHARED_STEP_ITEMS) parts.push({ written: step.written.slice(at, at + SHARED_STEP_ITEMS), deleted: [] });
    for (let at = 0; at < step.deleted.length; at += SHARED_STEP_ITEMS) parts.push({ written: [], deleted: step.deleted.slice(at, at + SHARED_STEP_ITEMS) });
    if (!parts.length) parts.push({ written: [], deleted: [] });
    const items = step.written.length + step.deleted.length;
    // Bounded: past it, a step is not shared (the other nodes reload), rather than held here.
    if (this.sharing.items + items > MAX_STEP_ITEMS) return;
    this.sharing.items += items;
    this.sharing.queue = this.sharing.queue.then(async () => {
      try {
        for (let part = 0; part < parts.length; part++) {
          if (part > 0) await new Promise((resolve) => setImmediate(resolve));
          const client = this.redis.client;
          if (this.closed || !client || !this.channel) break;
          const message = JSON.stringify({ node: this.node, customerId, version, part, parts: parts.length, ...parts[part] });
          client.publish(this.channel, message).catch(() => undefined);
        }
      } finally {
        this.sharing.items -= items;
      }
    });
  }

  /** Keeps the step to `version` and moves the customer's corpus on as far as the steps go. */
  private take(customerId: number, version: number, step: Step): void {
    let steps = this.steps.get(customerId);
    if (!steps) this.steps.set(customerId, (steps = new Map<number, Step>()));
    steps.set(version, step);
    this.lastStepAt.set(customerId, performance.now());
    this.advance(customerId);
  }

  /**
   * A part of a step another node shared (see share); anything else on the channel is ignored. The parts
   * of a step come one after the other from its node: a part that is not the next one expected from that
   * node drops the step being put together (the corpus then finds itself behind, and reloads).
   */
  private received(message: string): void {
    if (this.closed) return;
    let shared: unknown;
    try {
      shared = JSON.parse(message);
    } catch {
      return;
    }
    const s = shared as { node?: unknown; customerId?: unknown; version?: unknown; part?: unknown; parts?: unknown; written?: unknown; deleted?: unknown };
    if (typeof shared !== 'object' || shared === null || s.node === this.node || typeof s.node !== 'string') return;
    const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
    if (!isId(s.customerId) || !isId(s.version) || !Array.isArray(s.written) || !Array.isArray(s.deleted)) return;
    const written = s.written as Array<{ id?: unknown; searchText?: unknown }>;
    if (!written.every((w) => typeof w === 'object' && w !== null && isId(w.id) && typeof w.searchText === 'string')) return;
    if (!(s.deleted as unknown[]).every(isId)) return;
    // A message without parts is a whole step.
    const parts = s.parts ?? 1;
    const part = s.part ?? 0;
    if (!isId(parts) || parts > MAX_SHARED_PARTS || !Number.isSafeInteger(part) || (part as number) < 0 || (part as number) >= parts) return;
    const node = s.node;
    // Taken out, and put back (as the newest) only while incomplete: a part out of order drops the step.
    const pending = this.assembling.get(node);
    this.assembling.delete(node);
    const step =
      part === 0 ? { customerId: s.customerId, version: s.version, parts, next: 0, written: [] as Step['written'], deleted: [] as number[] } : pending;
    if (!step || step.customerId !== s.customerId || step.version !== s.version || step.parts !== parts || step.next !== part) return;
    for (const w of written) step.written.push({ id: w.id as number, searchText: w.searchText as string });
    for (const id of s.deleted as number[]) step.deleted.push(id);
    step.next++;
    if (step.next < parts) {
      this.assembling.set(node, step);
      // One step per node at most; and no more than MAX_ASSEMBLING nodes' (a node gone mid-step leaves one).
      for (const [other] of this.assembling) {
        if (this.assembling.size <= MAX_ASSEMBLING) break;
        this.assembling.delete(other);
      }
      return;
    }
    this.take(step.customerId, step.version, { written: step.written, deleted: step.deleted });
  }

  /** The customer's corpus once it is at `version` or later, or after CATCH_UP_MS (whatever it is then). */
  private caughtUp(customerId: number, version: number): Promise<Corpus | undefined> {
    return new Promise((resolve) => {
      let waiters = this.waiters.get(customerId);
      if (!waiters) this.waiters.set(customerId, (waiters = new Set()));
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
        if (!waiters.size && this.waiters.get(customerId) === waiters) this.waiters.delete(customerId);
        resolve(this.corpora.get(customerId));
      };
      const check = () => {
        if ((this.corpora.get(customerId)?.version ?? -1) >= version) done();
      };
      const timer = setTimeout(done, CATCH_UP_MS);
      waiters.add(check);
    });
  }

  /** Applies the kept steps that follow the customer's corpus, in order, and forgets the ones no longer needed. */
  private advance(customerId: number): void {
    const steps = this.steps.get(customerId) ?? new Map<number, Step>();
    const corpus = this.corpora.get(customerId);
    if (corpus) {
      // While a rebuild runs, the patched items may grow to twice their bound: the rebuild takes them
      // soon, and meanwhile searches stay in memory (each passes over them, a few ms at most).
      const grown = this.step(corpus, steps, this.states.get(customerId)?.rebuilding ? 2 : 1);
      this.used += grown;
      this.metrics.searchCorpusBytes.inc(grown);
      this.rebuildIfCrowded(customerId, corpus, steps);
    }
    // Kept: the steps after the corpus, or after the start of a load under way; within their bound.
    const loadFrom = this.states.get(customerId)?.loadingFrom;
    const keepAfter = Math.min(this.corpora.get(customerId)?.version ?? Infinity, loadFrom ?? Infinity);
    let items = 0;
    for (const [version, step] of [...steps].sort((a, b) => b[0] - a[0])) {
      items += step.written.length + step.deleted.length;
      if (version <= keepAfter || items > MAX_STEP_ITEMS) steps.delete(version);
    }
    if (!steps.size) this.steps.delete(customerId);
    for (const check of [...(this.waiters.get(customerId) ?? [])]) check();
  }

  /**
   * Moves the corpus on, in place, by the kept steps that follow it, one version after the other; returns
   * how many bytes it grew by. Stops before a step it cannot take (see patch). Searches read a corpus only
   * between two awaits, so none sees a step half applied.
   */
  private step(corpus: Corpus, steps: Map<number, Step>, bounds = 1): number {
    const weights = corpus.folded !== undefined ? this.weights : undefined;
    if (corpus.folded !== undefined && !weights) return 0;
    const grown = corpus.bytes;
    for (let step = steps.get(corpus.version + 1); step; step = steps.get(corpus.version + 1)) {
      // Checked before anything is applied: the bound of patched items, the characters' weights, the memory budget.
      const patched = corpus.patched ?? new Map<number, PatchedItem | null>();
      let added = 0;
      for (const { id } of step.written) if (!patched.has(id)) added++;
      for (const id of step.deleted) if (!patched.has(id)) added++;
      if (patched.size + added > bounds * maxPatched(corpus.ids.length)) break;
      if (weights && !step.written.every(({ searchText }) => weights.knows(searchText))) break;
      // The step's items as they will stand (a deleted one is null), and what they change in memory.
      const changes: Array<[number, PatchedItem | null]> = [
        ...step.written.map(({ id, searchText }): [number, PatchedItem] => [
          id,
          weights ? { text: searchText, folded: weights.fold(searchText) } : { text: searchText },
        ]),
        ...step.deleted.map((id): [number, null] => [id, null]),
      ];
      let bytes = 0;
      for (const [id, item] of changes) bytes += patchedBytes(item) - (patched.has(id) ? patchedBytes(patched.get(id)) : 0);
      if (this.used + (corpus.bytes - grown) + bytes > this.config.limits.searchMemoryBytes) break;
      for (const [id, item] of changes) patched.set(id, item);
      corpus.patched = patched;
      corpus.bytes += bytes;
      corpus.version += 1;
    }
    return corpus.bytes - grown;
  }

  /**
   * Starts a rebuild of the customer's corpus in memory (see rebuild) when its patched items reach half
   * their bound, or a step waits after it that it could not take (the bound, the memory budget), so that
   * a catalog written in bulk all along is still searched from memory: each search passes over the patched
   * items, and a corpus left behind is searched by a scan until it is reloaded. `settled`: a search found
   * the writes quiet (see SETTLED_PATCHED); then fewer patched items are enough. Not while a load or a
   * rebuild runs, nor within REBUILD_RETRY_MS of one that failed.
   */
  private rebuildIfCrowded(customerId: number, corpus: Corpus, steps: Map<number, Step>, settled = false): void {
    const patched = corpus.patched?.size ?? 0;
    const crowded = patched >= (settled ? SETTLED_PATCHED : maxPatched(corpus.ids.length) / 2);
    if ((!crowded && !steps.has(corpus.version + 1)) || this.closed) return;
    const state = this.stateOf(customerId);
    if (state.loading || (state.rebuildFailedAt && performance.now() - state.rebuildFailedAt < REBUILD_RETRY_MS)) return;
    // The steps after the corpus are kept for the rebuild from now on (see advance).
    state.loadingFrom = corpus.version;
    state.rebuilding = true;
    state.loading = this.rebuild(customerId, corpus)
      .then(
        (installed) => {
          if (!installed) state.rebuildFailedAt = performance.now();
        },
        (err: unknown) => {
          state.rebuildFailedAt = performance.now();
          if (!this.closed) this.logger.warn(`search corpus of customer ${customerId} not rebuilt: ${(err as Error).message}`);
        },
      )
      .finally(() => {
        state.loading = undefined;
        state.loadingFrom = undefined;
        state.rebuilding = false;
        // Steps refused meanwhile (the corpus is back to one bound), or a corpus still crowded: at once, not at the next write.
        if (!this.closed) this.advance(customerId);
      });
  }

  /**
   * A new corpus from the customer's corpus `base`, its patched items and the steps waiting after it,
   * built in memory (no database read but, on MariaDB, the weights of characters not met yet): the items
   * in id order with their texts now, and nothing patched. Steps that come meanwhile are kept and applied
   * to it as to any corpus. Installed in place of `base` unless that was replaced or dropped meanwhile, or
   * the new corpus is behind it; true when installed.
   */
  private async rebuild(customerId: number, base: Corpus): Promise<boolean> {
    const weights = base.folded !== undefined ? this.weights : undefined;
    if (base.folded !== undefined && !weights) return false;
    // Not in the turn of the write that crowded the corpus: that turn has its own work to finish.
    if (!(await this.turn()) || this.corpora.get(customerId) !== base) return false;
    // The items that take the place of the loaded ones: the patched items as they are now, then the
    // steps that wait after the corpus, in order.
    const changed = new Map<number, PatchedItem | null>(base.patched ?? []);
    const waiting: Step[] = [];
    let version = base.version;
    const steps = this.steps.get(customerId);
    for (let step = steps?.get(version + 1); step; step = steps?.get(version + 1)) {
      waiting.push(step);
      version++;
    }
    // Their texts LOAD_CHUNK at a time (learnt and folded on MariaDB), with turns of the event loop between.
    for (const step of waiting) {
      for (let from = 0; from < step.written.length; from += LOAD_CHUNK) {
        const slice = step.written.slice(from, from + LOAD_CHUNK);
        if (weights)
          await weights.learn(
            this.transactions.manager,
            slice.map((w) => w.searchText),
          );
        for (const { id, searchText } of slice) changed.set(id, weights ? { text: searchText, folded: weights.fold(searchText) } : { text: searchText });
        if (!(await this.turn())) return false;
      }
      for (const id of step.deleted) changed.set(id, null);
    }

    // Items not in the loaded corpus, ascending, to be merged in at their place; and the first place
    // where the new corpus differs from the loaded one (a changed item, or an added one coming in).
    const added: number[] = [];
    let differsAt = base.ids.length;
    for (const [id, item] of changed) {
      const at = lowerBound(base.ids, id);
      const loaded = base.ids[at] === id;
      if (!loaded && item) added.push(id);
      if ((loaded || item) && at < differsAt) differsAt = at;
    }
    added.sort((a, b) => a - b);
    // The whole pages before that place are the loaded corpus's own (the same strings), and so are the
    // pair index's segments before it: a bulk create, whose new goods come after the others, leaves only
    // the last page and segment to lay out and index again, and no second copy of the rest in memory.
    const kept = Math.floor(differsAt / PAGE_ITEMS);
    const keptItems = kept * PAGE_ITEMS;
    const capacity = base.ids.length + added.length;
    const ids = new Float64Array(capacity);
    ids.set(base.ids.subarray(0, keptItems));
    let count = keptItems;
    const pages = PagedLayout.continuing(base.text, kept, capacity);
    const foldedPages = weights && base.folded ? PagedLayout.continuing(base.folded, kept, capacity) : null;
    const push = (id: number, text: string, folded: string | undefined) => {
      ids[count++] = id;
      pages.push(text);
      foldedPages?.push(folded as string);
    };
    const pushChanged = (id: number) => {
      const item = changed.get(id);
      if (item) push(id, item.text, item.folded);
    };
    const { text, folded } = base;
    // One merge of the loaded items and the added ones, with a turn of the event loop every LOAD_CHUNK
    // items of either kind (a bulk write's new goods all come after the loaded ones: 10,000 of them in
    // one go held the event loop for 27 ms at 100,000 goods on MariaDB).
    let next = 0;
    for (let i = keptItems, merged = 1; i < base.ids.length || next < added.length; merged++) {
      if (next < added.length && (i === base.ids.length || added[next] < base.ids[i])) pushChanged(added[next++]);
      else {
        const id = base.ids[i];
        if (changed.has(id)) pushChanged(id);
        else push(id, text.item(i), folded?.item(i));
        i++;
      }
      if (merged % LOAD_CHUNK === 0 && !(await this.turn())) return false;
    }
    // Deleted items leave the array's end unused: a view of the items, not a second copy of them all.
    const corpus = await this.build(version, ids.subarray(0, count), pages, foldedPages, { pairs: base.pairs, items: keptItems });
    if (!corpus || this.corpora.get(customerId) !== base) return false;
    // The steps committed meanwhile, which `base` took with the room a rebuild gives (see advance).
    const later = this.steps.get(customerId);
    if (later) this.step(corpus, later, 2);
    if (corpus.version < base.version) return false;
    // The steps kept for it are let go, and any waiting search told, by the advance when it ends (rebuildIfCrowded).
    this.install(customerId, corpus);
    return true;
  }

  /** The customer's load state, created on first use. */
  private stateOf(customerId: number): LoadState {
    let state = this.states.get(customerId);
    if (!state) this.states.set(customerId, (state = { lastLoadMs: 0, finishedAt: 0 }));
    return state;
  }

  /** Starts a background load of the customer's corpus unless one runs or the last one was too recent. */
  private refresh(customerId: number, version: number): void {
    const state = this.stateOf(customerId);
    if (state.loading || this.closed) return;
    if (state.finishedAt && performance.now() - state.finishedAt < state.lastLoadMs * RELOAD_SPACING) return;
    const started = performance.now();
    state.loading = this.load(customerId, version)
      .catch((err: unknown) => {
        if (!this.closed) this.logger.warn(`search corpus of customer ${customerId} not loaded: ${(err as Error).message}`);
      })
      .finally(() => {
        state.loading = undefined;
        state.loadingFrom = undefined;
        state.lastLoadMs = performance.now() - started;
        state.finishedAt = performance.now();
      });
  }

  /** Whether the in-memory match reproduces this server's INSTR (null: MySQL, or another collation). */
  private collationWeights(): Promise<CollationWeights | null> {
    this.weightsChecked ??= (async () => {
      if (!this.transactions.isMysql) return null;
      const rows: Array<{ version: string; collation: string | null }> = await this.transactions.manager.query(
        "SELECT VERSION() AS version, (SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'goods' AND COLUMN_NAME = 'searchText') AS collation",
      );
      const usable = /mariadb/i.test(rows[0]?.version ?? '') && rows[0]?.collation === FOLDED_COLLATION;
      if (!usable) return null;
      // Every character of the Basic Multilingual Plane at once (64 queries, once per process), so that a
      // search never waits for the server's answer about its keyword's characters; others are asked
      // when first met (those outside the plane weigh as U+FFFD, and are left to the database anyway).
      const weights = new CollationWeights();
      let plane = '';
      for (let cp = 0; cp < 0x10000; cp++) if (cp < 0xd800 || cp > 0xdfff) plane += String.fromCharCode(cp);
      await weights.learn(this.transactions.manager, [plane]);
      return weights;
    })().catch((err: unknown) => {
      this.weightsChecked = undefined;
      throw err;
    });
    return this.weightsChecked;
  }

  private async load(customerId: number, expected: number): Promise<void> {
    const em = this.transactions.manager;
    const mysql = this.transactions.isMysql;
    if (mysql) {
      this.weights = await this.collationWeights();
      if (!this.weights) return;
    }
    const budget = this.config.limits.searchMemoryBytes;
    const version = await readCatalogVersion(em, customerId);
    if (version < expected) return;
    const state = this.states.get(customerId);
    if (state) state.loadingFrom = version;
    // Each page is joined as it fills (PagedLayout), so that the load holds a few long strings rather than two million short ones.
    const ids: number[] = [];
    const pages = new PagedLayout();
    const foldedPages = mysql ? new PagedLayout() : null;
    let after = 0;
    for (;;) {
      if (this.closed) return;
      const rows: Array<{ id: number | string; searchText: string }> = await em.query(
        'SELECT id, searchText FROM goods WHERE customerId = ? AND id > ? ORDER BY id LIMIT ?',
        [customerId, after, LOAD_CHUNK],
      );
      const texts = rows.map((r) => r.searchText);
      for (const row of rows) ids.push(Number(row.id));
      pages.add(texts);
      if (foldedPages) {
        const weights = this.weights as CollationWeights;
        await weights.learn(em, texts);
        foldedPages.add(texts.map((t) => weights.fold(t)));
      }
      if (layoutBytes(ids.length, pages, foldedPages) > budget) return;
      if (rows.length < LOAD_CHUNK) break;
      after = Number(rows[rows.length - 1].id);
      // Let requests run between two pages (on SQLite each query holds the event loop).
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Writes may have committed meanwhile: the rows read are then a mix of versions. The corpus is still
    // exact once every write since `version` is applied over it (each step sets the final text of what it
    // wrote, and a patched item's loaded text no longer counts): only when this node made them all, and
    // kept their steps, is it installed.
    const final = await readCatalogVersion(em, customerId);
    if (this.closed) return;
    if (final !== version) {
      const steps = this.steps.get(customerId);
      for (let v = version + 1; v <= final; v++) if (!steps?.has(v)) return;
    }

    const corpus = await this.build(version, Float64Array.from(ids), pages, foldedPages);
    if (!corpus) return;
    const steps = this.steps.get(customerId);
    if (steps) this.step(corpus, steps);
    // Not at the version read at the end (a step it could not take), or older than the corpus it would replace.
    if (corpus.version < final || corpus.version < (this.corpora.get(customerId)?.version ?? 0)) return;
    this.install(customerId, corpus);
    this.advance(customerId);
  }

  /**
   * The corpus at `version` of these items (ids ascending, their texts laid out in `pages`, and in
   * `foldedPages` on MariaDB); undefined when it would pass the memory budget, or the node is closing.
   * Indexes in slices, with turns of the event loop between them (the texts are already joined, page by
   * page), taking the pair index's segments of `reuse` over its first `items` items (the same as these).
   */
  private async build(
    version: number,
    ids: Float64Array,
    pages: PagedLayout,
    foldedPages: PagedLayout | null,
    reuse?: { pairs: PairIndex; items: number },
  ): Promise<Corpus | undefined> {
    const budget = this.config.limits.searchMemoryBytes;
    const bytes = layoutBytes(ids.length, pages, foldedPages);
    if (bytes > budget) return undefined;
    if (!(await this.turn())) return undefined;
    const text = pages.done();
    const folded = foldedPages?.done();
    // The pair index holds about one posting (4 bytes) per code unit.
    if (bytes + 4 * (foldedPages ?? pages).length > budget || !(await this.turn())) return undefined;
    const pairs = await PairIndex.build(folded ?? text, 10_000, this.turn, reuse?.pairs, reuse?.items);
    if (!pairs || bytes + pairs.bytes > budget) return undefined;
    return { version, ids, text, folded, pairs, bytes: bytes + pairs.bytes };
  }

  /** A turn of the event loop for a load's or a rebuild's slices; false once the node is closing. */
  private readonly turn = (): Promise<boolean> => new Promise((resolve) => setImmediate(() => resolve(!this.closed)));

  /** Keeps the corpus, dropping the customer's previous one and then the least recently searched ones while over budget. */
  private install(customerId: number, corpus: Corpus): void {
    this.drop(customerId);
    for (const [other] of this.corpora) {
      if (this.used + corpus.bytes <= this.config.limits.searchMemoryBytes) break;
      this.drop(other);
    }
    this.corpora.set(customerId, corpus);
    this.used += corpus.bytes;
    this.metrics.searchCorpusGoods.inc(corpus.ids.length);
    this.metrics.searchCorpusBytes.inc(corpus.bytes);
  }

  private drop(customerId: number): void {
    const corpus = this.corpora.get(customerId);
    if (!corpus) return;
    this.corpora.delete(customerId);
    this.used -= corpus.bytes;
    this.metrics.searchCorpusGoods.dec(corpus.ids.length);
    this.metrics.searchCorpusBytes.dec(corpus.bytes);
  }
}
