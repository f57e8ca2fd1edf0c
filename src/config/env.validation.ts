import { plainToInstance, Transform } from 'class-transformer';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  registerDecorator,
  ValidateBy,
  ValidationArguments,
  validateSync,
} from 'class-validator';
import { formatDuration, parseDuration } from '../common/util/duration';
import { parseProxyTrust, ProxyTrustSetting } from '../common/util/proxy-trust';
import { HOST_NAME } from '../common/util/host-name';
import { redactCredentials } from '../common/util/redact';

const toBool = ({ value }: { value: unknown }): unknown => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off', ''].includes(v)) return false;
  return value;
};

const toInt = ({ value }: { value: unknown }): unknown => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value);

const emptyToUndefined = ({ value }: { value: unknown }): unknown => (typeof value === 'string' && value.trim() === '' ? undefined : value);

/** An integer, or undefined when empty (the setting then takes a derived default). */
const toOptionalInt = ({ value }: { value: unknown }): unknown => toInt({ value: emptyToUndefined({ value }) });

/** A duration (plain seconds, or with a unit: 90s, 15m, 12h, 30d) between min and max seconds. */
function IsDuration(min: number, max: number): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name: 'isDuration',
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => {
          const seconds = typeof value === 'string' ? parseDuration(value) : undefined;
          return seconds !== undefined && seconds >= min && seconds <= max;
        },
        defaultMessage: () =>
          `${String(key)} must be a duration such as 3600 (seconds), 3600s, 12h or 30d, from ${formatDuration(min)} to ${formatDuration(max)}`,
      },
    });
}

/**
 * A CORS origin as browsers send it (`scheme://host[:port]`, lowercase, default port dropped), or
 * undefined when the text is not exactly one: a path, query, credentials or a wildcard are refused.
 */
export function normalizeOrigin(text: string): string | undefined {
  if (text.includes('*')) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password || url.search || url.hash || url.pathname !== '/') return undefined;
  if (text.replace(/\/$/, '').split('/').length !== 3) return undefined;
  return url.origin;
}

/** The entries of a comma-separated setting, trimmed, empty ones left out. */
function listEntries(value: unknown): string[] {
  return typeof value === 'string'
    ? value
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean)
    : [];
}

/** A comma-separated setting (empty allowed) whose every entry `accepts`; the message names the entries refused. */
function IsCommaList(name: string, accepts: (entry: string) => boolean, expected: string): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: key as string,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && listEntries(value).every(accepts),
        defaultMessage: (args?: ValidationArguments) => {
          const refused = listEntries(args?.value).filter((e) => !accepts(e));
          return `${String(key)} must be ${expected}${refused.length ? `; not: ${refused.map((e) => `'${e}'`).join(', ')}` : ''}`;
        },
      },
    });
}

/** CORS_ORIGINS: empty, or comma-separated origins each of which normalizeOrigin accepts. */
const IsCorsOrigins = () =>
  IsCommaList(
    'isCorsOrigins',
    (o) => normalizeOrigin(o) !== undefined,
    'comma-separated origins such as https://shop.example or http://localhost:8080 (no paths, no wildcards)',
  );

/** One entry of an allowed-hosts list: a CIDR range, an IP address (IPv6 also in brackets) or a host name. */
export function isHostListEntry(entry: string): boolean {
  if (entry.includes('/')) {
    try {
      ipaddr.parseCIDR(entry);
      return true;
    } catch {
      return false;
    }
  }
  return isIP(entry.replace(/^\[(.*)\]$/, '$1')) !== 0 || HOST_NAME.test(entry);
}

/** MEDIA_ALLOWED_HOSTS, WEBHOOK_ALLOWED_HOSTS: empty, or comma-separated entries isHostListEntry accepts. */
const IsHostList = () =>
  IsCommaList('isHostList', isHostListEntry, 'comma-separated host names, IP addresses and CIDR ranges (such as images.internal, 10.0.0.7, 10.20.0.0/16)');

/** The highest CAMPAIGN_MAX_GOODS may be set to (the reorder body's list takes as many ids). */
export const CAMPAIGN_MAX_GOODS_CEILING = 10_000;

