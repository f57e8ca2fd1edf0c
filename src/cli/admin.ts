import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { sign } from 'jsonwebtoken';
import { ApiException } from '../common/errors/api.exception';
import { formatDuration, parseDuration } from '../common/util/duration';
import { AppConfig } from '../config/app-config';
import { ConfigValidationError } from '../config/env.validation';
import { CustomersService } from '../customers/customers.service';
import { Customer } from '../customers/entities/customer.entity';
import { openDataSource, resolveDataSourceOptions } from '../database/data-source-options';
import { Transactions } from '../database/transactions';
import { ENTITIES } from '../schema';
import { backupDataDir } from './backup';

const USAGE = `livegoods admin CLI (reads the same settings as the service: environment and .env)

  npm run admin -- customer create --name <name> [--currency KRW]
      Creates a customer; prints {"accessKey","secretKey","name","currency"} as JSON.
  npm run admin -- customer list
      Lists customers (access keys and names, no secrets) as JSON lines.
  npm run admin -- customer rotate-secret --access-key <accessKey> [--grace 24h]
      Gives the customer a new secret key; prints {"accessKey","secretKey","previousKeyValidUntil"}.
      Tokens signed with the old key are accepted until previousKeyValidUntil (--grace from now;
      --grace 0: not at all). Running nodes pick the new key up within 30 s.
  npm run admin -- token --access-key <accessKey> [--ttl 1h] [--name <operator>] [--sub <operatorId>]
      Prints an HS256 JWT signed with the customer's secret key, for trying the API.
      --ttl may not exceed TOKEN_MAX_TTL (default 30d).
  npm run admin -- backup --to <directory>
      Backs up DATA_DIR while the service runs, into a new directory: on SQLite a consistent copy of
      the database (<directory>/livegoods.sqlite), then the media files (<directory>/media; files
      already there, e.g. hardlinked from the previous backup with cp -al, are not copied again).
      Prints {"database","mediaCopied","mediaKept"}. On MySQL/MariaDB it copies the media files;
      back the database up with its own tools (mysqldump --single-transaction).
`;

/** "90s", "15m", "1h", "7d" or plain seconds; from 1 second to maxSeconds (TOKEN_MAX_TTL). */
export function parseTtl(text: string, maxSeconds: number): number {
  const seconds = parseDuration(text);
  if (seconds === undefined) throw new Error(`--ttl must look like 3600, 90s, 15m, 1h or 7d (got "${text}")`);
  if (seconds < 1) throw new Error('--ttl must be at least 1 second');
  if (seconds > maxSeconds) {
    throw new Error(`--ttl must be at most TOKEN_MAX_TTL (${formatDuration(maxSeconds)}): the service refuses tokens that live longer`);
  }
  return seconds;
}

/** --grace of rotate-secret: "24h", "90m", "0" or plain seconds; at most 366 days. */
export function parseGrace(text: string): number {
  const seconds = parseDuration(text);
  if (seconds === undefined) throw new Error(`--grace must look like 0, 3600, 90m, 24h or 7d (got "${text}")`);
  if (seconds > 366 * 86400) throw new Error('--grace must be at most 366 days');
  return seconds;
}

/** Signs a token the way a customer's backend would: HS256 with base64-decoded secretKey as key. */
export function mintToken(customer: Pick<Customer, 'accessKey' | 'secretKey'>, ttlSeconds: number, operator: { name?: string; sub?: string } = {}): string {
  const payload: Record<string, unknown> = { accessKey: customer.accessKey };
  if (operator.name) payload.name = operator.name;
  return sign(payload, Buffer.from(customer.secretKey, 'base64'), {
    algorithm: 'HS256',
    expiresIn: ttlSeconds,
    ...(operator.sub ? { subject: operator.sub } : {}),
  });
}

const STRING_OPTIONS = ['name', 'currency', 'access-key', 'ttl', 'grace', 'sub', 'to'] as const;

