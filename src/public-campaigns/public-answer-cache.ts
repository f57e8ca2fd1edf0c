import { createHash } from 'node:crypto';
import { weakEtag } from '../http/sliced-json';
import { Injectable, OnModuleInit } from '@nestjs/common';
import type { TimeSlicer } from '../common/util/time-slicer';
import { CampaignChanges } from '../campaigns/campaign-changes';
import { GoodsChangeHooks } from '../goods/goods-changes';

/** How long an answer is served from the cache: the max-age its Cache-Control announces (PUBLIC_CACHE_CONTROL). */
export const PUBLIC_MAX_AGE_SECONDS = 5;
/** The Cache-Control of every public answer. */
export const PUBLIC_CACHE_CONTROL = `public, max-age=${PUBLIC_MAX_AGE_SECONDS}, stale-while-revalidate=30`;
/** Answers kept at most, all customers together (least recently used dropped first). */
export const MAX_ENTRIES = 1000;
/** Bytes the kept answers may weigh together (their JSON, and the goods ids each notes). */
export const MAX_BYTES = 64 * 1024 * 1024;
/** A larger answer is not kept (the list with detail=true&count=100 of campaigns of many goods): it is built each time. */
export const MAX_ENTRY_BYTES = 16 * 1024 * 1024;
/** What noting one goods id of an entry costs (a Set entry), counted with its bytes. */
const BYTES_PER_GOODS_ID = 16;

/**
 * A public answer as sent: its JSON as UTF-8 chunks (the kept parts and the counts between them, never
 * joined: a list with goods is up to MAX_ENTRY_BYTES, and joining and encoding it took a turn of the
 * event loop on every request), their length, and its (weak) ETag.
 */
export interface CachedAnswer {
  chunks: Buffer[];
  length: number;
  etag: string;
  /** The JSON as one string (tests, small answers). */
  readonly json: string;
}

/**
 * A public answer as kept: its JSON cut around each campaign's `"userCount":n`, so that every request
 * answers the current counts (as before the cache) without building or hashing the rest again.
 */
export interface KeptAnswer {
  /** The JSON before, between and after the userCount members (one more than `campaignIds`), in UTF-8. */
  parts: Buffer[];
  /** The campaign of each userCount, in order. */
  campaignIds: number[];
  /** The weak ETag of the JSON with every count 0 (the counts are added to it). */
  etag: string;
}

/**
 * Each campaign record's userCount member in JSON (quotes inside strings are escaped: only real members
 * match), captured, so that a split keeps it.
 */
const USER_COUNT = /("userCount":\d+)/;

/** The answer with these counts (in the order of kept.campaignIds). */
export function withCounts(kept: KeptAnswer, counts: number[]): CachedAnswer {
  const chunks = [kept.parts[0]];
  let length = kept.parts[0].length;
  for (let i = 0; i < counts.length; i += 1) {
    const count = Buffer.from(`"userCount":${counts[i]}`);
    chunks.push(count, kept.parts[i + 1]);
    length += count.length + kept.parts[i + 1].length;
  }
  return {
    chunks,
    length,
    etag: counts.length ? `${kept.etag.slice(0, -1)}-${counts.join('.')}"` : kept.etag,
    get json() {
      return Buffer.concat(chunks, length).toString();
    },
  };
}

/** What a computed answer tells the cache besides itself. */
export interface FreshAnswer {
  body: unknown;
  /** The campaign the answer is about (one campaign), else null (the list, upcoming): see CampaignChanges. */
  campaignId: number | null;
  /** The campaigns of its records, in order (their userCount is answered anew each time). */
  campaignIds: number[];
  /** The goods the answer shows: a catalog edit of any of them drops it. */
  goodsIds: Iterable<number>;
  /** False: answer it, but do not keep it (NOT_EXIST for a key of anyone's choosing would only push out others). */
  keep?: boolean;
  /** The time slicer the answer was built with, if any: cutting and hashing it pause with it too. */
  slicer?: TimeSlicer;
}