/**
 * Every setting the service reads from the environment (or `.env`), with its default.
 * `.env.example` lists the same settings; keep the two in step.
 */
export class EnvironmentVariables {
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  @MinLength(1)
  DATA_DIR = './data';

  @IsIn(['sqlite', 'mysql'], { message: 'DB_TYPE must be "sqlite" or "mysql"' })
  DB_TYPE: 'sqlite' | 'mysql' = 'sqlite';

  @IsString()
  DB_HOST = '127.0.0.1';

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(65535)
  DB_PORT = 3306;

  @IsString()
  DB_USER = 'root';

  @IsString()
  DB_PASSWORD = '';

  @IsString()
  @Matches(/^[A-Za-z0-9_$]{1,64}$/, { message: 'DB_NAME must be 1-64 letters, digits, _ or $' })
  DB_NAME = 'livegoods';

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  DB_POOL_SIZE = 10;

  @Transform(toBool)
  @IsBoolean()
  DB_LOGGING = false;

  /** MySQL: longest wait for a new connection to open. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  DB_CONNECT_TIMEOUT_MS = 5000;

  /** MySQL: longest one statement may run (enforced by the client, and by MariaDB itself) before it fails with 503. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  DB_QUERY_TIMEOUT_MS = 10_000;

  /** MySQL: longest a statement waits for a row lock another transaction holds (innodb_lock_wait_timeout, whole seconds). */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  DB_LOCK_TIMEOUT_MS = 5000;

  /** MySQL: longest a write transaction may stay open; past it the transaction is rolled back and its connection closed. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  DB_TRANSACTION_TIMEOUT_MS = 30_000;

  /** How long start-up keeps retrying (with backoff) while the database does not answer; 0 = fail at once. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DB_STARTUP_TIMEOUT_MS = 60_000;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsUrl({ protocols: ['redis', 'rediss'], require_tld: false, require_protocol: true })
  REDIS_URL?: string;

  /**
   * Prefix of every Redis channel and key this deployment uses (Socket.IO adapter, viewer counts), so
   * that two deployments sharing one Redis (whose pub/sub ignores the database number) never hear each
   * other's events.
   */
  @Matches(/^[A-Za-z0-9_.-]{1,64}$/, { message: 'REDIS_PREFIX must be 1-64 letters, digits, _ . or -' })
  REDIS_PREFIX = 'livegoods';

  /**
   * Whether a Redis that does not answer makes `/health/ready` answer 503 (true, the default), or is only
   * reported there (false): a node keeps serving without Redis, and a load balancer that drops nodes which
   * are not ready would otherwise drop every node at once while Redis is away.
   */
  @Transform(toBool)
  @IsBoolean()
  READY_REQUIRES_REDIS = true;

  @Transform(emptyToUndefined)
  @IsOptional()
  @IsUrl({ protocols: ['http', 'https'], require_tld: false, require_protocol: true })
  // Links are the base followed by a path (`…/media/…`): a query, a fragment or credentials would end up in the middle of each.
  @Matches(/^[a-z][a-z0-9+.-]*:\/\/[^/?#@]+(\/[^?#]*)?$/i, {
    message:
      'PUBLIC_BASE_URL must be an http(s) address with an optional path, such as https://live.example.com or https://example.com/live: no query, fragment or user name',
  })
  PUBLIC_BASE_URL?: string;

  @Transform(toBool)
  @IsBoolean()
  MEDIA_ALLOW_PRIVATE_HOSTS = false;

  /** Comma-separated host names and CIDR ranges the media fetcher may reach even though they are private. */
  @IsHostList()
  MEDIA_ALLOWED_HOSTS = '';

  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(1024 * 1024 * 1024)
  MEDIA_MAX_BYTES = 20 * 1024 * 1024;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  MEDIA_MAX_PIXELS = 40_000_000;

