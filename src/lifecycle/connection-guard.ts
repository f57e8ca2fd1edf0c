import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Logger } from '@nestjs/common';
import type { ServerConfig } from '../config/app-config';
import type { Metrics } from '../metrics/metrics.service';
import { addressKey } from '../rate-limit/address-key';

/** Refusals are logged at most once per this interval (the first at once, then a count of the rest). */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;

export type RefusedLimit = 'total' | 'per-ip' | 'live-sockets-per-connection' | 'live-sessions-per-ip';

/**
 * Logs refusals without flooding the log: the first one at once, then at most one line per
 * REFUSAL_LOG_INTERVAL_MS counting those that came since (by limit, with the last address).
 */
export class RefusalLog {
  private last = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly pending = new Map<RefusedLimit, { count: number; address: string }>();

  constructor(
    private readonly logger: Logger,
    private readonly describe: (limit: RefusedLimit) => string,
  ) {}

  refused(limit: RefusedLimit, address: string): void {
    const entry = this.pending.get(limit) ?? { count: 0, address };
    entry.count += 1;
    entry.address = address;
    this.pending.set(limit, entry);
    const wait = this.last + REFUSAL_LOG_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), wait);
      this.timer.unref();
    }
  }

  private flush(): void {
    this.timer = null;
    if (!this.pending.size) return;
    this.last = Date.now();
    const parts = [...this.pending].map(([limit, { count, address }]) => `${count} over ${this.describe(limit)} (last from ${address})`);
    this.pending.clear();
    this.logger.warn(`refused connections: ${parts.join('; ')}; at most one such line a minute`);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * Bounds what idle or abusive clients can hold of the node (docs/architecture.md): at most MAX_CONNECTIONS
 * open connections (Node closes a new one past it before reading a byte: `server.maxConnections`), at
 * most MAX_CONNECTIONS_PER_IP from one peer address (closed as soon as it is accepted), and deadlines for
 * connections that send nothing useful: HEADERS_TIMEOUT_MS for a request's headers, REQUEST_TIMEOUT_MS for
 * a whole request (a response may take as long as it needs). Refusals are counted
 * (livegoods_connections_refused_total) and logged at most once a minute.
 */
export class ConnectionGuard {
  private readonly logger = new Logger('Connections');
  private readonly perAddress = new Map<string, number>();
  private open = 0;
  readonly refusals: RefusalLog;

  constructor(
    private readonly config: ServerConfig,
    private readonly metrics: Metrics,
  ) {
    this.refusals = new RefusalLog(this.logger, (limit) =>
      limit === 'total'
        ? `MAX_CONNECTIONS (${config.maxConnections})`
        : limit === 'per-ip'
          ? `MAX_CONNECTIONS_PER_IP (${config.maxConnectionsPerIp})`
          : 'the /live sockets allowed on one connection',
    );
    metrics.countOpenConnections(() => this.open);
  }

  /** Call before the server listens (Node reads the checking interval when it starts listening). */
  apply(server: Server): void {
    const { maxConnections, headersTimeoutMs, requestTimeoutMs } = this.config;
    server.maxConnections = maxConnections;
    server.headersTimeout = headersTimeoutMs;
    server.requestTimeout = requestTimeoutMs;
    // Node checks both deadlines every 30 s by default: a 10 s deadline would hold for up to 40 s.
    (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(5000, Math.max(100, Math.floor(headersTimeoutMs / 4)));
    server.on('drop', (data?: { remoteAddress?: string }) => this.refuse('total', data?.remoteAddress));
    // First of the 'connection' listeners: a refused socket is closed before a byte of it is read.
    server.prependListener('connection', (socket: Socket) => this.admit(socket));
    server.once('close', () => this.refusals.stop());
  }

  /** Open connections right now (what livegoods_open_connections shows). */
  get openConnections(): number {
    return this.open;
  }

  private admit(socket: Socket): void {
    const address = socket.remoteAddress === undefined ? undefined : addressKey(socket.remoteAddress);
    const cap = this.config.maxConnectionsPerIp;
    if (cap > 0 && address !== undefined) {
      const held = this.perAddress.get(address) ?? 0;
      if (held >= cap) {
        socket.destroy();
        this.refuse('per-ip', address);
        return;
      }
      this.perAddress.set(address, held + 1);
    }
    this.open += 1;
    socket.once('close', () => {
      this.open -= 1;
      if (cap <= 0 || address === undefined) return;
      const held = (this.perAddress.get(address) ?? 1) - 1;
      if (held > 0) this.perAddress.set(address, held);
      else this.perAddress.delete(address);
    });
  }

  private refuse(limit: 'total' | 'per-ip', address: string | undefined): void {
    this.metrics.connectionsRefused.inc({ limit });
    this.refusals.refused(limit, address ?? 'unknown');
  }
}