/**
 * An answer body already written as JSON, in pieces that together are the JSON (a large one, written a
 * campaign at a time between turns of the event loop). No campaign's `"userCount":n` member is cut
 * between two pieces.
 */
export class SerializedAnswer {
  constructor(readonly pieces: string[]) {}
}

interface Entry extends KeptAnswer {
  key: string;
  customerId: number;
  campaignId: number | null;
  goodsIds: Set<number>;
  bytes: number;
  until: number;
}

/**
 * The answers of the public campaign endpoints (no token, so anyone may repeat them at the per-IP rate
 * limit), kept as sent, JSON and ETag, for the max-age their Cache-Control already allows any cache on
 * the way: PUBLIC_MAX_AGE_SECONDS. Keyed by customer, the campaign or the query, and the base URL of
 * the links; bounded in entries and bytes (least recently used dropped first).
 *
 * Dropped before that on this node when what they show changes, after commit:
 * - a change of one of the customer's campaigns (CampaignChanges: console edits, status moves, goods
 *   added, removed, reordered or shown, sales status and stock, chat and notices, creation and deletion,
 *   a catalog delete of goods it holds) drops the answers about that campaign, and every list and
 *   `upcoming` answer of the customer (which campaigns they hold may change with any of them);
 * - a catalog edit of goods (GoodsChangeHooks: the fields and the image a summary shows) drops the
 *   answers that show any of those goods, whatever the campaign's status.
 * An answer being built while its customer changes is not kept (a generation per customer), so no answer
 * read before a commit outlives it. Changes made on another node of a cluster (they reach this one
 * through Redis as live events, which need not cover a silent change) are not told here: this node's
 * answers may then be as old as the max-age, as the clients' and proxies' copies already may.
 * A time-dependent answer (`upcoming` after a READY campaign's scheduledAt has passed) may be as old as
 * the max-age too. `userCount` is not kept: each request reads the current counts (KeptAnswer).
 */
@Injectable()
export class PublicAnswerCache implements OnModuleInit {
  private readonly entries = new Map<string, Entry>();
  /** The keys of each customer's entries. */
  private readonly byCustomer = new Map<number, Set<string>>();
  /** Moves on at every change told for the customer. */
  private readonly generations = new Map<number, number>();
  /** Answers being built, by key: requests for the same one while it is built share it (when of the same generation). */
  private readonly building = new Map<string, { generation: number; answer: Promise<KeptAnswer> }>();
  private bytes = 0;

  constructor(
    private readonly campaignChanges: CampaignChanges,
    private readonly goodsChanges: GoodsChangeHooks,
  ) {}

  onModuleInit(): void {
    this.campaignChanges.register((customerId, campaignId) => this.campaignChanged(customerId, campaignId));
    this.goodsChanges.register((tenant, goodsIds) => {
      this.goodsChanged(tenant.id, goodsIds);
      return Promise.resolve();
    });
  }

  /**
   * An answer as kept (see KeptAnswer); `campaignIds` are the campaigns of its records, in order (their
   * userCount is cut out). Its ETag is the one Express gives the JSON as built. A SerializedAnswer is
   * cut, encoded and hashed a piece at a time, `slicer` pausing between the pieces.
   */
  static async kept(body: unknown, campaignIds: number[], slicer?: TimeSlicer): Promise<KeptAnswer> {
    const pieces = body instanceof SerializedAnswer ? body.pieces : [JSON.stringify(body)];
    const hash = createHash('sha1');
    let length = 0;
    const parts: Buffer[] = [];
    let part: Buffer[] = [];
    for (const piece of pieces) {
      // The text between the members at even places, the members (kept by the split) at odd ones.
      const texts = piece.split(USER_COUNT);
      for (let i = 0; i < texts.length; i += 1) {
        const bytes = Buffer.from(texts[i]);
        hash.update(bytes);
        length += bytes.length;
        if (i % 2 === 0) part.push(bytes);
        else {
          parts.push(Buffer.concat(part));
          part = [];
        }
      }
      await slicer?.pause();
    }
    parts.push(Buffer.concat(part));
    if (parts.length !== campaignIds.length + 1) throw new Error(`an answer of ${campaignIds.length} campaigns holds ${parts.length - 1} userCount members`);
    return { parts, campaignIds, etag: weakEtag(hash, length) };
  }