/**
 * `--option value` as `--option=value`, so that a value starting with "-" (an access key may, when it was
 * issued before keys were made to start with a letter or digit) is taken as the value, not as an option.
 */
export function joinOptionValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const option = /^--(.+)$/.exec(argv[i])?.[1];
    if (option && (STRING_OPTIONS as readonly string[]).includes(option) && i + 1 < argv.length) {
      out.push(`--${option}=${argv[i + 1]}`);
      i += 1;
    } else out.push(argv[i]);
  }
  return out;
}

async function main(argv: string[]): Promise<number> {
  const parsed = parseArgs({
    args: joinOptionValues(argv),
    allowPositionals: true,
    options: {
      ...Object.fromEntries(STRING_OPTIONS.map((o) => [o, { type: 'string' as const }])),
      help: { type: 'boolean', short: 'h' },
    },
  });
  const values = parsed.values as Partial<Record<(typeof STRING_OPTIONS)[number], string>> & { help?: boolean };
  const positionals = parsed.positionals;
  const command = positionals.join(' ');
  if (values.help || !command) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  if (!['customer create', 'customer list', 'customer rotate-secret', 'token', 'backup'].includes(command)) {
    process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  if (command === 'customer create' && !values.name) throw new Error('customer create needs --name <name>');
  if (command === 'token' && !values['access-key']) throw new Error('token needs --access-key <accessKey>');
  if (command === 'customer rotate-secret' && !values['access-key']) throw new Error('customer rotate-secret needs --access-key <accessKey>');
  const grace = command === 'customer rotate-secret' ? parseGrace(values.grace ?? '24h') : 0;

  if (command === 'backup' && !values.to) throw new Error('backup needs --to <directory>');

  const config = AppConfig.load();
  if (command === 'backup') {
    // The database as it is: a backup neither migrates it nor opens it through the service's layers.
    const result = backupDataDir(config, values.to as string);
    if (result.database === null) {
      process.stderr.write('the database is on MySQL/MariaDB: back it up with its own tools (mysqldump --single-transaction); the media files were copied\n');
    }
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  }
  const ttl = command === 'token' ? parseTtl(values.ttl ?? '1h', config.auth.tokenMaxTtlSeconds) : 0;
  // The CLI migrates as a start does: the migrations it applies are named on stderr (stdout stays the command's JSON).
  const dataSource = await openDataSource(await resolveDataSourceOptions(config, ENTITIES), undefined, (message) => process.stderr.write(`${message}\n`));
  try {
    const customers = new CustomersService(new Transactions(dataSource, config));
    if (command === 'customer create') {
      const c = await customers.create(values.name as string, values.currency ?? 'KRW');
      process.stdout.write(`${JSON.stringify({ accessKey: c.accessKey, secretKey: c.secretKey, name: c.name, currency: c.currency })}\n`);
    } else if (command === 'customer list') {
      for (const c of await customers.list()) {
        process.stdout.write(`${JSON.stringify({ accessKey: c.accessKey, name: c.name, currency: c.currency })}\n`);
      }
    } else if (command === 'customer rotate-secret') {
      const c = await customers.rotateSecret(values['access-key'] as string, grace);
      if (!c) throw new Error(`no customer with access key ${values['access-key']}`);
      const previousKeyValidUntil = c.previousKeyValidUntil?.toISOString() ?? null;
      process.stdout.write(`${JSON.stringify({ accessKey: c.accessKey, secretKey: c.secretKey, previousKeyValidUntil })}\n`);
    } else {
      const customer = await customers.findByAccessKey(values['access-key'] as string);
      if (!customer) throw new Error(`no customer with access key ${values['access-key']}`);
      process.stdout.write(`${mintToken(customer, ttl, { name: values.name, sub: values.sub })}\n`);
    }
    return 0;
  } finally {
    await dataSource.destroy();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      const message = err instanceof ConfigValidationError || err instanceof ApiException || err instanceof Error ? err.message : String(err);
      process.stderr.write(`error: ${message}\n`);
      process.exit(1);
    },
  );
}
