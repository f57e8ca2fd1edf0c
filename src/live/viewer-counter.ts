import { randomUUID } from 'node:crypto';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { REDIS_COMMAND_TIMEOUT_MS, RedisConnection } from '../redis/redis.module';
import { finishedWithin } from '../common/util/finished-within';

const FLUSH_DELAY_MS = 100;
const REFRESH_MS = 5_000;
const TTL_SECONDS = 15;
const REMOTE_CACHE_MS = 200;

/**
 * Viewers connected right now, per campaign. Each node counts its own sockets; with Redis it also keeps
 * its counts in a hash of its own (`<REDIS_PREFIX>:viewers:<node>`, expiring, so a crashed node drops
 * out) and lists itself in a sorted set of nodes scored by that expiry (`<REDIS_PREFIX>:viewers`); a
 * count reads the hashes of the nodes still listed as alive, never scanning the keyspace.
 */
@Injectable()
export class ViewerCounter implements OnModuleDestroy {
  private readonly logger = new Logger(ViewerCounter.name);
  private readonly local = new Map<number, number>();
  private readonly nodes: string;
  private readonly key: string;
  private flushTimer: NodeJS.Timeout | null = null;
  private remote: { until: number; counts: Map<number, number> } | null = null;
  private readonly refresh: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: RedisConnection,
    config: AppConfig,
  ) {
    this.nodes = `${config.redis.prefix}:viewers`;
    this.key = `${this.nodes}:${randomUUID()}`;
    if (redis.client) {
      this.refresh = setInterval(() => void this.flush(), REFRESH_MS);
      this.refresh.unref();
    }
  }

  joined(campaignId: number): void {
    this.local.set(campaignId, (this.local.get(campaignId) ?? 0) + 1);
    this.scheduleFlush();
  }

  left(campaignId: number): void {
    const n = (this.local.get(campaignId) ?? 0) - 1;
    if (n > 0) this.local.set(campaignId, n);
    else this.local.delete(campaignId);
    this.scheduleFlush();
  }

  async count(campaignId: number): Promise<number> {
    return (await this.counts([campaignId])).get(campaignId) ?? 0;
  }

  async counts(campaignIds: number[]): Promise<Map<number, number>> {
    const out = new Map<number, number>(campaignIds.map((id) => [id, 0]));
    // While Redis is taken as away, this node's own count at once.
    const client = this.redis.usable;
    if (!client || !campaignIds.length) {
      for (const id of campaignIds) out.set(id, this.local.get(id) ?? 0);
      return out;
    }
    // Other nodes publish at most every FLUSH_DELAY_MS anyway: reuse a recent reading of theirs.
    const now = Date.now();
    if (this.remote && this.remote.until > now && campaignIds.every((id) => this.remote?.counts.has(id))) {
      for (const id of campaignIds) out.set(id, (this.local.get(id) ?? 0) + (this.remote.counts.get(id) ?? 0));
      return out;
    }
    try {
      // Our own node counts from memory (always current), the others from Redis.
      const others = (await client.zrangebyscore(this.nodes, now, '+inf')).filter((k) => k !== this.key);
      const pipeline = client.pipeline();
      for (const key of others) pipeline.hmget(key, ...campaignIds.map(String));
      // ioredis gives a pipeline's commands no timeout of their own: bounded here like any other command.
      const exec = pipeline.exec();
      if (!(await finishedWithin(exec, REDIS_COMMAND_TIMEOUT_MS))) throw new Error(`no answer within ${REDIS_COMMAND_TIMEOUT_MS} ms`);
      const results = (await exec) ?? [];
      const remote = new Map<number, number>(campaignIds.map((id) => [id, 0]));
      for (const [err, values] of results) {
        if (err) continue;
        (values as Array<string | null>).forEach((v, i) => {
          if (v) remote.set(campaignIds[i], (remote.get(campaignIds[i]) ?? 0) + Number(v));
        });
      }
      this.remote = { until: now + REMOTE_CACHE_MS, counts: remote };
      for (const id of campaignIds) out.set(id, (this.local.get(id) ?? 0) + (remote.get(id) ?? 0));
    } catch (err) {
      this.logger.warn(`viewer counts from Redis failed, counting this node only: ${err instanceof Error ? err.message : String(err)}`);
      this.redis.failed(err);
      for (const id of campaignIds) out.set(id, this.local.get(id) ?? 0);
    }
    return out;
  }

  private scheduleFlush(): void {
    if (!this.redis.client || this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.flush();
    }, FLUSH_DELAY_MS);
    this.flushTimer.unref();
  }

  private async flush(): Promise<void> {
    // Away: the next refresh (REFRESH_MS) publishes the counts once Redis answers again.
    const client = this.redis.usable;
    if (!client) return;
    try {
      const now = Date.now();
      const multi = client.multi().del(this.key);
      if (this.local.size) {
        multi.hset(this.key, Object.fromEntries([...this.local].map(([id, n]) => [String(id), String(n)])));
        multi.expire(this.key, TTL_SECONDS);
        multi.zadd(this.nodes, now + TTL_SECONDS * 1000, this.key);
      } else multi.zrem(this.nodes, this.key);
      // Nodes that stopped refreshing (crashed) leave the list once their hash has expired.
      multi.zremrangebyscore(this.nodes, '-inf', now);
      await multi.exec();
    } catch (err) {
      this.logger.warn(`publishing viewer counts failed: ${err instanceof Error ? err.message : String(err)}`);
      this.redis.failed(err);
    }
  }

  async onModuleDestroy(): Promise<void> {
    if (this.refresh) clearInterval(this.refresh);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    await this.redis.client
      ?.multi()
      .del(this.key)
      .zrem(this.nodes, this.key)
      .exec()
      .catch(() => undefined);
  }
}