  /** The kept answer for `key`, or the one `compute` builds (kept when nothing of the customer changed meanwhile). */
  async answer(customerId: number, key: string, compute: () => Promise<FreshAnswer>): Promise<KeptAnswer> {
    const fullKey = `${customerId}\u0000${key}`;
    const now = Date.now();
    const hit = this.entries.get(fullKey);
    if (hit && hit.until > now) {
      // Most recently used last.
      this.entries.delete(fullKey);
      this.entries.set(fullKey, hit);
      return hit;
    }
    if (hit) this.remove(hit);
    const generation = this.generations.get(customerId) ?? 0;
    const running = this.building.get(fullKey);
    if (running && running.generation === generation) return running.answer;
    const answer = this.build(customerId, fullKey, generation, now, compute);
    this.building.set(fullKey, { generation, answer });
    try {
      return await answer;
    } finally {
      if (this.building.get(fullKey)?.answer === answer) this.building.delete(fullKey);
    }
  }

  /** Builds the answer; keeps it until PUBLIC_MAX_AGE_SECONDS after `startedAt` (before its first read). */
  private async build(customerId: number, fullKey: string, generation: number, startedAt: number, compute: () => Promise<FreshAnswer>): Promise<KeptAnswer> {
    const fresh = await compute();
    const answer = await PublicAnswerCache.kept(fresh.body, fresh.campaignIds, fresh.slicer);
    const length = answer.parts.reduce((sum, part) => sum + part.length, 0);
    if (fresh.keep === false || (this.generations.get(customerId) ?? 0) !== generation) return answer;
    const goodsIds = new Set(fresh.goodsIds);
    const bytes = length + goodsIds.size * BYTES_PER_GOODS_ID;
    if (bytes > MAX_ENTRY_BYTES) return answer;
    const stale = this.entries.get(fullKey);
    if (stale) this.remove(stale);
    this.add({ ...answer, key: fullKey, customerId, campaignId: fresh.campaignId, goodsIds, bytes, until: startedAt + PUBLIC_MAX_AGE_SECONDS * 1000 });
    return answer;
  }

  /** Entries and bytes kept now (metrics, tests). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  campaignChanged(customerId: number, campaignId: number | null): void {
    this.dropWhere(customerId, (e) => e.campaignId === null || e.campaignId === campaignId);
  }

  goodsChanged(customerId: number, goodsIds: readonly number[]): void {
    this.dropWhere(customerId, (e) => goodsIds.some((id) => e.goodsIds.has(id)));
  }

  private dropWhere(customerId: number, match: (e: Entry) => boolean): void {
    this.generations.set(customerId, (this.generations.get(customerId) ?? 0) + 1);
    for (const key of [...(this.byCustomer.get(customerId) ?? [])]) {
      const entry = this.entries.get(key);
      if (entry && match(entry)) this.remove(entry);
    }
  }

  private add(entry: Entry): void {
    this.entries.set(entry.key, entry);
    this.bytes += entry.bytes;
    let keys = this.byCustomer.get(entry.customerId);
    if (!keys) {
      keys = new Set();
      this.byCustomer.set(entry.customerId, keys);
    }
    keys.add(entry.key);
    for (const oldest of this.entries.values()) {
      if (this.entries.size <= MAX_ENTRIES && this.bytes <= MAX_BYTES) break;
      this.remove(oldest);
    }
  }

  private remove(entry: Entry): void {
    if (this.entries.get(entry.key) !== entry) return;
    this.entries.delete(entry.key);
    this.bytes -= entry.bytes;
    const keys = this.byCustomer.get(entry.customerId);
    keys?.delete(entry.key);
    if (keys && !keys.size) this.byCustomer.delete(entry.customerId);
  }
}
