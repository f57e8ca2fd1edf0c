import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { deflate, inflate } from 'node:zlib';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { In, IsNull, LessThanOrEqual } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { AppConfig } from '../config/app-config';
import { isUniqueViolation } from '../database/database-errors';
import type { CommitMark } from '../common/util/commit-marks';
import { Transactions } from '../database/transactions';
import { IdempotencyKey, IdempotencyKeyPart } from './entities/idempotency-key.entity';

const deflateAsync = promisify(deflate);
const inflateAsync = promisify(inflate);

/** Bytes per stored body part: under the 65,535 of a MySQL BLOB. */
export const PART_BYTES = 60_000;
/** Parts inserted per statement (well under MySQL's default max_allowed_packet). */
const PARTS_PER_INSERT = 16;
/** Largest JSON of stored headers; an answer with more is kept without its body. */
const MAX_HEADERS_JSON = 16 * 1024;
/** How often each node deletes expired keys. */
export const SWEEP_EVERY_MS = 5 * 60_000;
/** Attempts at taking a key that keeps changing under us (taken over, swept) before answering 409. */
const CLAIM_ATTEMPTS = 3;
/** How often a release that failed is tried again (see IdempotencyService.release). */
export const RELEASE_RETRY_MS = 2000;

/** An answer stored for a key, as it is replayed. */
export interface StoredAnswer {
  statusCode: number;
  headers: Record<string, string | string[]>;
  /** null: the body was over IDEMPOTENCY_MAX_RESPONSE_BYTES and was not kept. */
  body: Buffer | null;
}

/** This request holds the key: it runs, and its answer is stored (or the key released) at its end. */
export interface Hold {
  customerId: number;
  keyHash: string;
  owner: string;
}

export type Claim =
  | { kind: 'run'; hold: Hold }
  /** Another request with this key is running. */
  | { kind: 'running' }
  /** The key was used for a different request. */
  | { kind: 'mismatch' }
  /** The request committed its write, but its node stopped before its answer was stored: not run again. */
  | { kind: 'applied' }
  | { kind: 'replay'; answer: StoredAnswer };

/**
 * The stored Idempotency-Keys: taking a key (the primary key of idempotency_keys is the lock, so of two
 * requests with one key on any node exactly one inserts the row), renewing a running request's lease,
 * storing its answer or releasing the key, and the periodic sweep of expired keys.
 *
 * Writes go through Transactions.run (on SQLite, TypeORM shares one connection: a write outside run()
 * could land in another request's open transaction); reads through Transactions.manager.
 */
