import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { Metrics } from '../metrics/metrics.service';
import { readCatalogVersion } from './goods-list.queries';
import { PairIndex } from './search-pairs';

/** Rows read per query while loading a corpus: each query is short, and requests run between them. */
const LOAD_CHUNK = 5000;
/** A corpus is reloaded at most once per this many times its last load took (so reloading uses ≤ 20% of the time). */
const RELOAD_SPACING = 4;
/** Joins the items' texts: a keyword without it can only match inside one item. */
const SEPARATOR = '\u0000';
/** The one collation whose INSTR the in-memory match reproduces (MariaDB's UCA 4.0.0, primary level). */
const FOLDED_COLLATION = 'utf8mb4_unicode_ci';

/**
 * One customer's searchable text at one catalog version: the ids ascending, the searchTexts joined by
 * SEPARATOR (item i spans starts[i] .. starts[i + 1] - 1) and, on MariaDB, the same texts as collation
 * weights (one UTF-16 code unit per 16-bit primary weight) joined the same way.
 */
interface Corpus {
  version: number;
  ids: Float64Array;
  text: string;
  starts: Int32Array;
  folded?: string;
  foldedStarts?: Int32Array;
  /** The pairs of the searched string: `folded` on MariaDB, `text` on SQLite. */
  pairs: PairIndex;
  bytes: number;
}

