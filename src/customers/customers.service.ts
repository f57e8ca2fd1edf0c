import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ApiException } from '../common/errors/api.exception';
import { Customer } from './entities/customer.entity';

const CACHE_TTL_MS = 30_000;
const CURRENCY = /^[A-Z]{3}$/;

/** Customers (tenants): creation by the admin CLI, look-up by access key for authentication. */
@Injectable()
export class CustomersService {
  private readonly cache = new Map<string, { customer: Customer | null; until: number }>();

  constructor(@InjectRepository(Customer) private readonly customers: Repository<Customer>) {}

  async create(name: string, currency = 'KRW'): Promise<Customer> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 255) throw ApiException.invalid('name must be 1 to 255 characters');
    const code = currency.trim().toUpperCase();
    if (!CURRENCY.test(code)) throw ApiException.invalid('currency must be an ISO 4217 code such as KRW or USD');
    const now = new Date();
    const customer = this.customers.create({
      accessKey: randomBytes(18).toString('base64url'),
      secretKey: randomBytes(32).toString('base64'),
      name: trimmed,
      currency: code,
      createdAt: now,
      updatedAt: now,
    });
    return this.customers.save(customer);
  }

  list(): Promise<Customer[]> {
    return this.customers.find({ order: { id: 'ASC' } });
  }

  /** Cached for a few seconds: every authenticated request starts with this look-up. */
  async findByAccessKey(accessKey: string): Promise<Customer | null> {
    const hit = this.cache.get(accessKey);
    const now = Date.now();
    if (hit && hit.until > now) return hit.customer;
    const customer = await this.customers.findOne({ where: { accessKey } });
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(accessKey, { customer, until: now + CACHE_TTL_MS });
    return customer;
  }
}