@Injectable()
export class IdempotencyService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Idempotency');
  private sweepTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private sweeping: Promise<number> | null = null;
  /** Lease renewals of the requests running on this node. */
  private readonly renewals = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.sweepTimer = setInterval(() => void this.sweepQuietly(), SWEEP_EVERY_MS);
    this.sweepTimer.unref();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const timer of this.renewals.values()) clearInterval(timer);
    this.renewals.clear();
  }

  /**
   * The mark a request holding the key sets on its write transactions (Transactions applies it before
   * their COMMIT): the key is marked applied in the same commit as the first write.
   */
  commitMark(hold: Hold): CommitMark {
    return {
      pending: true,
      apply: async (em) => {
        await em.update(
          IdempotencyKey,
          { customerId: hold.customerId, keyHash: hold.keyHash, owner: hold.owner, appliedAt: IsNull() },
          { appliedAt: Date.now() },
        );
      },
    };
  }

  /**
   * Takes the key for this request, or says why not. An expired key, and a running one whose lease ran
   * out (its node died or lost the database) before it committed a write, is deleted and taken anew; one
   * that had committed a write is 'applied' (it is not run twice).
   */
  async claim(tenant: Tenant, keyHash: string, fingerprint: string): Promise<Claim> {
    const { ttlMs, leaseMs } = this.config.idempotency;
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      const now = Date.now();
      const hold: Hold = { customerId: tenant.id, keyHash, owner: randomUUID() };
      try {
        await this.transactions.run((em) =>
          em.insert(IdempotencyKey, {
            ...hold,
            fingerprint,
            statusCode: null,
            headers: null,
            bodyParts: null,
            leaseUntil: now + leaseMs,
            expiresAt: now + ttlMs,
            appliedAt: null,
          }),
        );
        this.startRenewing(hold);
        return { kind: 'run', hold };
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      const row = await this.transactions.manager.findOne(IdempotencyKey, { where: { customerId: tenant.id, keyHash } });
      if (!row) continue; // deleted since (released, swept): try again
      if (row.expiresAt <= now || (row.statusCode === null && row.appliedAt === null && row.leaseUntil <= now)) {
        await this.transactions.run((em) => em.delete(IdempotencyKey, { customerId: tenant.id, keyHash, owner: row.owner }));
        continue;
      }
      if (row.fingerprint !== fingerprint) return { kind: 'mismatch' };
      if (row.statusCode === null) return row.appliedAt !== null && row.leaseUntil <= now ? { kind: 'applied' } : { kind: 'running' };
      const answer = await this.answerOf(row);
      if (answer) return { kind: 'replay', answer };
    }
    return { kind: 'running' };
  }

  /**
   * Stores the final answer of a request that holds its key (nothing happens when the hold was lost:
   * the lease ran out and another request took the key). `body` null: over the size limit, not kept.
   */
  async store(hold: Hold, statusCode: number, headers: Record<string, string | string[]>, body: Buffer | null): Promise<void> {
    this.stopRenewing(hold);
    let headersJson = JSON.stringify(headers);
    let kept = body;
    if (headersJson.length > MAX_HEADERS_JSON) {
      headersJson = '{}';
      kept = null;
    }
    // Compressed on the thread pool, before the transaction (JSON answers shrink about tenfold).
    const packed = kept ? await deflateAsync(kept) : null;
    const parts: Buffer[] = [];
    if (packed) for (let at = 0; at < packed.length || at === 0; at += PART_BYTES) parts.push(packed.subarray(at, at + PART_BYTES));
    await this.transactions.run(async (em) => {
      const result = await em.update(
        IdempotencyKey,
        { customerId: hold.customerId, keyHash: hold.keyHash, owner: hold.owner, statusCode: IsNull() },
        { statusCode, headers: headersJson, bodyParts: packed ? parts.length : null, leaseUntil: Date.now() },
      );
      if (!result.affected) return;
      for (let i = 0; i < parts.length; i += PARTS_PER_INSERT) {
        await em.insert(
          IdempotencyKeyPart,
          parts.slice(i, i + PARTS_PER_INSERT).map((data, j) => ({ customerId: hold.customerId, keyHash: hold.keyHash, part: i + j, data })),
        );
      }
    });
  }

  /**
   * Gives the key up (the answer is not final: a retry runs the request again). When that fails (the
   * database away: the very reason a request answers 503), it is tried again every RELEASE_RETRY_MS
   * until it holds, for as long as the lease would have held the key: a client retrying after the 503's
   * Retry-After would otherwise be told "still running" (409) until the lease lapsed.
   */
  async release(hold: Hold): Promise<void> {
    this.stopRenewing(hold);
    try {
      await this.deleteHeld(hold);
    } catch (err) {
      this.releaseLater(hold, Date.now() + this.config.idempotency.leaseMs);
      throw err;
    }
  }

  /**
   * Deletes the key, unless the request had committed a write (a 5xx after its commit, say): such a key
   * is kept, its lease ended at once, and a retry is told the request was applied rather than running it
   * again.
   */
  private deleteHeld(hold: Hold): Promise<unknown> {
    const held = { customerId: hold.customerId, keyHash: hold.keyHash, owner: hold.owner };
    return this.transactions.run(async (em) => {
      await em.delete(IdempotencyKey, { ...held, appliedAt: IsNull() });
      await em.update(IdempotencyKey, { ...held, statusCode: IsNull() }, { leaseUntil: Date.now() });
    });
  }

  private releaseLater(hold: Hold, until: number): void {
    if (this.stopped || Date.now() + RELEASE_RETRY_MS >= until) return;
    const timer = setTimeout(() => {
      if (!this.stopped) this.deleteHeld(hold).catch(() => this.releaseLater(hold, until));
    }, RELEASE_RETRY_MS);
    timer.unref();
  }

  /** Deletes expired keys, and running ones whose lease ran out before they committed a write; answers how many went. */
  sweep(now = Date.now()): Promise<number> {
    // One sweep at a time on this node; the statements are harmless if nodes overlap.
    this.sweeping ??= this.deleteExpired(now).finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async deleteExpired(now: number): Promise<number> {
    const result = await this.transactions.run(async (em) => {
      const expired = await em.delete(IdempotencyKey, { expiresAt: LessThanOrEqual(now) });
      const stale = await em.delete(IdempotencyKey, { statusCode: IsNull(), appliedAt: IsNull(), leaseUntil: LessThanOrEqual(now) });
      return (expired.affected ?? 0) + (stale.affected ?? 0);
    });
    return result;
  }

  private async sweepQuietly(): Promise<void> {
    try {
      const swept = await this.sweep();
      if (swept) this.logger.debug(`swept ${swept} expired idempotency keys`);
    } catch (err) {
      this.logger.warn(`idempotency key sweep failed (retried in ${SWEEP_EVERY_MS / 1000} s): ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** The stored answer of a finished key; null when its parts are gone (swept meanwhile). */
  private async answerOf(row: IdempotencyKey): Promise<StoredAnswer | null> {
    const headers = JSON.parse(row.headers ?? '{}') as Record<string, string | string[]>;
    if (row.bodyParts === null) return { statusCode: row.statusCode as number, headers, body: null };
    const parts = await this.transactions.manager.find(IdempotencyKeyPart, {
      where: { customerId: row.customerId, keyHash: row.keyHash, part: In(Array.from({ length: row.bodyParts }, (_, i) => i)) },
      order: { part: 'ASC' },
    });
    if (parts.length !== row.bodyParts) return null;
    const body = await inflateAsync(Buffer.concat(parts.map((p) => Buffer.from(p.data))));
    return { statusCode: row.statusCode as number, headers, body };
  }

  /** Renews the lease every third of it while the request runs, so that only a dead node's keys lapse. */
  private startRenewing(hold: Hold): void {
    const { leaseMs } = this.config.idempotency;
    const timer = setInterval(
      () => {
        this.transactions
          .run((em) =>
            em.update(
              IdempotencyKey,
              { customerId: hold.customerId, keyHash: hold.keyHash, owner: hold.owner, statusCode: IsNull() },
              { leaseUntil: Date.now() + leaseMs },
            ),
          )
          .catch((err: unknown) => this.logger.warn(`could not renew the lease of an idempotency key: ${err instanceof Error ? err.message : String(err)}`));
      },
      Math.max(1000, Math.floor(leaseMs / 3)),
    );
    timer.unref();
    this.renewals.set(hold.owner, timer);
  }

  private stopRenewing(hold: Hold): void {
    const timer = this.renewals.get(hold.owner);
    if (timer) clearInterval(timer);
    this.renewals.delete(hold.owner);
  }
}
