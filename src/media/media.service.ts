import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { hydrateRows } from '../database/bulk-sql';
import { EntityManager, In } from 'typeorm';
import { mapWithConcurrency } from '../common/util/concurrency';
import { WorkGate, WorkGateError } from '../common/util/work-gate';
import { redactCredentials } from '../common/util/redact';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactions';
import { Media, StoredThumbnail } from './entities/media.entity';
import { ImageFetcher } from './image-fetcher';
import { ImageProcessor, THUMBNAIL_WIDTHS } from './image-processor';
import { MediaStorage } from './media-storage';
import { MediaError } from './media.errors';
import { Metrics } from '../metrics/metrics.service';

/** Files stored for one image, not yet attached to a goods item. */
export interface PreparedMedia {
  originalUrl: string;
  checksum: string;
  contentType: string;
  fileKey: string;
  size: number;
  width: number;
  height: number;
  thumbnails: StoredThumbnail[];
}

export type MediaOutcome = { ok: true; media: PreparedMedia } | { ok: false; error: string };

type FileSet = Pick<Media, 'checksum' | 'fileKey' | 'thumbnails'>;

const CHUNK = 400;

/** Images that may wait for a turn to be fetched (MEDIA_NODE_CONCURRENCY) on a node; past it one is saved without image. */
const MAX_WAITING_IMAGES = 1024;

/** Most checksums waiting for their delayed release on a node; past it, files are left to the orphan sweep. */
export const MAX_PENDING_RELEASES = 100_000;

/** Whether a stored row has the API's three thumbnails: 120, 240 and 480 px wide, in that order. */
export function hasThreeWidths(media: Pick<Media, 'thumbnails'>): boolean {
  return media.thumbnails.length === THUMBNAIL_WIDTHS.length && media.thumbnails.every((t, i) => t.width === THUMBNAIL_WIDTHS[i]);
}

/**
 * The storage key of a thumbnail: `ab/<checksum>-<width>.<ext>`, or `ab/<checksum>-<width>-up.<ext>` when
 * it is enlarged (the image is narrower than width). Before enlarging, `-<width>` of a narrower image held a
 * thumbnail of the image's own width, and rows stored then still list those files; an enlarged thumbnail has
 * a key of its own so that a file never changes under the rows (and caches) that already name it.
 */
export function thumbnailKey(dir: string, checksum: string, width: number, imageWidth: number, ext: string): string {
  return `${dir}/${checksum}-${width}${width > imageWidth ? '-up' : ''}.${ext}`;
}

/**
 * The media pipeline: fetch (ImageFetcher), decode and thumbnail (ImageProcessor), store (MediaStorage),
 * and the media rows that tie files to goods. Files are written before the goods transaction and released
 * after it when nothing refers to them any more: MEDIA_RELEASE_DELAY_MS later, when still nothing does.
 */
