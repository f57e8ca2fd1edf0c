import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { Tenant } from '../auth/decorators';
import { ApiException } from '../common/errors/api.exception';
import { AppConfig } from '../config/app-config';
import { lockRow } from '../database/engine';
import { Transactions } from '../database/transactions';
import { WebhookDelivery } from './entities/webhook-delivery.entity';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { CreateWebhookDto, ListWebhookDeliveriesQuery, UpdateWebhookDto } from './dto/webhook-requests.dto';
import {
  toDeliveryResponse,
  toWebhookResponse,
  toWebhookWithSecret,
  WebhookDeliveryListResponse,
  WebhookDeliveryResponse,
  WebhookListResponse,
  WebhookResponse,
  WebhookWithSecretResponse,
} from './dto/webhook-response.dto';
import { PAUSED_PAST_WINDOW, WebhookDispatcher } from './webhook-dispatcher';
import { WebhookSender } from './webhook-sender';
import { newSigningSecret } from './webhook-signature';

/** Most endpoints one customer may register. */
export const MAX_WEBHOOKS_PER_CUSTOMER = 20;

/** The console's webhook operations: endpoints of the customer, their secrets, their delivery log, replays. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly db: Transactions,
    private readonly sender: WebhookSender,
    private readonly dispatcher: WebhookDispatcher,
    private readonly config: AppConfig,
  ) {}

  create(tenant: Tenant, body: CreateWebhookDto): Promise<WebhookWithSecretResponse> {
    this.checkUrl(body.url);
    return this.db.run(async (em) => {
      // The customer's row locked first (MySQL), so that concurrent creates count one after another: under
      // REPEATABLE READ each would otherwise count the endpoints committed before it began and all insert.
      await lockRow(em, 'customers', tenant.id);
      const count = await em.count(WebhookEndpoint, { where: { customerId: tenant.id } });
      if (count >= MAX_WEBHOOKS_PER_CUSTOMER)
        throw ApiException.tooLarge(`At most ${MAX_WEBHOOKS_PER_CUSTOMER} webhook endpoints per customer; delete one first`);
      const now = new Date();
      const endpoint = em.create(WebhookEndpoint, {
        customerId: tenant.id,
        url: body.url,
        events: body.events.join(','),
        active: body.active ?? true,
        description: body.description?.trim() || null,
        secret: newSigningSecret(),
        createdAt: now,
        updatedAt: now,
      });
      await em.insert(WebhookEndpoint, endpoint);
      endpoint.id = Number(endpoint.id); // mysql2 hands the generated BIGINT back as text
      return toWebhookWithSecret(endpoint);
    });
  }

  async list(tenant: Tenant): Promise<WebhookListResponse> {
    const rows = await this.db.manager.find(WebhookEndpoint, { where: { customerId: tenant.id }, order: { id: 'ASC' } });
    return { results: rows.map(toWebhookResponse), totalCount: rows.length, _s: 0 };
  }

  async get(tenant: Tenant, webhookId: number): Promise<WebhookResponse> {
    return toWebhookResponse(await this.find(this.db.manager, tenant, webhookId));
  }

  async update(tenant: Tenant, webhookId: number, body: UpdateWebhookDto): Promise<WebhookResponse> {
    if (body.url !== undefined) this.checkUrl(body.url);
    let resumed = false;
    const updated = await this.db.run(async (em) => {
      const endpoint = await this.find(em, tenant, webhookId);
      const change: Partial<WebhookEndpoint> = {};
      if (body.url !== undefined && body.url !== endpoint.url) change.url = body.url;
      if (body.events !== undefined && body.events.join(',') !== endpoint.events) change.events = body.events.join(',');
      if (body.active !== undefined && body.active !== !!endpoint.active) change.active = body.active;
      const description = body.description === undefined ? undefined : body.description?.trim() || null;
      if (description !== undefined && description !== endpoint.description) change.description = description;
      if (!Object.keys(change).length) return toWebhookResponse(endpoint);
      change.updatedAt = new Date();
      // A new address is a new receiver: what the old one's failures opened (the breaker) is closed, and
      // the deliveries its pause held are due now.
      const breaker = change.url !== undefined ? { failureStreak: 0, pausedUntil: null } : {};
      await em.update(WebhookEndpoint, { id: endpoint.id }, { ...change, ...breaker });
      if (change.url !== undefined && endpoint.pausedUntil && endpoint.pausedUntil.getTime() > change.updatedAt.getTime()) {
        await this.dispatcher.endPause(em, endpoint.id, endpoint.pausedUntil, change.updatedAt);
        resumed = true;
      }
      return toWebhookResponse({ ...endpoint, ...change });
    });
    if (resumed) this.dispatcher.wake();
    return updated;
  }

  async remove(tenant: Tenant, webhookId: number): Promise<void> {
    await this.db.run(async (em) => {
      const endpoint = await this.find(em, tenant, webhookId);
      await em.delete(WebhookEndpoint, { id: endpoint.id });
    });
  }

  /** A new signing secret, at once: every delivery sent from now on (retries included) is signed with it. */
  rotateSecret(tenant: Tenant, webhookId: number): Promise<WebhookWithSecretResponse> {
    return this.db.run(async (em) => {
      const endpoint = await this.find(em, tenant, webhookId);
      const change = { secret: newSigningSecret(), updatedAt: new Date() };
      await em.update(WebhookEndpoint, { id: endpoint.id }, change);
      return toWebhookWithSecret({ ...endpoint, ...change });
    });
  }

  async deliveries(tenant: Tenant, webhookId: number, query: ListWebhookDeliveriesQuery): Promise<WebhookDeliveryListResponse> {
    const endpoint = await this.find(this.db.manager, tenant, webhookId);
    const where = { endpointId: endpoint.id, ...(query.state ? { state: query.state } : {}) };
    const [rows, totalCount] = await this.db.manager.findAndCount(WebhookDelivery, {
      where,
      order: { id: 'DESC' },
      skip: (query.page - 1) * query.count,
      take: query.count,
    });
    return { results: rows.map(toDeliveryResponse), totalCount, _s: 0 };
  }

  /**
   * Sends a delivery again: a new delivery of the same body (same event id) to the endpoint, due now (or
   * when the endpoint's pause ends; given up at once, untried, if that is after its retry window),
   * whatever the state of the original. Answers the new delivery.
   */
  async replay(tenant: Tenant, webhookId: number, deliveryId: number): Promise<WebhookDeliveryResponse> {
    const created = await this.db.run(async (em) => {
      const endpoint = await this.find(em, tenant, webhookId);
      const original = await em.findOne(WebhookDelivery, { where: { id: deliveryId, endpointId: endpoint.id } });
      if (!original) throw ApiException.notFound(`Webhook delivery not found: ${deliveryId}`);
      const now = new Date();
      const paused = endpoint.pausedUntil && endpoint.pausedUntil.getTime() > now.getTime() ? endpoint.pausedUntil : null;
      const pastWindow = !!paused && paused.getTime() > now.getTime() + this.config.webhooks.retryWindowMs;
      const copy = em.create(WebhookDelivery, {
        customerId: tenant.id,
        endpointId: endpoint.id,
        eventId: original.eventId,
        eventType: original.eventType,
        body: original.body,
        state: pastWindow ? 'failed' : 'pending',
        attempts: 0,
        nextAttemptAt: paused ?? now,
        claimToken: null,
        lastStatusCode: null,
        lastDurationMs: null,
        lastError: pastWindow ? PAUSED_PAST_WINDOW : null,
        createdAt: now,
        lastAttemptAt: null,
        finishedAt: pastWindow ? now : null,
      });
      await em.insert(WebhookDelivery, copy);
      copy.id = Number(copy.id); // mysql2 hands the generated BIGINT back as text
      return copy;
    });
    this.dispatcher.wake();
    return toDeliveryResponse(created);
  }

  private async find(em: EntityManager, tenant: Tenant, webhookId: number): Promise<WebhookEndpoint> {
    const endpoint = await em.findOne(WebhookEndpoint, { where: { id: webhookId, customerId: tenant.id } });
    if (!endpoint) throw ApiException.notFound(`Webhook endpoint not found: ${webhookId}`);
    return endpoint;
  }

  private checkUrl(url: string): void {
    const why = this.sender.refusal(url);
    if (why) throw ApiException.invalid(`Invalid argument: ${why}`, [{ field: 'url', message: why }]);
  }
}
