import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { ListedFile, MediaStorage } from './media-storage';
import { MediaService } from './media.service';

/** An image's original (`<checksum>.<ext>`) or a thumbnail (`<checksum>-<width>[-up].<ext>`); group 1 is the checksum. */
const IMAGE_FILE = /^[0-9a-f]{2}\/([0-9a-f]{64})(?:-\d+(?:-up)?)?\.[a-z0-9]+$/;
/** A file being written, or left half-written by a process that stopped (see LocalMediaStorage.put). */
const PARTIAL_FILE = /^[0-9a-f]{2}\/\.[0-9a-f]+\.tmp$/;
/** The first sweep after a start, unless the interval is shorter. */
const FIRST_SWEEP_MS = 60_000;

export interface SweepOutcome {
  /** Files removed: images no media row refers to, and files left half-written. */
  removed: number;
  bytes: number;
  /** More than half of the images stored were unused: nothing was removed (see pass). */
  refused: boolean;
}

/**
 * Removes the media files nothing refers to any more that the delayed release could not: those of a node
 * killed outright (SIGKILL) with releases still waiting or a write between storing its images and
 * committing, and files a stopped process left half-written. Every MEDIA_SWEEP_INTERVAL_MS it walks the
 * store and removes a file only when it has not been written or reused (MediaService touches files it
 * reuses) for MEDIA_SWEEP_MIN_AGE_MS and no media row names its checksum: a write reusing or storing an
 * image commits its row well within that age. Nodes sharing DATA_DIR may sweep at once: each removal is
 * checked again just before it, and removing twice is harmless. A pass that would remove more than half of
 * the images stored removes nothing (a node reading another database than its DATA_DIR's files belong to).
 */
@Injectable()
export class MediaOrphanSweep implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MediaOrphanSweep.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepOutcome> | undefined;
  private stopped = false;

  constructor(
    private readonly storage: MediaStorage,
    private readonly media: MediaService,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    const interval = this.config.media.sweepIntervalMs;
    if (interval > 0) this.schedule(Math.min(FIRST_SWEEP_MS, interval));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  private schedule(delay: number): void {
    this.timer = setTimeout(() => {
      void this.sweep()
        .catch((err) => this.logger.error(`the media sweep failed: ${err instanceof Error ? err.message : String(err)}`))
        .finally(() => {
          if (!this.stopped) this.schedule(this.config.media.sweepIntervalMs);
        });
    }, delay);
    this.timer.unref();
  }

  /** One pass over the store (one at a time: a call while a pass runs gets that pass's outcome). */
  sweep(): Promise<SweepOutcome> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * Counts first, removes second. When more than half of the images stored would go, nothing is removed:
   * leftovers of killed nodes are a few, and so many unused images rather mean that this node reads another
   * database than the one these files belong to (a DATA_DIR shared by mistake).
   */
  private async pass(): Promise<SweepOutcome> {
    const started = Date.now();
    const survey = await this.walk(false);
    if (survey.unusedImages > survey.images / 2) {
      this.logger.warn(
        `media sweep: ${survey.unusedImages} of the ${survey.images} images stored in ${this.config.media.dir} are unused by this node's database; ` +
          'more than half, so none was removed: is that DATA_DIR shared with another database? (If the catalog was emptied ' +
          'by deletes whose node was then killed, remove the files by hand.)',
      );
      return { removed: 0, bytes: 0, refused: true };
    }
    const outcome = await this.walk(true);
    const took = Date.now() - started;
    if (outcome.removed) {
      this.logger.log(`media sweep: ${outcome.removed} unused file(s) removed, ${(outcome.bytes / 1048576).toFixed(1)} MB, in ${took} ms`);
    } else {
      this.logger.debug(`media sweep: no unused file, in ${took} ms`);
    }
    return { removed: outcome.removed, bytes: outcome.bytes, refused: false };
  }

  /** One walk over the store, one folder at a time: counts the images and the unused ones, and removes the files to go when `remove`. */
  private async walk(remove: boolean): Promise<{ images: number; unusedImages: number; removed: number; bytes: number }> {
    const tally = { images: 0, unusedImages: 0, removed: 0, bytes: 0 };
    for await (const folder of this.storage.list()) {
      if (this.stopped) break;
      tally.images += new Set(folder.map((f) => IMAGE_FILE.exec(f.key)?.[1]).filter(Boolean)).size;
      const cutoff = Date.now() - this.config.media.sweepMinAgeMs;
      const old = folder.filter((f) => f.modifiedMs < cutoff);
      const unused = await this.unnamed(old);
      tally.unusedImages += unused.size;
      if (!remove) continue;
      for (const file of [...old.filter((f) => PARTIAL_FILE.test(f.key)), ...[...unused.values()].flat()]) {
        // Written or reused since it was listed (a write storing the same image again): left.
        const now = await this.storage.stat(file.key);
        if (!now || now.modifiedMs >= Date.now() - this.config.media.sweepMinAgeMs) continue;
        await this.storage.delete(file.key);
        tally.removed += 1;
        tally.bytes += now.size;
      }
    }
    return tally;
  }

  /** The image files of these by checksum, for each checksum no media row names (files of other names are never touched). */
  private async unnamed(files: ListedFile[]): Promise<Map<string, ListedFile[]>> {
    const byChecksum = new Map<string, ListedFile[]>();
    for (const file of files) {
      const checksum = IMAGE_FILE.exec(file.key)?.[1];
      // Released on this node and waiting for MEDIA_RELEASE_DELAY_MS: served until then, as documented.
      if (checksum && !this.media.isWaiting(checksum)) byChecksum.set(checksum, [...(byChecksum.get(checksum) ?? []), file]);
    }
    for (const checksum of await this.media.checksumsInUse([...byChecksum.keys()])) byChecksum.delete(checksum);
    return byChecksum;
  }
}
