import { Global, Injectable, Logger, Module, OnModuleDestroy } from '@nestjs/common';
import Redis, { RedisOptions } from 'ioredis';
import { redactCredentials } from '../common/util/redact';
import { AppConfig } from '../config/app-config';

/** Longest a Redis command may wait for its answer; Redis answers in well under a millisecond when up. */
export const REDIS_COMMAND_TIMEOUT_MS = 2000;
/** While Redis is taken as away (RedisConnection.failed), how often a PING asks whether it answers again. */
export const REDIS_PROBE_MS = 1000;
/**
 * PINGs left unanswered in a row on an open connection before it is dropped and opened anew: a connection
 * lost in a network partition never answers again, even once the network has healed.
 */
export const REDIS_PROBES_BEFORE_RECONNECT = 2;
/** How often the connections that only listen or publish (Socket.IO's adapter, the search corpus's) are PINGed (see pingEvery). */
export const REDIS_LIVENESS_MS = 5000;

export interface RedisClientOptions {
  /**
   * Queue commands while disconnected (and send them on reconnect) instead of failing them at once.
   * Subscribers need it (their subscriptions are replayed); publishers and counters do not: a command
   * that cannot be sent fails immediately and the caller copes.
   */
  offlineQueue?: boolean;
}

/**
 * The shared Redis connection when REDIS_URL is set (null otherwise): viewer counts across nodes, rate
 * limits and the readiness check. The Socket.IO adapter opens its own pub/sub pair (see LiveIoAdapter).
 * Every client reconnects by itself forever (with backoff) and never takes the process down: errors are
 * logged, each command has a timeout, and callers treat a failed command as "Redis is away for now".
 */
@Injectable()
export class RedisConnection implements OnModuleDestroy {
  private readonly logger = new Logger('Redis');
  readonly client: Redis | null;
  /** Set by `failed`: commands are not sent until a PING answers (see probe). */
  private away = false;
  private probe: NodeJS.Timeout | null = null;

  constructor(config: AppConfig) {
    this.client = config.redis.url ? RedisConnection.open(config.redis.url, this.logger) : null;
  }

  /**
   * The client, for a command on a request's path; null without REDIS_URL, and while Redis is taken as
   * away (a command failed): callers then do without it at once (count on this node, this node's viewers)
   * instead of each waiting REDIS_COMMAND_TIMEOUT_MS for a Redis that hangs.
   */
  get usable(): Redis | null {
    return this.away ? null : this.client;
  }

  /** Whether Redis is taken as away right now (see usable). */
  get isAway(): boolean {
    return this.away;
  }

  /**
   * A command of the shared client failed or ran out of time: Redis is taken as away (`usable` is null)
   * until a PING, sent every REDIS_PROBE_MS meanwhile, answers. A connection that is open but answers no
   * PING REDIS_PROBES_BEFORE_RECONNECT times in a row is dropped and opened anew.
   */
  failed(err?: unknown): void {
    const client = this.client;
    if (!client || this.away) return;
    this.away = true;
    this.logger.warn(
      redactCredentials(`redis: a command failed (${err instanceof Error ? err.message : 'no answer'}); going without Redis until it answers again`),
    );
    this.probe = RedisConnection.pingEvery(client, REDIS_PROBE_MS, () => {
      if (!this.away) return;
      this.away = false;
      if (this.probe) clearInterval(this.probe);
      this.probe = null;
      this.logger.log('redis: answers again');
    });
  }