@Injectable()
export class MediaService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(MediaService.name);
  /** Released files by checksum, with when they may go (MEDIA_RELEASE_DELAY_MS after their last release). */
  private readonly pending = new Map<string, { keys: Set<string>; due: number }>();
  private sweepTimer: NodeJS.Timeout | undefined;
  /**
   * Images fetched and processed at once by this node (MEDIA_NODE_CONCURRENCY, one customer at most
   * MEDIA_FETCH_CONCURRENCY), whatever the requests: many sync calls or registers at once each fetching
   * images of megabytes held the event loop for 300-700 ms at a time (the downloads' buffers, their
   * hashing and garbage collection), and the bytes waiting for a decode were not bounded.
   */
  private readonly gate: WorkGate;

  constructor(
    private readonly db: Transactions,
    private readonly fetcher: ImageFetcher,
    private readonly processor: ImageProcessor,
    private readonly storage: MediaStorage,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    this.gate = new WorkGate(config.media.nodeConcurrency, MAX_WAITING_IMAGES, config.media.fetchConcurrency);
    metrics.countGate('image-fetch', this.gate);
  }

  /**
   * Fetches, checks and stores one image of the customer's, in a turn of the node's gate: one waits for
   * its turn at most MEDIA_FETCH_TIMEOUT_MS (then it is a MediaError, the item saved without image); the
   * fetch and the decoding then have their own deadlines.
   */
  async prepare(customerId: number, url: string): Promise<PreparedMedia> {
    const waitMs = this.config.media.fetchTimeoutMs;
    try {
      return await this.gate.run(Infinity, () => this.prepareNow(url), customerId, Date.now() + waitMs);
    } catch (err) {
      if (!(err instanceof WorkGateError)) throw err;
      this.metrics.workRefusals.inc({ work: 'image-fetch', reason: err.reason });
      if (err.reason === 'full') throw new MediaError('too many images are waiting to be fetched on this server; try again later');
      throw new MediaError(`no turn to fetch the image within ${waitMs} ms (the server is busy); try again later`);
    }
  }

  /** Fetches, checks and stores one image. Identical bytes already stored are reused, not processed again. */
  private async prepareNow(url: string): Promise<PreparedMedia> {
    let fetched: Awaited<ReturnType<ImageFetcher['fetch']>>;
    try {
      fetched = await this.fetcher.fetch(url);
      this.metrics.mediaFetches.inc({ outcome: 'ok' });
    } catch (err) {
      this.metrics.mediaFetches.inc({ outcome: 'failed' });
      throw err;
    }
    // The newest row of these bytes: rows stored since thumbnails are enlarged all have the API's three.
    const known = await this.db.manager.findOne(Media, { where: { checksum: fetched.checksum }, order: { id: 'DESC' } });
    // A row stored before thumbnails were enlarged (an image narrower than 480 px) lacks the API's three
    // widths: its image is processed again rather than reused (its own files stay, see thumbnailKey).
    // Reused files are touched: the orphan sweep leaves files used lately (this write's row is not committed yet).
    if (known && hasThreeWidths(known) && (await this.touchAll(known))) {
      return { ...this.fileSet(known), originalUrl: url, contentType: known.contentType, size: known.size, width: known.width, height: known.height };
    }
    const processed = await this.processor.process(fetched.bytes);
    const dir = fetched.checksum.slice(0, 2);
    const fileKey = `${dir}/${fetched.checksum}.${processed.ext}`;
    await this.storage.put(fileKey, fetched.bytes);
    const thumbnails = await Promise.all(
      processed.thumbnails.map(async (t, i) => {
        const key = thumbnailKey(dir, fetched.checksum, THUMBNAIL_WIDTHS[i], processed.width, t.ext);
        await this.storage.put(key, t.data);
        return { width: t.width, height: t.height, size: t.data.length, key };
      }),
    );
    return {
      originalUrl: url,
      checksum: fetched.checksum,
      contentType: processed.contentType,
      fileKey,
      size: fetched.bytes.length,
      width: processed.width,
      height: processed.height,
      thumbnails,
    };
  }

  /** Marks an image's files as used now; false when its original is gone (it is then stored again). */
  private async touchAll(set: FileSet): Promise<boolean> {
    const [original] = await Promise.all([set.fileKey, ...set.thumbnails.map((t) => t.key)].map((key) => this.storage.touch(key)));
    return original;
  }

  /** Those of these checksums that a media row names (CHUNK per query). */
  async checksumsInUse(checksums: string[]): Promise<Set<string>> {
    const used = new Set<string>();
    for (let i = 0; i < checksums.length; i += CHUNK) {
      const rows = await this.db.manager.find(Media, { select: { checksum: true }, where: { checksum: In(checksums.slice(i, i + CHUNK)) } });
      for (const row of rows) used.add(row.checksum);
    }
    return used;
  }

  /** Whether files of this checksum were released on this node and wait for MEDIA_RELEASE_DELAY_MS. */
  isWaiting(checksum: string): boolean {
    return this.pending.has(checksum);
  }

  /** prepare() that reports failure instead of throwing (the goods data is saved either way). */
  async tryPrepare(customerId: number, url: string): Promise<MediaOutcome> {
    try {
      return { ok: true, media: await this.prepare(customerId, url) };
    } catch (err) {
      const error = err instanceof MediaError ? err.message : `unexpected error: ${err instanceof Error ? err.message : String(err)}`;
      // The URL (and a redirect location in the message) may carry user:password@: never logged.
      if (!(err instanceof MediaError)) this.logger.error(redactCredentials(`media ${url}: ${err instanceof Error ? err.stack : String(err)}`));
      else this.logger.warn(redactCredentials(`media ${url}: ${error}`));
      return { ok: false, error };
    }
  }

  /** Each distinct URL once, MEDIA_FETCH_CONCURRENCY at a time. */
  async prepareAll(customerId: number, urls: Iterable<string>): Promise<Map<string, MediaOutcome>> {
    const distinct = [...new Set(urls)];
    const outcomes = await mapWithConcurrency(distinct, this.config.media.fetchConcurrency, (url) => this.tryPrepare(customerId, url));
    return new Map(distinct.map((url, i) => [url, outcomes[i]]));
  }

  newRow(customerId: number, goodsId: number, prepared: PreparedMedia, now: Date): Media {
    return Object.assign(new Media(), {
      customerId,
      goodsId,
      mediaType: 'IMAGE',
      originalUrl: prepared.originalUrl,
      checksum: prepared.checksum,
      contentType: prepared.contentType,
      fileKey: prepared.fileKey,
      size: prepared.size,
      width: prepared.width,
      height: prepared.height,
      thumbnails: prepared.thumbnails,
      createdAt: now,
      updatedAt: now,
    });
  }

  /** Inserts media rows (multi-row statements) and gives them their ids. */
  async insertRows(em: EntityManager, rows: Media[]): Promise<void> {
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK);
      await em.createQueryBuilder().insert().into(Media).values(chunk).updateEntity(false).execute();
      const stored = await em.find(Media, { select: { id: true, goodsId: true }, where: { goodsId: In(chunk.map((m) => m.goodsId)) } });
      const idByGoods = new Map(stored.map((m) => [m.goodsId, m.id]));
      for (const m of chunk) m.id = idByGoods.get(m.goodsId) as number;
    }
  }

  /** Deletes the media rows of these goods; returns them so that their files can be released after commit. */
  async deleteRowsOf(em: EntityManager, goodsIds: number[]): Promise<Media[]> {
    const removed: Media[] = [];
    for (let i = 0; i < goodsIds.length; i += CHUNK) {
      const chunk = goodsIds.slice(i, i + CHUNK);
      const rows = await em.find(Media, { where: { goodsId: In(chunk) } });
      if (rows.length) await em.delete(Media, { goodsId: In(chunk) });
      removed.push(...rows);
    }
    return removed;
  }

  /** The media row of each goods item that has one (`between` runs between chunks, e.g. to yield the event loop). */
  async forGoods(em: EntityManager, goodsIds: number[], between?: () => Promise<void>): Promise<Map<number, Media>> {
    const found = new Map<number, Media>();
    for (let i = 0; i < goodsIds.length; i += CHUNK) {
      if (i && between) await between();
      const chunk = goodsIds.slice(i, i + CHUNK);
      const raw: Array<Record<string, unknown>> = await em.query(`SELECT * FROM media WHERE goodsId IN (${chunk.map(() => '?').join(', ')})`, chunk);
      for (const m of hydrateRows(em, Media, raw)) found.set(m.goodsId, m);
    }
    return found;
  }

  /** Takes over the releases a stopped node left waiting (see onModuleDestroy): they go when due, as its own. */
  onModuleInit(): void {
    let taken = 0;
    for (const { name, text } of this.takeLeftLists()) {
      try {
        for (const [checksum, keys, due] of JSON.parse(text) as Array<[string, string[], number]>) {
          if (typeof checksum !== 'string' || !Array.isArray(keys) || typeof due !== 'number') continue;
          if (
            !this.hold(
              checksum,
              keys.filter((k) => typeof k === 'string'),
              due,
            )
          )
            break;
          taken += 1;
        }
      } catch (err) {
        this.logger.warn(`a left release list could not be read (${name}): ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (!taken) return;
    this.logger.log(`${taken} released image(s) left by a stopped node taken over; they go when their delay has run out`);
    this.scheduleSweep();
  }

  /** The release lists stopped nodes left, each taken (renamed first: of two nodes starting at once, one takes it), read and removed. */
  private takeLeftLists(): Array<{ name: string; text: string }> {
    const dir = this.releasesDir;
    let names: string[];
    try {
      names = readdirSync(dir).filter((name) => name.endsWith('.json'));
    } catch {
      return []; // none left (the folder is made by the first node that leaves some)
    }
    const lists: Array<{ name: string; text: string }> = [];
    for (const name of names) {
      const claimed = join(dir, `${name}.${randomUUID()}.taking`);
      try {
        renameSync(join(dir, name), claimed);
        lists.push({ name, text: readFileSync(claimed, 'utf8') });
        unlinkSync(claimed);
      } catch {
        // taken by another node meanwhile
      }
    }
    return lists;
  }

  /**
   * The releases still waiting for their delay are left in DATA_DIR/media-releases for the next node that
   * starts (this one again, or another sharing DATA_DIR), rather than their files staying on disk for good.
   * A node killed outright (SIGKILL) leaves its waiting files on disk, until the orphan sweep
   * (MediaOrphanSweep) finds them unused.
   */
  onModuleDestroy(): void {
    clearTimeout(this.sweepTimer);
    if (this.pending.size) {
      const entries = [...this.pending].map(([checksum, { keys, due }]) => [checksum, [...keys], due]);
      try {
        mkdirSync(this.releasesDir, { recursive: true });
        const file = join(this.releasesDir, `${randomUUID()}.json`);
        writeFileSync(`${file}.tmp`, JSON.stringify(entries));
        renameSync(`${file}.tmp`, file);
        this.logger.log(`${this.pending.size} released image(s) still waiting for their delay: left for the next node that starts`);
      } catch (err) {
        this.logger.warn(
          `${this.pending.size} released image(s) left on disk at shutdown (their list could not be written: ${err instanceof Error ? err.message : String(err)})`,
        );
      }
    }
    this.pending.clear();
  }

  private get releasesDir(): string {
    return join(this.config.dataDir, 'media-releases');
  }

  /**
   * Deletes the files of these sets when no media row refers to their checksum any more, after
   * MEDIA_RELEASE_DELAY_MS (at once when 0). Identical bytes are stored once for every customer: a write
   * that found the files and reuses them commits its row after this release was asked for, and the delay
   * lets that row be seen before the files go (on any node: the check reads the database).
   */
  async releaseFiles(sets: Array<FileSet | PreparedMedia>): Promise<void> {
    // Every key of every set, by checksum: rows of one checksum stored before and after thumbnails were
    // enlarged name different thumbnail files (see thumbnailKey).
    const byChecksum = new Map<string, Set<string>>();
    for (const set of sets) {
      const keys = byChecksum.get(set.checksum) ?? new Set<string>();
      for (const key of [set.fileKey, ...set.thumbnails.map((t) => t.key)]) keys.add(key);
      byChecksum.set(set.checksum, keys);
    }
    const delay = this.config.media.releaseDelayMs;
    if (delay === 0) return this.deleteUnused(byChecksum);
    const due = Date.now() + delay;
    let dropped = 0;
    for (const [checksum, keys] of byChecksum) if (!this.hold(checksum, keys, due)) dropped += 1;
    if (dropped) this.logger.warn(`${dropped} released image(s) left on disk: ${MAX_PENDING_RELEASES} were already waiting for their delay`);
    this.scheduleSweep();
  }

  /**
   * Adds files of a checksum to the releases waiting, due at `due` (or later, if already waiting longer);
   * false when MAX_PENDING_RELEASES are waiting already (its files then stay on disk).
   */
  private hold(checksum: string, keys: Iterable<string>, due: number): boolean {
    const entry = this.pending.get(checksum);
    if (!entry && this.pending.size >= MAX_PENDING_RELEASES) return false;
    this.pending.set(checksum, { keys: new Set([...(entry?.keys ?? []), ...keys]), due: Math.max(due, entry?.due ?? 0) });
    return true;
  }

  /** The next sweep, when the earliest pending release is due (one timer per node, not one per release). */
  private scheduleSweep(): void {
    if (this.sweepTimer || !this.pending.size) return;
    let earliest = Infinity;
    for (const { due } of this.pending.values()) earliest = Math.min(earliest, due);
    this.sweepTimer = setTimeout(() => void this.sweep(), Math.max(0, earliest - Date.now()) + 10);
    this.sweepTimer.unref();
  }

  private async sweep(): Promise<void> {
    this.sweepTimer = undefined;
    const now = Date.now();
    const due = new Map<string, Set<string>>();
    for (const [checksum, entry] of this.pending) {
      if (entry.due > now) continue;
      this.pending.delete(checksum);
      due.set(checksum, entry.keys);
    }
    await this.deleteUnused(due);
    this.scheduleSweep();
  }

  /** Deletes the files of each checksum that no media row refers to now. Never throws. */
  private async deleteUnused(byChecksum: Map<string, Set<string>>): Promise<void> {
    if (!byChecksum.size) return;
    try {
      const stillUsed = await this.checksumsInUse([...byChecksum.keys()]);
      for (const [checksum, keys] of byChecksum) {
        if (stillUsed.has(checksum)) continue;
        await Promise.all([...keys].map((key) => this.storage.delete(key)));
      }
    } catch (err) {
      // Never fail a request over cleanup; an orphaned file is harmless and logged. (Files of a row stored
      // before enlarging that are released while a newer row of the same checksum stays are left too.)
      this.logger.error(`releasing media files failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private fileSet(media: FileSet): FileSet {
    return { checksum: media.checksum, fileKey: media.fileKey, thumbnails: media.thumbnails };
  }
}
