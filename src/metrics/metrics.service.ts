import type { Server } from 'node:http';
import { monitorEventLoopDelay, IntervalHistogram } from 'node:perf_hooks';
import { Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Where a goods row was written from. */
export type GoodsSource = 'sync' | 'spreadsheet' | 'api';
export type GoodsOutcome = 'CREATE' | 'UPDATE' | 'FAIL';
export type LiveRole = 'viewer' | 'operator';
/** Work that a node does a few at a time, behind a gate (WorkGate): image decoding, synchronous spreadsheet reads. */
export type GatedWork = 'image' | 'image-fetch' | 'spreadsheet' | 'public-answer' | 'export' | 'search-scan';

/** What a gate reports at each scrape. */
export interface GateUse {
  active: number;
  queued: number;
  limit: number;
}

/** Pool figures of the MySQL driver (SQLite has no pool). */
export interface PoolUse {
  inUse: number;
  free: number;
  waiting: number;
  max: number;
}

/**
 * prom-client defaults that `promtool check metrics` rejects (gauges named *_total) or that reset at every
 * scrape (prom-client's event-loop lag gauges, replaced by livegoods_event_loop_delay_seconds).
 */
const DROPPED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
];

/** Event-loop delay is summarized over windows of this length; a scrape reads the last full window. */
const LOOP_WINDOW_MS = 10_000;

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The app's Prometheus metrics (docs/monitoring.md), in a registry of its own: several apps in one process
 * (the tests) never share a series. Read-only over HTTP: nothing here is reset by a scrape.
 */
