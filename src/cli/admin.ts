import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { sign } from 'jsonwebtoken';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { ConfigValidationError } from '../config/env.validation';
import { CustomersService } from '../customers/customers.service';
import { Customer } from '../customers/entities/customer.entity';
import { openDataSource, resolveDataSourceOptions } from '../database/data-source-options';

const USAGE = `livegoods admin CLI (reads the same settings as the service: environment and .env)

  npm run admin -- customer create --name <name> [--currency KRW]
      Creates a customer; prints {"accessKey","secretKey","name","currency"} as JSON.
  npm run admin -- customer list
      Lists customers (access keys and names, no secrets) as JSON lines.
  npm run admin -- token --access-key <accessKey> [--ttl 1h] [--name <operator>] [--sub <operatorId>]
      Prints an HS256 JWT signed with the customer's secret key, for trying the API.
`;

/** "90s", "15m", "1h", "7d" or plain seconds. */
export function parseTtl(text: string): number {
  const match = /^(\d+)\s*([smhd]?)$/i.exec(text.trim());
  if (!match) throw new Error(`--ttl must look like 3600, 90s, 15m, 1h or 7d (got "${text}")`);
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2].toLowerCase() as '' | 's' | 'm' | 'h' | 'd'];
  const seconds = Number(match[1]) * unit;
  if (seconds < 1 || seconds > 366 * 86400) throw new Error('--ttl must be between 1 second and 366 days');
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

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      currency: { type: 'string' },
      'access-key': { type: 'string' },
      ttl: { type: 'string' },
      sub: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals.join(' ');
  if (values.help || !command) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  if (!['customer create', 'customer list', 'token'].includes(command)) {
    process.stderr.write(`unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  if (command === 'customer create' && !values.name) throw new Error('customer create needs --name <name>');
  if (command === 'token' && !values['access-key']) throw new Error('token needs --access-key <accessKey>');
  const ttl = command === 'token' ? parseTtl(values.ttl ?? '1h') : 0;

  const config = AppConfig.load();
  const dataSource = await openDataSource(await resolveDataSourceOptions(config));
  try {
    const customers = new CustomersService(dataSource.getRepository(Customer));
    if (command === 'customer create') {
      const c = await customers.create(values.name as string, values.currency ?? 'KRW');
      process.stdout.write(`${JSON.stringify({ accessKey: c.accessKey, secretKey: c.secretKey, name: c.name, currency: c.currency })}\n`);
    } else if (command === 'customer list') {
      for (const c of await customers.list()) {
        process.stdout.write(`${JSON.stringify({ accessKey: c.accessKey, name: c.name, currency: c.currency })}\n`);
      }
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
