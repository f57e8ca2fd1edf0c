import { isAbsolute, resolve } from 'node:path';
import { config as loadDotenv } from 'dotenv';
import { parseDuration } from '../common/util/duration';
import { compileProxyTrust, ProxyTrust } from '../common/util/proxy-trust';
import { DEFAULT_MAX_CONNECTIONS_PER_IP, maxConnectionsFor, openFileLimit } from './connection-limits';
import { resolveLogFormat, LogFormat } from './log-format';
import { EnvironmentVariables, normalizeOrigin, validateEnv } from './env.validation';
import { withoutTrailing } from '../common/util/text';

export interface ServerConfig {
  port: number;
  publicBaseUrl?: string;
  /** Largest body of every route but sync. */
  bodyLimit: string;
  /** Largest body of POST /sync. */
  syncBodyLimit: string;
  /** TRUST_PROXY as a trust function (Express's `trust proxy`, and the client address of Engine.IO's requests). */
  proxyTrust: ProxyTrust;
  logLevel: EnvironmentVariables['LOG_LEVEL'];
  /** LOG_FORMAT resolved: `auto` is text on a terminal, JSON otherwise. */
  logFormat: LogFormat;
  /** METRICS_TOKEN: the bearer token GET /metrics asks for; unset, /metrics is open. */
  metricsToken?: string;
  /** CORS_ORIGINS, normalized: the browser origins the authenticated API answers. */
  corsOrigins: string[];
  /** Longest wait for accepted requests on shutdown. */
  shutdownTimeoutMs: number;
  /** MAX_CONNECTIONS resolved: most connections open at once on the node (HTTP and WebSocket). */
  maxConnections: number;
  /** MAX_CONNECTIONS_PER_IP resolved: most open connections per peer address; 0 = no limit. */
  maxConnectionsPerIp: number;
  /** HEADERS_TIMEOUT_MS: a request's headers must have arrived within it. */
  headersTimeoutMs: number;
  /** REQUEST_TIMEOUT_MS: a whole request (body included) must have arrived within it; 0 = no limit. */
  requestTimeoutMs: number;
  /** SEND_TIMEOUT_MS: an answer whose client takes none of its bytes for this long has its connection closed; 0 = no limit. */
  sendTimeoutMs: number;
  /** LIVE_CONNECT_TIMEOUT_MS: a Socket.IO connection that has not joined /live by then is closed. */
  liveConnectTimeoutMs: number;
  /** LIVE_SESSIONS_PER_IP: most Socket.IO (Engine.IO) sessions one client address may hold open on the node; 0 = no limit. */
  liveSessionsPerIp: number;
}

export interface DatabaseConfig {
  type: 'sqlite' | 'mysql';
  /** SQLite file (under DATA_DIR). */
  sqlitePath: string;
  host: string;
  port: number;
  username: string;
  password: string;
  database: string;
  poolSize: number;
  logging: boolean;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  lockTimeoutMs: number;
  transactionTimeoutMs: number;
  /** How long start-up retries a database that does not answer. */
  startupTimeoutMs: number;
}

export interface MediaConfig {
  dir: string;
  allowPrivateHosts: boolean;
  /** Host names and CIDR ranges reachable even when private. */
  allowedHosts: string[];
  maxBytes: number;
  maxPixels: number;
  /** Largest width or height (pixels) of an image. */
  maxSide: number;
  fetchTimeoutMs: number;
  fetchConcurrency: number;
  /** Images fetched and processed at once by this process (all requests together; one customer at most fetchConcurrency). */
  nodeConcurrency: number;
  /** Images decoded at once by this process (all requests together). */
  processConcurrency: number;
  /** Deadline of one image's wait for a turn and its decoding together. */
  processTimeoutMs: number;
  /** MEDIA_RELEASE_DELAY_MS: files no row refers to are deleted this long after they were released (if still unused). */
  releaseDelayMs: number;
  /** MEDIA_SWEEP_INTERVAL_MS: how often the orphan sweep runs (0: never). */
  sweepIntervalMs: number;
  /** MEDIA_SWEEP_MIN_AGE_MS: files written or reused more lately are never swept. */
  sweepMinAgeMs: number;
}

