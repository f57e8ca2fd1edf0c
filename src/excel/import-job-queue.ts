import { Logger } from '@nestjs/common';
import { DelayedError, Job, Queue, Worker } from 'bullmq';
import Redis from 'ioredis';
import { redactCredentials } from '../common/util/redact';
import { finishedWithin } from '../common/util/finished-within';
import { REDIS_LIVENESS_MS, RedisConnection } from '../redis/redis.module';

/** Longest an enqueue may wait for Redis (the job stays queued in the database and is enqueued again later). */
const ADD_TIMEOUT_MS = 2000;

/** Longest a connection to Redis may take to be set up: its TCP connection, then its handshake (each). */
const HANDSHAKE_TIMEOUT_MS = 5000;

/** Longest the queue's close may wait for Redis on shutdown. */
const CLOSE_TIMEOUT_MS = 5000;

/** BullMQ's worker, with a way to stop its lock renewal timer when its close cannot finish. */
class ImportWorker extends Worker<{ jobId: number }> {
  stopLockRenewal(): Promise<void> {
    return this.lockManager.close();
  }
}

/** What the worker does with a job: run it, or tell the queue to come back later. */
export type QueueVerdict = { kind: 'done' } | { kind: 'later'; delayMs: number };

/**
 * The BullMQ side of import jobs, when REDIS_URL is set (docs/decisions/0009): the database keeps every
 * job and its progress; Redis only hands each job to one worker across the nodes. The queue holds job
 * ids (BullMQ job id `import-<database id>`, so adding one twice is a no-op while it waits or runs); a worker that
 * dies loses its lock, and BullMQ's stalled-job check hands the job to another worker.
 */
export class ImportJobQueue {
  private readonly logger = new Logger('ImportJobQueue');
  private readonly queue: Queue;
  /** Errors the connections emitted (logged once per outage by watched()), which BullMQ passes on again. */
  private readonly connectionErrors = new WeakSet<Error>();
  private readonly queueConnection: Redis;
  private worker: ImportWorker | null = null;
  private workerConnection: Redis | null = null;

  constructor(
    private readonly url: string,
    private readonly prefix: string,
    private readonly lockMs: number,
  ) {
    this.queueConnection = this.connect(false);
    this.queue = new Queue('import-jobs', { connection: this.queueConnection, prefix });
    this.queue.on('error', (err) => this.warnUnlessDown(this.queueConnection, 'queue', err));
  }

  /** Puts a job in the queue (a no-op when it is there already). Bounded by ADD_TIMEOUT_MS. */
  async add(jobId: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add('import', { jobId }, { jobId: `import-${jobId}`, removeOnComplete: true, removeOnFail: true }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Redis did not take the job within ${ADD_TIMEOUT_MS} ms`)), ADD_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Starts this node's worker: `process` runs one job at a time per slot, `concurrency` slots. */
  start(concurrency: number, process: (jobId: number) => Promise<QueueVerdict>): void {
    this.workerConnection = this.connect(true);
    this.worker = new ImportWorker(
      'import-jobs',
      async (job: Job<{ jobId: number }>, token?: string) => {
        const verdict = await process(Number(job.data.jobId));
        if (verdict.kind === 'later') {
          await job.moveToDelayed(Date.now() + verdict.delayMs, token);
          throw new DelayedError();
        }
      },
      {
        connection: this.workerConnection,
        prefix: this.prefix,
        concurrency,
        lockDuration: this.lockMs,
        stalledInterval: Math.max(1000, Math.floor(this.lockMs / 2)),
      },
    );
    this.worker.on('error', (err) => this.warnUnlessDown(this.workerConnection, 'worker', err));
  }

  /** Stops taking jobs and waits for the running ones (they stop after their current chunk). */
  async close(): Promise<void> {
    // Bounded: with Redis unreachable, BullMQ's close would wait for it.
    const closed = (async () => {
      await this.worker?.close().catch(() => undefined);
      await this.queue.close().catch(() => undefined);
    })();
    await finishedWithin(closed, CLOSE_TIMEOUT_MS);
    // A close still waiting for Redis never reaches the step that stops the lock renewal timer, which
    // would keep the process alive: stop it here.
    await this.worker?.stopLockRenewal();
    // BullMQ's own connection wrappers (not part of its typed API) drop their listeners as they close, and
    // one still connecting when its client is closed (a link lost in a partition) then emits an 'error'
    // nobody listens to: they get a listener of ours again before the clients are closed.
    for (const owner of [this.worker, this.queue] as unknown as Array<Record<
      string,
      { on?: (event: 'error', listener: (err: Error) => void) => void } | undefined
    > | null>) {
      for (const key of ['connection', 'blockingConnection']) {
        owner?.[key]?.on?.('error', (err: Error) => this.logger.warn(redactCredentials(`closing: ${err.message}`)));
      }
    }
    for (const connection of [this.workerConnection, this.queueConnection]) connection?.disconnect();
  }

  /**
   * A worker's connections must retry forever (BullMQ's rule); the queue's commands fail after one retry
   * (and add() has its own deadline).
   *
   * A connection lost in a network partition stays open and silent once the network has healed, and
   * BullMQ's commands on it (no command timeout: its worker's must be able to wait) would wait for ever:
   * the node would take no import job again. So the queue's and the worker's connections are PINGed and
   * opened anew when the PINGs go unanswered; the worker's blocking connection (a duplicate of its
   * connection, made by BullMQ) is not (a PING would wait behind its blocking command): BullMQ opens it
   * anew itself when a blocking command outlives its timeout. Every one of them gets its handshake
   * bounded: one opened into the partition would never become ready, and BullMQ waits for it to.
   */
  private connect(blocking: boolean): Redis {
    const client = this.watched(
      new Redis(this.url, {
        maxRetriesPerRequest: blocking ? null : 1,
        // BullMQ sends its first commands (script loading) before the connection is up.
        enableOfflineQueue: true,
        connectTimeout: HANDSHAKE_TIMEOUT_MS,
        retryStrategy: (attempt) => Math.min(100 * 2 ** Math.min(attempt, 5), 3000),
      }),
    );
    RedisConnection.pingEvery(client, REDIS_LIVENESS_MS);
    if (blocking) {
      const duplicate = client.duplicate.bind(client);
      client.duplicate = (override) => this.watched(duplicate(override));
    }
    return client;
  }

  /**
   * BullMQ passes on its connections' errors, once for every reconnection attempt (about 1.5 lines a
   * second while Redis is unreachable). Those are logged once per outage by watched(), which sees each
   * first (its listener is older): only BullMQ's own errors (a command it could not run) are logged here.
   */
  private warnUnlessDown(connection: Redis | null, what: string, err: Error): void {
    if (this.connectionErrors.has(err) || (connection && connection.status !== 'ready')) return;
    this.logger.warn(redactCredentials(`${what}: ${err.message}`));
  }

  /** The client with its errors logged (once per outage) and its handshake bounded. */
  private watched(client: Redis): Redis {
    let down = false;
    client.on('error', (err: Error) => {
      this.connectionErrors.add(err);
      if (!down) this.logger.warn(redactCredentials(`redis: ${err.message}`));
      down = true;
    });
    client.on('ready', () => {
      down = false;
    });
    RedisConnection.limitHandshake(client, HANDSHAKE_TIMEOUT_MS);
    return client;
  }
}