  /**
   * Largest width or height of an image, in pixels, checked from its header before decoding: an image of
   * 10,000,000 x 4 pixels is under MEDIA_MAX_PIXELS but took 12 s and 3.5 GB to make its thumbnails.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MEDIA_MAX_SIDE = 16_384;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  MEDIA_FETCH_TIMEOUT_MS = 15_000;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  MEDIA_FETCH_CONCURRENCY = 4;

  /**
   * Images fetched and processed at once by this process, all requests together (one customer holds at
   * most MEDIA_FETCH_CONCURRENCY of them); the others wait their turn, fairly between customers.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  MEDIA_NODE_CONCURRENCY = 8;

  /**
   * Images decoded at once by this process, all requests together (each decode holds a thread of libuv's
   * pool, which file reads, DNS and compression share): must stay below UV_THREADPOOL_SIZE (4 by default).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  MEDIA_PROCESS_CONCURRENCY = 2;

  /** Deadline for one image's turn and decoding together; past it the item is saved without the image. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(600_000)
  MEDIA_PROCESS_TIMEOUT_MS = 10_000;

  /**
   * How long the files of an image nothing refers to any more are kept before they are deleted (if still
   * unused then). Identical images are stored once for every customer, and a write that is about to reuse
   * them (it checked they exist, its transaction has not committed yet) must not lose them to another
   * customer's delete meanwhile, on this node or another. 0 deletes at once.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  MEDIA_RELEASE_DELAY_MS = 600_000;

  /**
   * How often each node walks the media files for images nothing refers to that the delayed release did
   * not remove (a node killed outright, a write killed between storing its images and committing), and
   * files left half-written. 0: never.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(604_800_000)
  MEDIA_SWEEP_INTERVAL_MS = 21_600_000;

  /**
   * How long a file must have gone unwritten and unreused before the sweep may remove it (if no item uses
   * its image then): longer than any write takes between storing its images and committing its goods.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(2_592_000_000)
  MEDIA_SWEEP_MIN_AGE_MS = 86_400_000;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100000)
  SYNC_MAX_ITEMS = 10000;

  /**
   * Most goods one campaign may hold. Every read or change of a campaign loads and serialises all of
   * them (SQLite on the event loop), so this bounds the longest such stall; adding goods past it is 413.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(CAMPAIGN_MAX_GOODS_CEILING)
  CAMPAIGN_MAX_GOODS = 1000;

  /** Memory for the in-memory keyword search corpora of all customers together, in MB (0: always scan). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65536)
  SEARCH_MEMORY_MB = 512;

  /** Largest file a spreadsheet import without async=true may carry, in bytes (larger: 413, never a job). */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(1024 * 1024 * 1024)
  UPLOAD_MAX_BYTES = 20 * 1024 * 1024;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100000)
  EXCEL_MAX_ROWS = 10000;

  /** Most bytes an uploaded .xlsx may decompress to (zip-bomb guard). */
  @Transform(toInt)
  @IsInt()
  @Min(1024 * 1024)
  @Max(2 * 1024 * 1024 * 1024)
  EXCEL_MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024;

  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  EXCEL_PARSE_TIMEOUT_MS = 30_000;

  /** Largest file a spreadsheet import job (async=true) may carry, in bytes. */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(4 * 1024 * 1024 * 1024)
  IMPORT_JOB_MAX_BYTES = 100 * 1024 * 1024;

  /** Most data rows of a spreadsheet import job (an .xlsx with more rows holding values is refused at upload). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(5_000_000)
  IMPORT_JOB_MAX_ROWS = 200_000;

  /** Import jobs one process runs at once (across all customers). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(16)
  IMPORT_JOB_CONCURRENCY = 1;

  /** Jobs one customer may have queued or running at once (a further upload is 429). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  IMPORT_JOB_MAX_PENDING = 5;

  /** Rows applied (and their progress committed) per transaction of a job. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(10_000)
  IMPORT_JOB_CHUNK_ROWS = 1000;

  /** How long a node's claim on a running job lasts without renewal (a crashed node's job is resumed after it). */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  IMPORT_JOB_LEASE_MS = 30_000;

  /** How often an idle node looks for queued jobs (ms). */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(60_000)
  IMPORT_JOB_POLL_MS = 1000;

  /** Longest one job may take to read its file (each pass: the check before the first write, then the rows), in ms. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(24 * 3_600_000)
  IMPORT_JOB_READ_TIMEOUT_MS = 3_600_000;

  /**
   * Runs of an import job that may end without a trace (the node died, or lost the database) before the
   * job gets further; the next claim then fails it instead of running it again (no crash loop).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  IMPORT_JOB_MAX_ATTEMPTS = 3;

  /** Finished jobs (with their per-row results) kept per customer; older ones are deleted. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  IMPORT_JOB_KEEP = 20;

  /** Largest JSON/form body of every route but sync (one goods item, a campaign, a chat line, a reorder). */
  @Matches(/^\d+(b|kb|mb)$/i, { message: 'BODY_LIMIT must look like 512kb or 1mb' })
  BODY_LIMIT = '1mb';

  /** Largest JSON body of POST /v1/goods/{accessKey}/sync. */
  @Matches(/^\d+(b|kb|mb)$/i, { message: 'SYNC_BODY_LIMIT must look like 512kb or 32mb' })
  SYNC_BODY_LIMIT = '32mb';

  /**
   * Reverse proxies in front of the service whose X-Forwarded-* headers are believed: `false` (none),
   * `true` (one: the client is the address it appended last), a number of proxies in a row (1 to 10), or
   * their addresses, CIDR ranges and `loopback` / `linklocal` / `uniquelocal`, comma-separated.
   */
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? (parseProxyTrust(value) ?? value) : value))
  @ValidateBy({
    name: 'isProxyTrust',
    validator: {
      validate: (value: unknown) => value === false || typeof value === 'number' || Array.isArray(value),
      defaultMessage: () =>
        'TRUST_PROXY must be true or false, a number of proxies in front (1 to 10), or comma-separated proxy addresses and CIDR ranges (such as 10.0.0.0/8, loopback)',
    },
  })
  TRUST_PROXY: ProxyTrustSetting = false;

  /**
   * Longest a customer token may live: its `exp` may be at most this far ahead (plus the 60 s clock
   * skew). Also the longest `--ttl` the admin CLI's token command mints.
   */
  @IsDuration(60, 366 * 86400)
  TOKEN_MAX_TTL = '30d';

  @IsIn(['error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL: 'error' | 'warn' | 'log' | 'debug' | 'verbose' = 'log';

  /** `json` (one JSON object a line), `text` (for a person) or `auto`: text on a terminal, JSON otherwise. */
  @IsIn(['auto', 'json', 'text'], { message: 'LOG_FORMAT must be "auto", "json" or "text"' })
  LOG_FORMAT: 'auto' | 'json' | 'text' = 'auto';

  /** When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`; unset, it is open. */
  @Transform(emptyToUndefined)
  @IsOptional()
  @IsString()
  @Matches(/^[\x21-\x7e]{16,256}$/, { message: 'METRICS_TOKEN must be 16-256 printable characters without blanks' })
  METRICS_TOKEN?: string;

  /**
   * Comma-separated origins (`https://shop.example`) whose pages may call the authenticated API from a
   * browser. The public read endpoints and /media answer every origin whatever this says.
   */
  @IsCorsOrigins()
  CORS_ORIGINS = '';

  /**
   * Most connections the node holds open at once (HTTP and WebSocket together); a new one past it is
   * closed at once. Empty: derived from the process's open-file limit (see maxConnectionsFor).
   */
  @Transform(toOptionalInt)
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  MAX_CONNECTIONS?: number = undefined;

  /**
   * Most connections one client address may hold open at once; 0 = no limit. Empty: 1000, or 0 with
   * TRUST_PROXY (every connection then comes from the proxy's address).
   */
  @Transform(toOptionalInt)
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  MAX_CONNECTIONS_PER_IP?: number = undefined;

  /** Longest a client may take to send a request's headers (a connection that sends nothing, or half a header, is closed then). */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(300_000)
  HEADERS_TIMEOUT_MS = 10_000;

  /** Longest a client may take to send a whole request, body included (uploads); 0 = no limit; else at least HEADERS_TIMEOUT_MS. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  REQUEST_TIMEOUT_MS = 600_000;

  /** Longest an answer may wait for its client to take any of its bytes (a client that stops reading); 0 = no limit; else at least 1000. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  SEND_TIMEOUT_MS = 60_000;

  /** Longest a Socket.IO connection may stay open without joining /live. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(300_000)
  LIVE_CONNECT_TIMEOUT_MS = 10_000;

  /**
   * Most Socket.IO sessions (Engine.IO handshakes, long-polling or WebSocket, joined to /live or not yet)
   * one client address may hold open on the node; a handshake past it is refused (429). 0 = no limit.
   * Counted by the forwarded address behind a trusted proxy, so it holds with TRUST_PROXY too.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  LIVE_SESSIONS_PER_IP = 1000;

  /** On SIGTERM/SIGINT: longest wait, in seconds, for accepted requests to finish before closing anyway. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3600)
  SHUTDOWN_TIMEOUT = 25;

  /**
   * How long an Idempotency-Key is remembered after its request: a retry with the same key within this
   * time gets the stored answer; after it, the key is forgotten (swept) and may run again.
   */
  @IsDuration(60, 30 * 86400)
  IDEMPOTENCY_TTL = '24h';

  /**
   * How long a request that holds an Idempotency-Key may go without renewing its hold (it renews every
   * third of this while it runs). A node that dies mid-request frees its keys after this time.
   */
  @IsDuration(5, 3600)
  IDEMPOTENCY_LEASE = '60s';

  /**
   * Largest response (bytes, before compression) stored for an Idempotency-Key; a larger one is not
   * replayed (a retry is answered 409) and never applied twice.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1024)
  @Max(256 * 1024 * 1024)
  IDEMPOTENCY_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

  /** Rate limits on or off (off only for benchmarks and closed test setups). */
  @Transform(toBool)
  @IsBoolean()
  RATE_LIMIT_ENABLED = true;

  /** The window every rate limit below counts in, in milliseconds. */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  RATE_LIMIT_WINDOW_MS = 10_000;

  /** Requests per window from one client IP, on every route (public ones included). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  RATE_LIMIT_IP = 1000;

  /** Authenticated requests per window for one customer (all its clients together). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  RATE_LIMIT_CUSTOMER = 3000;

  /** Refused authentications (401) per window from one client IP; past it that IP gets 429 until the window ends. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  RATE_LIMIT_AUTH_FAILURES = 50;

  /** New viewer-channel (Socket.IO /live) connections per window from one client IP. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  RATE_LIMIT_LIVE_CONNECTIONS = 300;

  /**
   * Public answers with goods (a list with detail=true, one campaign, upcoming) that one client IP may
   * have built per window, when no kept answer serves it (each new query value is a new answer): past
   * it, that IP's requests that need a build are 429 until the window ends; kept answers still serve it.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  RATE_LIMIT_PUBLIC_BUILDS = 30;
  /**
   * Webhook targets may be private, loopback or link-local addresses, and may use plain http (tests,
   * closed networks). Off: https only, globally routable addresses only (the media fetcher's rules).
   */
  @Transform(toBool)
  @IsBoolean()
  WEBHOOK_ALLOW_PRIVATE_HOSTS = false;

  /** Comma-separated host names and CIDR ranges webhook targets may resolve to even though they are private (still https only). */
  @IsHostList()
  WEBHOOK_ALLOWED_HOSTS = '';

  /** Longest wait, in milliseconds, for a receiver's answer (connecting included); past it the try counts as failed. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60_000)
  WEBHOOK_TIMEOUT_MS = 10_000;

  /** Deliveries one node sends at the same time. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  WEBHOOK_CONCURRENCY = 16;

  /** Most of a node's sends one endpoint may hold at the same time (at most WEBHOOK_CONCURRENCY). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  WEBHOOK_ENDPOINT_CONCURRENCY = 2;

  /** Most of a node's sends the endpoints of one customer may hold at the same time (at most WEBHOOK_CONCURRENCY). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  WEBHOOK_CUSTOMER_CONCURRENCY = 4;

  /** How often, in milliseconds, each node looks for due deliveries (it also looks right after its own commits). */
  @Transform(toInt)
  @IsInt()
  @Min(50)
  @Max(60_000)
  WEBHOOK_POLL_MS = 1000;

  /** First retry delay in milliseconds; each further one doubles (with jitter), up to WEBHOOK_RETRY_MAX_DELAY_MS. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  WEBHOOK_RETRY_BASE_MS = 30_000;

  /** Longest delay between two tries, in milliseconds. */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(86_400_000)
  WEBHOOK_RETRY_MAX_DELAY_MS = 3_600_000;

  /** How long after the event a delivery is still retried, in seconds; then it is marked failed. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(7 * 86_400)
  WEBHOOK_RETRY_WINDOW = 86_400;

  /** Days delivered and failed deliveries stay in the delivery log before they are deleted. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(365)
  WEBHOOK_RETENTION_DAYS = 7;
}

export class ConfigValidationError extends Error {}

/** The size of libuv's thread pool as Node reads UV_THREADPOOL_SIZE: 4 unless set to 1-1024. */
export function threadPoolSize(value: unknown): number {
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  return n >= 1 ? Math.min(n, 1024) : 4;
}

/** Hides the credentials of URL-like values (redis://user:secret@host) before they are printed. */
function maskCredentials(value: unknown): unknown {
  return typeof value === 'string' ? redactCredentials(value) : value;
}

/** Constraints on a value's kind: when one fails, the range checks beside it say nothing useful (NaN is "too large" and "too small"). */
const KIND_CONSTRAINTS = ['isInt', 'isNumber', 'isBoolean', 'isString'];

/** What is wrong with one setting: its kind alone when that is wrong, else every constraint it breaks. */
function refusalsOf(constraints: Record<string, string>): string {
  const kind = KIND_CONSTRAINTS.filter((name) => name in constraints).map((name) => constraints[name]);
  return (kind.length > 0 ? kind : Object.values(constraints)).join('; ');
}

/** Beginnings of this service's settings: a variable that starts like one but is none is most likely a typo. */
const SETTING_PREFIXES = [
  'DB_',
  'REDIS_',
  'MEDIA_',
  'WEBHOOK_',
  'RATE_LIMIT_',
  'LIVE_',
  'IMPORT_',
  'SEARCH_',
  'SYNC_',
  'CAMPAIGN_',
  'UPLOAD_',
  'METRICS_',
  'CORS_',
  'TOKEN_',
  'TRUST_',
  'MAX_CONNECTIONS',
  'READY_',
  'PUBLIC_BASE',
  'SHUTDOWN_',
  'LOG_',
];

/** Edit distance between two names (for "did you mean"). */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const next = [i];
    for (let j = 1; j <= b.length; j += 1) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}

/**
 * Variables that look like settings of this service but are none of them (`DB_PASWORD`, `MEDIA_MAX_BYTE`),
 * each with the setting it most likely means: a setting misspelt would otherwise keep its default without
 * a word. Only names with a setting's beginning are looked at: the environment holds many other variables.
 */
export function unknownSettings(raw: Record<string, unknown>): string[] {
  const known = [...Object.keys(new EnvironmentVariables()), 'REDIS_URL', 'PUBLIC_BASE_URL', 'METRICS_TOKEN'];
  const out: string[] = [];
  for (const key of Object.keys(raw).sort()) {
    if (known.includes(key) || !SETTING_PREFIXES.some((prefix) => key.startsWith(prefix))) continue;
    const closest = known.map((name) => ({ name, d: distance(key, name) })).sort((x, y) => x.d - y.d)[0];
    out.push(closest && closest.d <= 3 ? `${key} is not a setting (did you mean ${closest.name}?)` : `${key} is not a setting`);
  }
  return out;
}

/** Validates raw environment values; throws one error listing every bad setting. */
export function validateEnv(raw: Record<string, unknown>): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const picked: Record<string, unknown> = {};
  for (const key of [...known, 'REDIS_URL', 'PUBLIC_BASE_URL', 'METRICS_TOKEN']) {
    if (raw[key] !== undefined) picked[key] = raw[key];
  }
  const env = plainToInstance(EnvironmentVariables, picked, { exposeDefaultValues: true });
  const errors = validateSync(env, { skipMissingProperties: false });
  const lines = errors.map((e) => {
    const value = e.property === 'DB_PASSWORD' || e.property === 'METRICS_TOKEN' ? '***' : JSON.stringify(maskCredentials(e.value));
    return `  - ${e.property}=${value}: ${refusalsOf(e.constraints ?? {})}`;
  });
  // Node refuses a request deadline shorter than the headers' one; each alone is checked above.
  const timeoutsValid = !errors.some((e) => e.property === 'REQUEST_TIMEOUT_MS' || e.property === 'HEADERS_TIMEOUT_MS');
  if (timeoutsValid && env.REQUEST_TIMEOUT_MS !== 0 && env.REQUEST_TIMEOUT_MS < env.HEADERS_TIMEOUT_MS) {
    lines.push(
      `  - REQUEST_TIMEOUT_MS=${env.REQUEST_TIMEOUT_MS}: REQUEST_TIMEOUT_MS must be 0 (no limit) or at least HEADERS_TIMEOUT_MS (${env.HEADERS_TIMEOUT_MS})`,
    );
  }
  if (!errors.some((e) => e.property === 'SEND_TIMEOUT_MS') && env.SEND_TIMEOUT_MS !== 0 && env.SEND_TIMEOUT_MS < 1000) {
    lines.push(`  - SEND_TIMEOUT_MS=${env.SEND_TIMEOUT_MS}: SEND_TIMEOUT_MS must be 0 (no limit) or at least 1000`);
  }
  // Image decodes hold threads of libuv's pool: at least one must stay free for files, DNS and zlib.
  const threads = threadPoolSize(raw.UV_THREADPOOL_SIZE);
  if (!errors.some((e) => e.property === 'MEDIA_PROCESS_CONCURRENCY') && env.MEDIA_PROCESS_CONCURRENCY >= threads) {
    lines.push(
      `  - MEDIA_PROCESS_CONCURRENCY=${env.MEDIA_PROCESS_CONCURRENCY}: MEDIA_PROCESS_CONCURRENCY must be below the libuv thread pool size ` +
        `(UV_THREADPOOL_SIZE, ${threads}), so that file reads and DNS always have a thread`,
    );
  }
  if (!errors.some((e) => e.property === 'MEDIA_SWEEP_INTERVAL_MS') && env.MEDIA_SWEEP_INTERVAL_MS !== 0 && env.MEDIA_SWEEP_INTERVAL_MS < 1000) {
    lines.push(`  - MEDIA_SWEEP_INTERVAL_MS=${env.MEDIA_SWEEP_INTERVAL_MS}: MEDIA_SWEEP_INTERVAL_MS must be 0 (never) or at least 1000`);
  }
  // The sweep must not take files the delayed release still keeps (and serves) on another node.
  const sweepAgeValid = !errors.some((e) => e.property === 'MEDIA_SWEEP_MIN_AGE_MS' || e.property === 'MEDIA_RELEASE_DELAY_MS');
  if (sweepAgeValid && env.MEDIA_SWEEP_MIN_AGE_MS < env.MEDIA_RELEASE_DELAY_MS) {
    lines.push(
      `  - MEDIA_SWEEP_MIN_AGE_MS=${env.MEDIA_SWEEP_MIN_AGE_MS}: MEDIA_SWEEP_MIN_AGE_MS must be at least MEDIA_RELEASE_DELAY_MS (${env.MEDIA_RELEASE_DELAY_MS})`,
    );
  }
  if (lines.length > 0) {
    // A misspelt setting may be why another looks wrong: its warning would come after this error, never.
    const unknown = unknownSettings(raw).map((line) => `  - ${line}: it is ignored`);
    throw new ConfigValidationError(
      `Invalid configuration (environment or .env):\n${lines.join('\n')}${unknown.length ? `\nAlso:\n${unknown.join('\n')}` : ''}`,
    );
  }
  return env;
}