export interface LimitsConfig {
  syncMaxItems: number;
  /** CAMPAIGN_MAX_GOODS: most goods one campaign may hold (adding past it is 413 -413). */
  campaignMaxGoods: number;
  listMaxCount: number;
  /** SEARCH_MEMORY_MB in bytes: what the keyword search corpora of all customers may hold together. */
  searchMemoryBytes: number;
  uploadMaxBytes: number;
  /** Most data rows in a spreadsheet, and most rows without goods values besides them. */
  excelMaxRows: number;
  excelMaxUncompressedBytes: number;
  excelParseTimeoutMs: number;
}

/** Spreadsheet import jobs (see src/excel/import-jobs.service.ts). */
export interface ImportJobsConfig {
  /** Where job uploads wait until their job ends (DATA_DIR/imports). */
  dir: string;
  maxBytes: number;
  maxRows: number;
  concurrency: number;
  maxPendingPerCustomer: number;
  chunkRows: number;
  leaseMs: number;
  pollMs: number;
  readTimeoutMs: number;
  keepPerCustomer: number;
  /** Runs of a job that may end without a trace before it gets further (IMPORT_JOB_MAX_ATTEMPTS). */
  maxAttempts: number;
}

export interface RateLimitConfig {
  enabled: boolean;
  windowMs: number;
  /** Requests per window per client IP. */
  ip: number;
  /** Authenticated requests per window per customer. */
  customer: number;
  /** 401s per window per client IP before that IP is refused until the window ends. */
  authFailures: number;
  /** New /live connections per window per client IP. */
  liveConnections: number;
  /** Public answers with goods one client IP may have built per window (cache misses). */
  publicBuilds: number;
}

export interface RedisConfig {
  /** REDIS_URL: several nodes share viewers' events and counts through it; unset = one process. */
  url?: string;
  /** REDIS_PREFIX: first part of every Redis channel and key of this deployment. */
  prefix: string;
  /** READY_REQUIRES_REDIS: a Redis that does not answer fails readiness (true) or is only reported (false). */
  requiredForReadiness: boolean;
}

export interface WebhookConfig {
  allowPrivateHosts: boolean;
  /** Host names and CIDR ranges reachable even when private. */
  allowedHosts: string[];
  timeoutMs: number;
  concurrency: number;
  /** WEBHOOK_ENDPOINT_CONCURRENCY, at most `concurrency`: sends one endpoint may hold on a node at once. */
  endpointConcurrency: number;
  /** WEBHOOK_CUSTOMER_CONCURRENCY, at most `concurrency`: sends one customer's endpoints may hold on a node at once. */
  customerConcurrency: number;
  pollMs: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  retryWindowMs: number;
  retentionDays: number;
}

export interface AuthConfig {
  /** TOKEN_MAX_TTL in seconds: a token's exp may be at most this far ahead (plus the clock skew). */
  tokenMaxTtlSeconds: number;
}

export interface IdempotencyConfig {
  /** IDEMPOTENCY_TTL: how long a key and its stored answer are kept. */
  ttlMs: number;
  /** IDEMPOTENCY_LEASE: how long a running request's hold on its key lasts without renewal. */
  leaseMs: number;
  /** IDEMPOTENCY_MAX_RESPONSE_BYTES: largest response body stored for replay. */
  maxResponseBytes: number;
}

/**
 * The validated, typed settings of the service, one section per area.
 * Built once at boot (and by the admin CLI) from the environment and `.env`.
 */
export class AppConfig {
  constructor(
    readonly dataDir: string,
    readonly server: ServerConfig,
    readonly database: DatabaseConfig,
    readonly media: MediaConfig,
    readonly limits: LimitsConfig,
    readonly importJobs: ImportJobsConfig,
    readonly redis: RedisConfig,
    readonly rateLimit: RateLimitConfig,
    readonly auth: AuthConfig,
    readonly idempotency: IdempotencyConfig,
    readonly webhooks: WebhookConfig,
  ) {}