@Injectable()
export class Metrics implements OnApplicationBootstrap, OnModuleDestroy {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'livegoods_http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status: time from arrival to the last byte written',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly goodsRows = new Counter({
    name: 'livegoods_goods_rows_written_total',
    help: 'Goods rows written, by source (sync, spreadsheet, api) and outcome (CREATE, UPDATE, FAIL)',
    labelNames: ['source', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly searches = new Counter({
    name: 'livegoods_search_keywords_total',
    help: 'Keywords not in the list cache, by how they were matched (memory: the in-memory corpus; scan: the database)',
    labelNames: ['path'] as const,
    registers: [this.registry],
  });

  readonly searchCorpusGoods = new Gauge({
    name: 'livegoods_search_corpus_goods',
    help: 'Goods held by the in-memory keyword search corpora of this node',
    registers: [this.registry],
  });

  readonly searchCorpusBytes = new Gauge({
    name: 'livegoods_search_corpus_bytes',
    help: 'Bytes held by the in-memory keyword search corpora of this node (what SEARCH_MEMORY_MB bounds)',
    registers: [this.registry],
  });

  readonly mediaFetches = new Counter({
    name: 'livegoods_media_fetches_total',
    help: 'Image fetches from goods mediaUrls, by outcome (ok, failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly workRefusals = new Counter({
    name: 'livegoods_work_refusals_total',
    help:
      'Images, synchronous spreadsheet reads, public answers with goods and exports a node gave up on at its gate, by work (image, image-fetch, spreadsheet, public-answer, export, search-scan) and ' +
      'reason (full: the waiting line was full; waited: no turn before the deadline; ran: still running at the deadline)',
    labelNames: ['work', 'reason'] as const,
    registers: [this.registry],
  });

  readonly liveEventsPublished = new Counter({
    name: 'livegoods_live_events_published_total',
    help: 'Live events this node published after their transaction committed',
    registers: [this.registry],
  });

  readonly liveEventsDelivered = new Counter({
    name: 'livegoods_live_events_delivered_total',
    help: 'Live events this node wrote to the viewers of their campaign (once per event and node)',
    registers: [this.registry],
  });

  readonly liveDeliveryLatency = new Histogram({
    name: 'livegoods_live_delivery_latency_seconds',
    help: 'From the commit of a live event to writing it to the viewers of this node',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'livegoods_webhook_deliveries_total',
    help: 'Webhook delivery tries this node made, by outcome: delivered (2xx), retry (failed, tried again later), failed (given up)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookEventsRecorded = new Counter({
    name: 'livegoods_webhook_deliveries_recorded_total',
    help: 'Webhook deliveries this node wrote to the outbox (one per event and subscribed endpoint), by event type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly webhookSendDuration = new Histogram({
    name: 'livegoods_webhook_send_duration_seconds',
    help: 'Time from sending a webhook delivery to the receiver answer (or the timeout)',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly rateLimitRefusals = new Counter({
    name: 'livegoods_rate_limit_refusals_total',
    help: 'Requests, Socket.IO handshakes and connections refused by a rate limit, by limit (ip, customer, auth-failures, live-connections, public-builds)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly connectionsRefused = new Counter({
    name: 'livegoods_connections_refused_total',
    help: 'New connections closed at once, Socket.IO handshakes and /live joins refused, by limit (total: MAX_CONNECTIONS, per-ip: MAX_CONNECTIONS_PER_IP, live-sessions-per-ip: LIVE_SESSIONS_PER_IP, live-sockets-per-connection)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly connectionsCut = new Counter({
    name: 'livegoods_connections_cut_total',
    help: 'Connections closed by the node, by reason (unread-body: the client still sending a body 5 s after its request was answered; send-timeout: an answer of which the client took no byte for SEND_TIMEOUT_MS)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private openConnectionsSource: () => number = () => 0;
  private liveSocketsSource: () => Record<LiveRole, number> = () => ({ viewer: 0, operator: 0 });
  private poolSource: () => PoolUse | null = () => null;
  private inFlightSource: () => number = () => 0;
  private readonly gateSources = new Map<GatedWork, GateUse>();
  private readonly loopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private loopWindow = { p50: 0, p99: 0, max: 0 };
  private loopTimer: NodeJS.Timeout | undefined;

  constructor(@Optional() private readonly adapterHost?: HttpAdapterHost) {
    collectDefaultMetrics({ register: this.registry });
    for (const name of DROPPED_DEFAULTS) this.registry.removeSingleMetric(name);

    // prom-client calls collect() with the gauge as `this`: the sources are read through this closure.
    const sockets = () => this.liveSocketsSource();
    const pool = () => this.poolSource();
    const loop = () => this.loopWindow;
    const inFlight = () => this.inFlightSource();
    const connections = () => this.openConnectionsSource();
    const gates = () => this.gateSources;
    new Gauge({
      name: 'livegoods_open_connections',
      help: 'Client connections open on this node (HTTP keep-alive and WebSocket; what MAX_CONNECTIONS bounds)',
      registers: [this.registry],
      collect() {
        this.set(connections());
      },
    });
    new Gauge({
      name: 'livegoods_http_requests_in_flight',
      help: 'HTTP requests accepted and not answered yet',
      registers: [this.registry],
      collect() {
        this.set(inFlight());
      },
    });
    new Gauge({
      name: 'livegoods_live_sockets',
      help: 'Sockets connected to the /live namespace on this node, by role (viewer, operator)',
      labelNames: ['role'] as const,
      registers: [this.registry],
      collect() {
        const counts = sockets();
        for (const role of ['viewer', 'operator'] as const) this.set({ role }, counts[role]);
      },
    });
    new Gauge({
      name: 'livegoods_db_pool_connections',
      help: 'MySQL connection pool of this node by state: in_use, free, waiting (requests queued for a connection), max (DB_POOL_SIZE); absent on SQLite',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const use = pool();
        if (!use) return;
        this.set({ state: 'in_use' }, use.inUse);
        this.set({ state: 'free' }, use.free);
        this.set({ state: 'waiting' }, use.waiting);
        this.set({ state: 'max' }, use.max);
      },
    });
    new Gauge({
      name: 'livegoods_work_slots',
      help: 'Gated work on this node by work (image, image-fetch, spreadsheet, public-answer, export, search-scan) and state: active (running), waiting (in line for a turn), limit (at once)',
      labelNames: ['work', 'state'] as const,
      registers: [this.registry],
      collect() {
        for (const [work, use] of gates()) {
          this.set({ work, state: 'active' }, use.active);
          this.set({ work, state: 'waiting' }, use.queued);
          this.set({ work, state: 'limit' }, use.limit);
        }
      },
    });
    new Gauge({
      name: 'livegoods_event_loop_delay_seconds',
      help: `Event-loop delay over the last ${LOOP_WINDOW_MS / 1000} s window, by statistic (p50, p99, max)`,
      labelNames: ['stat'] as const,
      registers: [this.registry],
      collect() {
        for (const [stat, value] of Object.entries(loop())) this.set({ stat }, value);
      },
    });
  }

  /**
   * The event-loop windows start when the node starts listening: the start before it (migrations, the
   * search corpus's first load) is not serving anyone, and its stalls would read as one in the first window
   * of every start (an alert on livegoods_event_loop_delay_seconds firing at each deployment).
   */
  onApplicationBootstrap(): void {
    const server = this.adapterHost?.httpAdapter?.getHttpServer() as Server | undefined;
    if (server && !server.listening) server.once('listening', () => this.startLoopWindows());
    else this.startLoopWindows();
  }

  private startLoopWindows(): void {
    if (this.loopTimer) return;
    this.loopDelay.enable();
    this.loopTimer = setInterval(() => this.closeLoopWindow(), LOOP_WINDOW_MS);
    this.loopTimer.unref();
  }

  /** The live gateway tells how to count its sockets (read at each scrape). */
  countLiveSockets(source: () => Record<LiveRole, number>): void {
    this.liveSocketsSource = source;
  }

  /** A gate (a WorkGate) whose figures livegoods_work_slots shows (read at each scrape). */
  countGate(work: GatedWork, gate: GateUse): void {
    this.gateSources.set(work, gate);
  }

  /** The client connections open, as the connection guard counts them (read at each scrape). */
  countOpenConnections(source: () => number): void {
    this.openConnectionsSource = source;
  }

  /** The requests in flight, as the graceful shutdown counts them (read at each scrape). */
  countRequestsInFlight(source: () => number): void {
    this.inFlightSource = source;
  }

  /** SQLite only: adds the length of its write-ahead log, in bytes, read at each scrape from `source`. */
  readSqliteWal(source: () => number): void {
    new Gauge({
      name: 'livegoods_sqlite_wal_bytes',
      help: "SQLite's write-ahead log since it was last started over, as the checkpointer last read it (whole 4 kB pages); absent on MySQL",
      registers: [this.registry],
      collect() {
        this.set(source());
      },
    });
  }

  /** The database module tells how to read the MySQL pool (read at each scrape). */
  readPool(source: () => PoolUse | null): void {
    this.poolSource = source;
  }

  /** The Prometheus text exposition of every metric of this app. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  onModuleDestroy(): void {
    clearInterval(this.loopTimer);
    this.loopTimer = undefined;
    this.loopDelay.disable();
    this.registry.clear();
  }

  private closeLoopWindow(): void {
    const h = this.loopDelay;
    if (h.count > 0) this.loopWindow = { p50: h.percentile(50) / 1e9, p99: h.percentile(99) / 1e9, max: h.max / 1e9 };
    h.reset();
  }
}