  static open(url: string, logger: Logger, options: RedisClientOptions = {}): Redis {
    const settings: RedisOptions = {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: options.offlineQueue ?? false,
      commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
      connectTimeout: 5000,
      retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 3000),
      lazyConnect: false,
    };
    const client = new Redis(url, settings);
    let down = false;
    client.on('error', (err: Error) => {
      if (!down) logger.warn(redactCredentials(`redis: ${err.message}`));
      down = true;
    });
    client.on('ready', () => {
      if (down) logger.log('redis: connected again');
      down = false;
    });
    return client;
  }

  /**
   * Sends a PING every `intervalMs` (`onAnswer` when it answers), one at a time. An open connection that
   * answers none REDIS_PROBES_BEFORE_RECONNECT times in a row is dropped and opened anew: a connection
   * lost in a network partition stays open and silent, even once the network has healed, and a client that
   * only listens (a subscriber), sends and forgets (a publisher) or waits without a command timeout (BullMQ's)
   * would never notice. A PING that fails is a miss, and so is each interval that passes without its
   * answer. While ioredis is (re)connecting, it retries by itself. The timer does not keep the process
   * alive, and stops when the client is closed for good (its 'end'); clear it to stop sooner.
   */
  static pingEvery(client: Redis, intervalMs: number, onAnswer: () => void = () => undefined): NodeJS.Timeout {
    let missed = 0;
    let asking: Promise<unknown> | null = null;
    const miss = () => {
      if (client.status === 'connecting' || client.status === 'reconnecting') return;
      missed += 1;
      if (missed < REDIS_PROBES_BEFORE_RECONNECT) return;
      missed = 0;
      asking = null;
      client.disconnect(true);
    };
    const timer = setInterval(() => {
      if (asking) {
        miss();
        return;
      }
      // The answer of a PING given up on (its connection dropped since) counts for nothing.
      const ping: Promise<unknown> = client.ping().then(
        () => {
          if (asking !== ping) return;
          asking = null;
          missed = 0;
          onAnswer();
        },
        () => {
          if (asking !== ping) return;
          asking = null;
          miss();
        },
      );
      asking = ping;
    }, intervalMs);
    timer.unref();
    client.once('end', () => clearInterval(timer));
    return timer;
  }

  /**
   * Drops and reopens a connection whose handshake (ioredis's ready check, after the TCP connection is up)
   * has not finished `ms` after it began: ioredis bounds the TCP connection (connectTimeout) but not the
   * handshake, and a connection opened into a network partition is accepted and then never answers, so a
   * client waiting for it to be ready (BullMQ's worker, after a reconnect of its blocking connection) would
   * wait for ever, even once the network has healed.
   */
  static limitHandshake(client: Redis, ms: number): void {
    let timer: NodeJS.Timeout | undefined;
    const stop = () => clearTimeout(timer);
    client.on('connect', () => {
      stop();
      timer = setTimeout(() => {
        if (client.status === 'connect') client.disconnect(true);
      }, ms);
      timer.unref();
    });
    client.on('ready', stop);
    client.on('close', stop);
  }

  /**
   * Makes the named commands of this client never reject (a failure goes to `onError` and the command
   * resolves to its fallback): libraries that send them and forget (the Socket.IO Redis adapter publishes
   * that way, subscribes that way as it starts, and unsubscribes that way when it closes) would otherwise
   * leave a rejected promise behind each time Redis is unreachable, slow or hanging. (A subscriber's
   * commands: see resubscribing.)
   */
  static neverRejecting(
    client: Redis,
    fallbacks: Partial<Record<'publish' | 'subscribe' | 'psubscribe' | 'unsubscribe' | 'punsubscribe', unknown>>,
    onError: (err: Error) => void,
  ): Redis {
    for (const [name, fallback] of Object.entries(fallbacks)) {
      const command = (client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name].bind(client);
      const safe = (...args: unknown[]): Promise<unknown> =>
        command(...args).catch((err: Error) => {
          onError(err);
          return fallback;
        });
      (client as unknown as Record<string, typeof safe>)[name] = safe;
    }
    return client;
  }

  /**
   * A subscriber connection whose subscriptions are never lost: ioredis subscribes again after a reconnect
   * only to the channels Redis confirmed, so a SUBSCRIBE that failed (queued while Redis was unreachable
   * and dropped at a reconnect, or timed out unsent) was never sent again: a node started while Redis was
   * away never heard the other nodes' events through it, however long it ran. A failed (p)subscribe is sent
   * again at the connection's next 'ready' (the liveness PINGs reopen a connection that hangs), until it
   * holds or is unsubscribed. Like neverRejecting, none of the four commands ever rejects (`onError` hears
   * why), since the Socket.IO adapter sends them and forgets.
   */
  static resubscribing(client: Redis, onError: (err: Error) => void): Redis {
    type Kind = 'subscribe' | 'psubscribe';
    const failed: Record<Kind, Set<string>> = { subscribe: new Set(), psubscribe: new Set() };
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const channelsOf = (args: unknown[]) => args.flat().filter((a): a is string => typeof a === 'string');
    const wrap = (name: string, kind: Kind, subscribing: boolean) => {
      const command = commands[name].bind(client);
      commands[name] = (...args: unknown[]): Promise<unknown> => {
        const channels = channelsOf(args);
        // Sent again now, or given up; an unsubscribe from everything gives up every one.
        if (!subscribing && channels.length === 0) failed[kind].clear();
        else for (const c of channels) failed[kind].delete(c);
        return command(...args).catch((err: Error) => {
          onError(err);
          if (subscribing) for (const c of channels) failed[kind].add(c);
          return undefined;
        });
      };
    };
    wrap('subscribe', 'subscribe', true);
    wrap('psubscribe', 'psubscribe', true);
    wrap('unsubscribe', 'subscribe', false);
    wrap('punsubscribe', 'psubscribe', false);
    client.on('ready', () => {
      for (const kind of ['subscribe', 'psubscribe'] as const) {
        if (failed[kind].size) void commands[kind]([...failed[kind]]);
      }
    });
    return client;
  }

  async onModuleDestroy(): Promise<void> {
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
    await this.client?.quit().catch(() => this.client?.disconnect());
  }
}

@Global()
@Module({ providers: [RedisConnection], exports: [RedisConnection] })
export class RedisModule {}