  /** `fileLimit` reads the open-file limit MAX_CONNECTIONS is derived from when not set (tests pass their own). */
  static fromEnv(raw: Record<string, unknown>, fileLimit: () => number | undefined = openFileLimit): AppConfig {
    const env = validateEnv(raw);
    const dataDir = isAbsolute(env.DATA_DIR) ? env.DATA_DIR : resolve(process.cwd(), env.DATA_DIR);
    return new AppConfig(
      dataDir,
      {
        port: env.PORT,
        publicBaseUrl: env.PUBLIC_BASE_URL === undefined ? undefined : withoutTrailing(env.PUBLIC_BASE_URL, '/'),
        bodyLimit: env.BODY_LIMIT,
        syncBodyLimit: env.SYNC_BODY_LIMIT,
        proxyTrust: compileProxyTrust(env.TRUST_PROXY),
        logLevel: env.LOG_LEVEL,
        logFormat: resolveLogFormat(env.LOG_FORMAT),
        metricsToken: env.METRICS_TOKEN,
        corsOrigins: [
          ...new Set(
            env.CORS_ORIGINS.split(',')
              .map((o) => o.trim())
              .filter(Boolean)
              .map((o) => normalizeOrigin(o) as string),
          ),
        ],
        shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT * 1000,
        maxConnections: env.MAX_CONNECTIONS ?? maxConnectionsFor(fileLimit()),
        // Behind a reverse proxy every connection comes from the proxy: a per-address cap would cap all clients together.
        maxConnectionsPerIp: env.MAX_CONNECTIONS_PER_IP ?? (env.TRUST_PROXY !== false ? 0 : DEFAULT_MAX_CONNECTIONS_PER_IP),
        headersTimeoutMs: env.HEADERS_TIMEOUT_MS,
        requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
        sendTimeoutMs: env.SEND_TIMEOUT_MS,
        liveConnectTimeoutMs: env.LIVE_CONNECT_TIMEOUT_MS,
        liveSessionsPerIp: env.LIVE_SESSIONS_PER_IP,
      },
      {
        type: env.DB_TYPE,
        sqlitePath: resolve(dataDir, 'livegoods.sqlite'),
        host: env.DB_HOST,
        port: env.DB_PORT,
        username: env.DB_USER,
        password: env.DB_PASSWORD,
        database: env.DB_NAME,
        poolSize: env.DB_POOL_SIZE,
        logging: env.DB_LOGGING,
        connectTimeoutMs: env.DB_CONNECT_TIMEOUT_MS,
        queryTimeoutMs: env.DB_QUERY_TIMEOUT_MS,
        lockTimeoutMs: env.DB_LOCK_TIMEOUT_MS,
        transactionTimeoutMs: env.DB_TRANSACTION_TIMEOUT_MS,
        startupTimeoutMs: env.DB_STARTUP_TIMEOUT_MS,
      },
      {
        dir: resolve(dataDir, 'media'),
        allowPrivateHosts: env.MEDIA_ALLOW_PRIVATE_HOSTS,
        allowedHosts: env.MEDIA_ALLOWED_HOSTS.split(',')
          .map((h) => h.trim().toLowerCase())
          .filter(Boolean),
        maxBytes: env.MEDIA_MAX_BYTES,
        maxPixels: env.MEDIA_MAX_PIXELS,
        maxSide: env.MEDIA_MAX_SIDE,
        fetchTimeoutMs: env.MEDIA_FETCH_TIMEOUT_MS,
        fetchConcurrency: env.MEDIA_FETCH_CONCURRENCY,
        nodeConcurrency: env.MEDIA_NODE_CONCURRENCY,
        processConcurrency: env.MEDIA_PROCESS_CONCURRENCY,
        processTimeoutMs: env.MEDIA_PROCESS_TIMEOUT_MS,
        releaseDelayMs: env.MEDIA_RELEASE_DELAY_MS,
        sweepIntervalMs: env.MEDIA_SWEEP_INTERVAL_MS,
        sweepMinAgeMs: env.MEDIA_SWEEP_MIN_AGE_MS,
      },
      {
        syncMaxItems: env.SYNC_MAX_ITEMS,
        campaignMaxGoods: env.CAMPAIGN_MAX_GOODS,
        listMaxCount: 100,
        searchMemoryBytes: env.SEARCH_MEMORY_MB * 1024 * 1024,
        uploadMaxBytes: env.UPLOAD_MAX_BYTES,
        excelMaxRows: env.EXCEL_MAX_ROWS,
        excelMaxUncompressedBytes: env.EXCEL_MAX_UNCOMPRESSED_BYTES,
        excelParseTimeoutMs: env.EXCEL_PARSE_TIMEOUT_MS,
      },
      {
        dir: resolve(dataDir, 'imports'),
        maxBytes: env.IMPORT_JOB_MAX_BYTES,
        maxRows: env.IMPORT_JOB_MAX_ROWS,
        concurrency: env.IMPORT_JOB_CONCURRENCY,
        maxPendingPerCustomer: env.IMPORT_JOB_MAX_PENDING,
        chunkRows: env.IMPORT_JOB_CHUNK_ROWS,
        leaseMs: env.IMPORT_JOB_LEASE_MS,
        pollMs: env.IMPORT_JOB_POLL_MS,
        readTimeoutMs: env.IMPORT_JOB_READ_TIMEOUT_MS,
        keepPerCustomer: env.IMPORT_JOB_KEEP,
        maxAttempts: env.IMPORT_JOB_MAX_ATTEMPTS,
      },
      { url: env.REDIS_URL, prefix: env.REDIS_PREFIX, requiredForReadiness: env.READY_REQUIRES_REDIS },
      {
        enabled: env.RATE_LIMIT_ENABLED,
        windowMs: env.RATE_LIMIT_WINDOW_MS,
        ip: env.RATE_LIMIT_IP,
        customer: env.RATE_LIMIT_CUSTOMER,
        authFailures: env.RATE_LIMIT_AUTH_FAILURES,
        liveConnections: env.RATE_LIMIT_LIVE_CONNECTIONS,
        publicBuilds: env.RATE_LIMIT_PUBLIC_BUILDS,
      },
      { tokenMaxTtlSeconds: parseDuration(env.TOKEN_MAX_TTL) as number },
      {
        ttlMs: (parseDuration(env.IDEMPOTENCY_TTL) as number) * 1000,
        leaseMs: (parseDuration(env.IDEMPOTENCY_LEASE) as number) * 1000,
        maxResponseBytes: env.IDEMPOTENCY_MAX_RESPONSE_BYTES,
      },
      {
        allowPrivateHosts: env.WEBHOOK_ALLOW_PRIVATE_HOSTS,
        allowedHosts: env.WEBHOOK_ALLOWED_HOSTS.split(',')
          .map((h) => h.trim().toLowerCase())
          .filter(Boolean),
        timeoutMs: env.WEBHOOK_TIMEOUT_MS,
        concurrency: env.WEBHOOK_CONCURRENCY,
        endpointConcurrency: Math.min(env.WEBHOOK_ENDPOINT_CONCURRENCY, env.WEBHOOK_CONCURRENCY),
        customerConcurrency: Math.min(env.WEBHOOK_CUSTOMER_CONCURRENCY, env.WEBHOOK_CONCURRENCY),
        pollMs: env.WEBHOOK_POLL_MS,
        retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
        retryMaxDelayMs: env.WEBHOOK_RETRY_MAX_DELAY_MS,
        retryWindowMs: env.WEBHOOK_RETRY_WINDOW * 1000,
        retentionDays: env.WEBHOOK_RETENTION_DAYS,
      },
    );
  }

  /** Reads `.env` (without overriding real environment variables), then validates. */
  static load(): AppConfig {
    loadDotenv({ quiet: true });
    return AppConfig.fromEnv(process.env);
  }
}
