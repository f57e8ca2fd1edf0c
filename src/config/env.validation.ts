import { plainToInstance, Transform } from 'class-transformer';
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
  validateSync,
} from 'class-validator';

const toBool = ({ value }: { value: unknown }): unknown => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off', ''].includes(v)) return false;
  return value;
};

const toInt = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;

const emptyToUndefined = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;

/**
 * Every setting the service reads from the environment (or `.env`), with its default.
 * `.env.example` lists the same settings; keep the two in step.
 */
export class EnvironmentVariables {
  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 3000;

  @IsString() @MinLength(1)
  DATA_DIR = './data';

  @IsIn(['sqlite', 'mysql'], { message: 'DB_TYPE must be "sqlite" or "mysql"' })
  DB_TYPE: 'sqlite' | 'mysql' = 'sqlite';

  @IsString()
  DB_HOST = '127.0.0.1';

  @Transform(toInt) @IsInt() @Min(1) @Max(65535)
  DB_PORT = 3306;

  @IsString()
  DB_USER = 'root';

  @IsString()
  DB_PASSWORD = '';

  @IsString() @Matches(/^[A-Za-z0-9_$]{1,64}$/, { message: 'DB_NAME must be 1-64 letters, digits, _ or $' })
  DB_NAME = 'livegoods';

  @Transform(toInt) @IsInt() @Min(1) @Max(1000)
  DB_POOL_SIZE = 10;

  @Transform(toBool) @IsBoolean()
  DB_LOGGING = false;

  @Transform(emptyToUndefined) @IsOptional()
  @IsUrl({ protocols: ['redis', 'rediss'], require_tld: false, require_protocol: true })
  REDIS_URL?: string;

  /**
   * Prefix of every Redis channel and key this deployment uses (Socket.IO adapter, viewer counts), so
   * that two deployments sharing one Redis (whose pub/sub ignores the database number) never hear each
   * other's events.
   */
  @Matches(/^[A-Za-z0-9_.-]{1,64}$/, { message: 'REDIS_PREFIX must be 1-64 letters, digits, _ . or -' })
  REDIS_PREFIX = 'livegoods';

  @Transform(emptyToUndefined) @IsOptional()
  @IsUrl({ protocols: ['http', 'https'], require_tld: false, require_protocol: true })
  PUBLIC_BASE_URL?: string;

  @Transform(toBool) @IsBoolean()
  MEDIA_ALLOW_PRIVATE_HOSTS = false;

  /** Comma-separated host names and CIDR ranges the media fetcher may reach even though they are private. */
  @IsString()
  MEDIA_ALLOWED_HOSTS = '';

  @Transform(toInt) @IsInt() @Min(1024) @Max(1024 * 1024 * 1024)
  MEDIA_MAX_BYTES = 20 * 1024 * 1024;

  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000_000)
  MEDIA_MAX_PIXELS = 40_000_000;

  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  MEDIA_FETCH_TIMEOUT_MS = 15_000;

  @Transform(toInt) @IsInt() @Min(1) @Max(64)
  MEDIA_FETCH_CONCURRENCY = 4;

  @Transform(toInt) @IsInt() @Min(1) @Max(100000)
  SYNC_MAX_ITEMS = 10000;

  /** Largest file one multipart upload (spreadsheet import) may carry, in bytes. */
  @Transform(toInt) @IsInt() @Min(1024) @Max(1024 * 1024 * 1024)
  UPLOAD_MAX_BYTES = 20 * 1024 * 1024;

  @Transform(toInt) @IsInt() @Min(1) @Max(100000)
  EXCEL_MAX_ROWS = 10000;

  /** Most bytes an uploaded .xlsx may decompress to (zip-bomb guard). */
  @Transform(toInt) @IsInt() @Min(1024 * 1024) @Max(2 * 1024 * 1024 * 1024)
  EXCEL_MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024;

  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  EXCEL_PARSE_TIMEOUT_MS = 30_000;

  @Matches(/^\d+(b|kb|mb)$/i, { message: 'BODY_LIMIT must look like 512kb or 32mb' })
  BODY_LIMIT = '32mb';

  @Transform(toBool) @IsBoolean()
  TRUST_PROXY = false;

  @IsIn(['error', 'warn', 'log', 'debug', 'verbose'])
  LOG_LEVEL: 'error' | 'warn' | 'log' | 'debug' | 'verbose' = 'log';
}

export class ConfigValidationError extends Error {}

/** Hides a password in URL-like values (redis://user:secret@host) before they are printed. */
function maskCredentials(value: unknown): unknown {
  return typeof value === 'string' ? value.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@') : value;
}

/** Validates raw environment values; throws one error listing every bad setting. */
export function validateEnv(raw: Record<string, unknown>): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const picked: Record<string, unknown> = {};
  for (const key of [...known, 'REDIS_URL', 'PUBLIC_BASE_URL']) {
    if (raw[key] !== undefined) picked[key] = raw[key];
  }
  const env = plainToInstance(EnvironmentVariables, picked, { exposeDefaultValues: true });
  const errors = validateSync(env, { skipMissingProperties: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const value = e.property === 'DB_PASSWORD' ? '***' : JSON.stringify(maskCredentials(e.value));
      return `  - ${e.property}=${value}: ${Object.values(e.constraints ?? {}).join('; ')}`;
    });
    throw new ConfigValidationError(`Invalid configuration (environment or .env):\n${lines.join('\n')}`);
  }
  return env;
}
