import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api.exception';
import { lockRow, sameKey } from '../database/engine';
import { Transactions } from '../database/transactions';
import { Customer } from './entities/customer.entity';

/**
 * How long a node keeps a customer row (keys included). A secret-key rotation made elsewhere (the
 * admin CLI, another node) reaches this node within that time.
 */
export const CACHE_TTL_MS = 30_000;

/**
 * A new access key: 24 url-safe characters (18 random bytes), starting with a letter or a digit, so that
 * no command line takes it for an option (`--access-key -x…` would be "ambiguous").
 */
export function newAccessKey(): string {
  for (;;) {
    const key = randomBytes(18).toString('base64url');
    if (/^[A-Za-z0-9]/.test(key)) return key;
  }
}
/** The ISO 4217 codes Node's ICU knows (every active currency); three capital letters where it lists none. */
const CURRENCIES: ReadonlySet<string> | null = typeof Intl.supportedValuesOf === 'function' ? new Set(Intl.supportedValuesOf('currency')) : null;
const isCurrency = (code: string) => (CURRENCIES?.size ? CURRENCIES.has(code) : /^[A-Z]{3}$/.test(code));

/** Customers (tenants): creation by the admin CLI, look-up by access key for authentication. */
@Injectable()
export class CustomersService {
  private readonly cache = new Map<string, { customer: Customer | null; until: number }>();

  constructor(private readonly db: Transactions) {}

  async create(name: string, currency = 'KRW'): Promise<Customer> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 255) throw ApiException.invalid('name must be 1 to 255 characters');
    const code = currency.trim().toUpperCase();
    if (!isCurrency(code)) throw ApiException.invalid(`currency must be an ISO 4217 code such as KRW or USD (${code.slice(0, 20)} is none)`);
    const now = new Date();
    const customer = Object.assign(new Customer(), {
      accessKey: newAccessKey(),
      secretKey: randomBytes(32).toString('base64'),
      previousSecretKey: null,
      previousKeyValidUntil: null,
      name: trimmed,
      currency: code,
      createdAt: now,
      updatedAt: now,
    });
    await this.db.run(async (em) => {
      const inserted = await em.insert(Customer, { ...customer, catalogVersion: 0 });
      customer.id = Number(inserted.identifiers[0]?.id);
    });
    customer.catalogVersion = 0;
    return customer;
  }

  /**
   * Replaces the customer's secret key. For `graceSeconds` the previous one still verifies tokens
   * (previousKeyValidUntil); with 0 it stops at once, but is kept, so that a token signed with it is told
   * so ("signed with the previous secret key") rather than taken for a forgery. A rotation replaces the
   * previous key: only the key just replaced is known. Null when the access key is unknown.
   */
  async rotateSecret(accessKey: string, graceSeconds: number): Promise<Customer | null> {
    const rotated = await this.db.run(async (em) => {
      const found = await em.findOne(Customer, { select: { id: true, accessKey: true }, where: { accessKey } });
      if (!found || !sameKey(found.accessKey, accessKey)) return null;
      await lockRow(em, 'customers', found.id);
      const customer = await em.findOneOrFail(Customer, { where: { id: found.id } });
      const now = new Date();
      const changes = {
        secretKey: randomBytes(32).toString('base64'),
        previousSecretKey: customer.secretKey,
        previousKeyValidUntil: new Date(now.getTime() + Math.max(0, graceSeconds) * 1000),
        updatedAt: now,
      };
      await em.update(Customer, { id: customer.id }, changes);
      return Object.assign(customer, changes);
    });
    this.cache.delete(accessKey);
    return rotated;
  }

  list(): Promise<Customer[]> {
    return this.db.manager.find(Customer, { order: { id: 'ASC' } });
  }

  /**
   * Cached for a few seconds: every authenticated request starts with this look-up (so do the public
   * endpoints and the /live channel). The key must match exactly, see sameKey().
   */
  async findByAccessKey(accessKey: string): Promise<Customer | null> {
    const hit = this.cache.get(accessKey);
    const now = Date.now();
    if (hit && hit.until > now) return hit.customer;
    const found = await this.db.manager.findOne(Customer, { where: { accessKey } });
    const customer = found && sameKey(found.accessKey, accessKey) ? found : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(accessKey, { customer, until: now + CACHE_TTL_MS });
    return customer;
  }
}
