import type { EncodedEvent } from './live-fanout';

/** Viewers asking for a campaign's snapshot within this window share one read, even on a cold cache. */
export const SNAPSHOT_BATCH_MS = 20;
/**
 * How long one snapshot read, encoded once, goes on serving the viewers of its campaign that join or need
 * a fresh snapshot, counted from when the read started. Sooner than that it is dropped when an event of the
 * campaign is published on this node, comes from another node or is handed to the room's viewers here
 * (SharedSnapshots.changed), so it never holds less than an event this node has sent. What it may lag by
 * is only what no event reports: the viewer count (`campaign.userCount`), up to this long.
 */
export const SNAPSHOT_REUSE_MS = 1000;
/** Snapshots kept at most (campaign × base URL); the oldest go first beyond it. */
export const MAX_SHARED_SNAPSHOTS = 1000;

/** A campaign's snapshot as every viewer that gets it is sent it: its seq, and the event encoded once. */
export interface SharedSnapshot {
  seq: number;
  event: EncodedEvent;
}

interface Entry {
  /** The read (after the batch window) and its encoding; null: the campaign is gone. */
  snapshot: Promise<SharedSnapshot | null>;
  /** When the read started (ms); null while the batch window is still open. */
  readAt: number | null;
  /** The snapshot's seq, once read. */
  seq: number | null;
}

/**
 * The snapshots of this node's campaigns, shared by the viewers that ask for the same one (campaign and base
 * URL of its links): the viewers asking within SNAPSHOT_BATCH_MS share one read, and for SNAPSHOT_REUSE_MS
 * after it started later ones get the same encoded bytes, without another read or encoding.
 *
 * Why a viewer given a snapshot read before it joined its room misses nothing: the gateway asks only once
 * the viewer has joined (from then on every event handed to the room reaches it, held until its snapshot
 * went out and written when newer: LiveFanout.holdUntilSnapshot). An event handed to the room before the
 * viewer joined was either committed before the read started, so the snapshot holds it, or handed over
 * after the read started, and then changed() dropped the snapshot before that (LiveNotifier calls it right
 * before it hands a campaign's events to the room, and as soon as one is published or comes from another
 * node): whoever asks after that gets a new read. A snapshot still in its batch window is not dropped: its
 * read has not started, so it will hold that event.
 */
export class SharedSnapshots {
  private readonly byCampaign = new Map<number, Map<string, Entry>>();
  private count = 0;

  constructor(
    /** Reads and encodes the campaign's snapshot for viewers reaching it at `baseUrl` (null: the campaign is gone). */
    private readonly read: (campaignId: number, currency: string, baseUrl: string) => Promise<SharedSnapshot | null>,
    /** A monotonic clock in ms: a wall clock set back must not keep a snapshot longer. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The snapshot to send a viewer that has joined the campaign's room: a shared one, or a new read.
   * `atLeastSeq` (a resync, which read the campaign's seq before): a shared snapshot known to be older
   * than that (one read, or being read since an unknown moment) is not used, a new read is.
   */
  get(campaignId: number, currency: string, baseUrl: string, atLeastSeq = 0): Promise<SharedSnapshot | null> {
    const found = this.byCampaign.get(campaignId)?.get(baseUrl);
    if (found && this.serves(found, atLeastSeq)) return found.snapshot;
    if (found) this.remove(campaignId, baseUrl, found);
    const entry: Entry = { snapshot: Promise.resolve(null), readAt: null, seq: null };
    entry.snapshot = new Promise((resolve) => setTimeout(resolve, SNAPSHOT_BATCH_MS))
      .then(() => {
        entry.readAt = this.now();
        return this.read(campaignId, currency, baseUrl);
      })
      .then(
        (snapshot) => {
          if (snapshot) entry.seq = snapshot.seq;
          if (!snapshot) this.remove(campaignId, baseUrl, entry);
          else if (this.holds(campaignId, baseUrl, entry)) {
            const left = (entry.readAt as number) + SNAPSHOT_REUSE_MS - this.now();
            // Dropped when stale even if nobody asks again: it holds a whole campaign's goods.
            setTimeout(() => this.remove(campaignId, baseUrl, entry), Math.max(0, left)).unref();
          }
          return snapshot;
        },
        (err: unknown) => {
          this.remove(campaignId, baseUrl, entry);
          throw err;
        },
      );
    this.add(campaignId, baseUrl, entry);
    return entry.snapshot;
  }

  /**
   * An event of the campaign was published on this node, came from another one, or is about to be handed to
   * its room here: snapshots whose read has started may lack it, and are not shared any more.
   */
  changed(campaignId: number): void {
    const entries = this.byCampaign.get(campaignId);
    if (!entries) return;
    for (const [baseUrl, entry] of [...entries]) if (entry.readAt !== null) this.remove(campaignId, baseUrl, entry);
  }

  /** Snapshots kept (being read, or shared). */
  get size(): number {
    return this.count;
  }

  private serves(entry: Entry, atLeastSeq: number): boolean {
    if (entry.readAt === null) return true; // read after now: it will hold all that is committed
    if (this.now() - entry.readAt >= SNAPSHOT_REUSE_MS) return false;
    return atLeastSeq === 0 || (entry.seq !== null && entry.seq >= atLeastSeq);
  }

  private holds(campaignId: number, baseUrl: string, entry: Entry): boolean {
    return this.byCampaign.get(campaignId)?.get(baseUrl) === entry;
  }

  private add(campaignId: number, baseUrl: string, entry: Entry): void {
    if (this.count >= MAX_SHARED_SNAPSHOTS) this.evict();
    let entries = this.byCampaign.get(campaignId);
    if (!entries) this.byCampaign.set(campaignId, (entries = new Map<string, Entry>()));
    entries.set(baseUrl, entry);
    this.count += 1;
  }

  /** Makes room for one more: the stale ones go, else the oldest campaign's first one (its viewers keep their read). */
  private evict(): void {
    const now = this.now();
    for (const [campaignId, entries] of [...this.byCampaign]) {
      for (const [baseUrl, entry] of [...entries])
        if (entry.readAt !== null && now - entry.readAt >= SNAPSHOT_REUSE_MS) this.remove(campaignId, baseUrl, entry);
    }
    if (this.count < MAX_SHARED_SNAPSHOTS) return;
    for (const [campaignId, entries] of this.byCampaign) {
      for (const [baseUrl, entry] of entries) {
        this.remove(campaignId, baseUrl, entry);
        return;
      }
    }
  }

  private remove(campaignId: number, baseUrl: string, entry: Entry): void {
    const entries = this.byCampaign.get(campaignId);
    if (entries?.get(baseUrl) !== entry) return;
    entries.delete(baseUrl);
    if (!entries.size) this.byCampaign.delete(campaignId);
    this.count -= 1;
  }
}