/** UTF-8 length of one code point. */
const utf8Length = (cp: number) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/** Index of the item whose span holds `pos`: the last i with starts[i] <= pos. */
function itemAt(starts: Int32Array, pos: number): number {
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Items of `haystack` (spans in `starts`) that hold `needle`, in order. */
function itemsHolding(haystack: string, starts: Int32Array, needle: string): number[] {
  const found: number[] = [];
  let pos = haystack.indexOf(needle);
  while (pos !== -1) {
    const item = itemAt(starts, pos);
    found.push(item);
    pos = haystack.indexOf(needle, starts[item + 1]);
  }
  return found;
}

/**
 * The primary weights of the column collation (utf8mb4_unicode_ci on MariaDB), per character, as the
 * server's WEIGHT_STRING gives them: learnt for each new character once, kept for the process.
 */
class CollationWeights {
  private readonly weights = new Map<number, string>();

  /** Asks the server for the weights of the characters of `texts` not known yet. */
  async learn(em: EntityManager, texts: Iterable<string>): Promise<void> {
    const unknown = new Set<number>();
    for (const text of texts) {
      for (const ch of text) {
        const cp = ch.codePointAt(0) as number;
        if (!this.weights.has(cp)) unknown.add(cp);
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
      });
    }
  }

  /** The weights of a text whose characters are all learnt. */
  fold(text: string): string {
    const parts: string[] = [];
    for (const ch of text) parts.push(this.weights.get(ch.codePointAt(0) as number) as string);
    return parts.join('');
  }

  /**
   * Whether MariaDB's INSTR(text, keyword) under the collation is > 0. It compares, at each character
   * boundary of the text where the keyword's byte length still fits, the window of that many bytes with
   * the keyword by the collation (no space padding). A window ending inside a character holds a broken
   * sequence, which equals no keyword without the replacement weight (`supported` keeps those out).
   */
  instr(text: string, keywordBytes: number, keywordFolded: string): boolean {
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
  lastLoadMs: number;
  finishedAt: number;
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
 * database still reports that version (read by the list on every request, on any node); after a write it
 * is reloaded in the background, at most once per RELOAD_SPACING times its last load time, and searches
 * scan meanwhile. All corpora together stay within SEARCH_MEMORY_MB (least recently searched dropped
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
export class GoodsSearchCorpus implements OnApplicationShutdown {
  private readonly logger = new Logger(GoodsSearchCorpus.name);
  private readonly corpora = new Map<number, Corpus>();
  private readonly states = new Map<number, LoadState>();
  private weights?: CollationWeights | null;
  private weightsChecked?: Promise<CollationWeights | null>;
  private used = 0;
  private closed = false;

  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  onApplicationShutdown(): void {
    this.closed = true;
  }

  /**
   * The ids of the customer's goods whose searchText holds `keyword` (normalized, non-empty), newest
   * first, if the customer's corpus is at `version`; otherwise undefined (the caller scans) and the corpus
   * is (re)loaded in the background.
   */
  async match(customerId: number, keyword: string, version: number): Promise<number[] | undefined> {
    const found = await this.matchInMemory(customerId, keyword, version);
    this.metrics.searches.inc({ path: found ? 'memory' : 'scan' });
    return found;
  }

  private async matchInMemory(customerId: number, keyword: string, version: number): Promise<number[] | undefined> {
    // A keyword with the separator or a lone surrogate (which the database would read as U+FFFD) is scanned.
    if (this.config.limits.searchMemoryBytes === 0 || keyword.includes(SEPARATOR) || !keyword.isWellFormed()) return undefined;
    const corpus = this.corpora.get(customerId);
    if (!corpus || corpus.version !== version) {
      this.refresh(customerId, version);
      return undefined;
    }
    // Most recently searched last: the map's order is the eviction order.
    this.corpora.delete(customerId);
    this.corpora.set(customerId, corpus);

    // The string searched: the texts themselves on SQLite, their collation weights on MariaDB.
    let needle = keyword;
    let exact: ((item: number) => boolean) | undefined;
    if (corpus.folded !== undefined) {
      const weights = this.weights as CollationWeights;
      await weights.learn(this.transactions.manager, [keyword]);
      needle = weights.fold(keyword);
      if (!supported(needle)) return undefined;
      const bytes = Buffer.byteLength(keyword, 'utf8');
      const { text, starts } = corpus;
      exact = (i) => weights.instr(text.slice(starts[i], starts[i + 1] - 1), bytes, needle);
    }
    const haystack = corpus.folded ?? corpus.text;
    const starts = corpus.foldedStarts ?? corpus.starts;
    let items: number[];
    if (needle.length === 1) {
      // One code unit: none of the items if no item holds it, else a pass over the whole string.
      items = corpus.pairs.hasUnit(needle.charCodeAt(0)) ? itemsHolding(haystack, starts, needle) : [];
    } else {
      items = [];
      for (const i of corpus.pairs.candidates(needle)) if (haystack.slice(starts[i], starts[i + 1] - 1).includes(needle)) items.push(i);
    }
    if (exact) items = items.filter(exact);
    const ids = new Array<number>(items.length);
    for (let k = 0; k < items.length; k++) ids[items.length - 1 - k] = corpus.ids[items[k]];
    return ids;
  }

  /** Starts a background load of the customer's corpus unless one runs or the last one was too recent. */
  private refresh(customerId: number, version: number): void {
    const state = this.states.get(customerId) ?? { lastLoadMs: 0, finishedAt: 0 };
    this.states.set(customerId, state);
    if (state.loading || this.closed) return;
    if (state.finishedAt && performance.now() - state.finishedAt < state.lastLoadMs * RELOAD_SPACING) return;
    const started = performance.now();
    state.loading = this.load(customerId, version)
      .catch((err: unknown) => {
        if (!this.closed) this.logger.warn(`search corpus of customer ${customerId} not loaded: ${(err as Error).message}`);
      })
      .finally(() => {
        state.loading = undefined;
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
    // Each page is joined at once, so that the load holds a few long strings rather than two million short ones.
    const ids: number[] = [];
    const pages = new Layout();
    const foldedPages = new Layout();
    let bytes = 0;
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
      // Two bytes a character (a string holding Hangul is stored two bytes a character), 8 an id, 4 a start.
      bytes = 2 * pages.length + 12 * ids.length;
      if (mysql) {
        const weights = this.weights as CollationWeights;
        await weights.learn(em, texts);
        foldedPages.add(texts.map((t) => weights.fold(t)));
        bytes += 2 * foldedPages.length + 4 * ids.length;
      }
      if (bytes > budget) return;
      if (rows.length < LOAD_CHUNK) break;
      after = Number(rows[rows.length - 1].id);
      // Let requests run between two pages (on SQLite each query holds the event loop).
      await new Promise((resolve) => setImmediate(resolve));
    }
    if ((await readCatalogVersion(em, customerId)) !== version || this.closed) return;

    // Joining and flattening a string of 40 million characters holds the event loop for about 40 ms:
    // one string per turn.
    const pause = () => new Promise<boolean>((resolve) => setImmediate(() => resolve(!this.closed)));
    const { text, starts } = pages.done();
    let folded: string | undefined;
    let foldedStarts: Int32Array | undefined;
    if (mysql) {
      if (!(await pause())) return;
      ({ text: folded, starts: foldedStarts } = foldedPages.done());
    }
    const searched = folded ?? text;
    // The pair index holds about one posting (4 bytes) per code unit.
    if (bytes + 4 * searched.length > budget || !(await pause())) return;
    const pairs = await PairIndex.build(searched, foldedStarts ?? starts, 10_000, pause);
    if (!pairs || bytes + pairs.bytes > budget) return;
    this.install(customerId, { version, ids: Float64Array.from(ids), text, starts, folded, foldedStarts, pairs, bytes: bytes + pairs.bytes });
  }

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

/** Texts joined by SEPARATOR, page by page, with the start offset of each (and the end of the last + 1). */
class Layout {
  private readonly pages: string[] = [];
  private starts: number[] = [];
  length = 0;

  add(texts: string[]): void {
    if (!texts.length) return;
    for (const t of texts) {
      this.starts.push(this.length);
      this.length += t.length + 1;
    }
    this.pages.push(texts.join(SEPARATOR));
  }

  done(): { text: string; starts: Int32Array } {
    const starts = Int32Array.from(this.starts);
    const withEnd = new Int32Array(starts.length + 1);
    withEnd.set(starts);
    withEnd[starts.length] = this.length;
    this.starts = [];
    const text = this.pages.join(SEPARATOR);
    // Flattened now (rather than by the first search that reads it), so that the pages can go.
    text.indexOf(SEPARATOR + SEPARATOR);
    this.pages.length = 0;
    return { text, starts: withEnd };
  }
}
