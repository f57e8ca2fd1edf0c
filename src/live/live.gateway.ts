import { Logger } from '@nestjs/common';
import {
  ConnectedSocket,
  MessageBody,
  OnGatewayConnection,
  OnGatewayDisconnect,
  OnGatewayInit,
  SubscribeMessage,
  WebSocketGateway,
} from '@nestjs/websockets';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Namespace, Socket } from 'socket.io';
import { DataSource } from 'typeorm';
import { Campaign } from '../campaigns/entities/campaign.entity';
import { AppConfig } from '../config/app-config';
import { isMysql } from '../database/engine';
import { CustomersService } from '../customers/customers.service';
import { CampaignViews } from './campaign-views';
import { LiveEventLog } from './live-event-log';
import { LiveEventMap, roomOf } from './live-events';
import { LiveNotifier } from './live-notifier';
import { ViewerCounter } from './viewer-counter';

interface ViewerData {
  campaignId: number;
  /** false for an operator's console (auth.role = 'operator'): it does not count as a viewer. */
  counted: boolean;
  campaignKey: string;
  currency: string;
  baseUrl: string;
}

type ViewerSocket = Socket<Record<string, never>, { [K in keyof LiveEventMap]: (payload: LiveEventMap[K]) => void }, Record<string, never>, ViewerData>;

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 64 ? value : undefined;
}

/**
 * The viewer channel (CONTRACT §7): namespace /live. A player connects with
 * `auth: {accessKey, campaignKey}`, gets `campaign.snapshot`, then every event of that campaign, each
 * with the next `seq`. After a gap or a reconnect it emits `resync` with `{sinceSeq}` and receives the
 * missed events in order, or a new snapshot when they are no longer kept. No token is needed.
 */
@WebSocketGateway({ namespace: '/live', cors: { origin: true } })
export class LiveGateway implements OnGatewayInit, OnGatewayConnection, OnGatewayDisconnect {
  private readonly logger = new Logger(LiveGateway.name);

  constructor(
    private readonly notifier: LiveNotifier,
    private readonly counter: ViewerCounter,
    private readonly views: CampaignViews,
    private readonly log: LiveEventLog,
    private readonly customers: CustomersService,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  afterInit(namespace: Namespace): void {
    this.notifier.attach(namespace);
    namespace.use((socket, next) => {
      this.admit(socket as ViewerSocket).then(
        () => next(),
        (err: Error) => next(err),
      );
    });
  }

  /** Checks accessKey + campaignKey before the connection is accepted; a refusal is a connect_error. */
  private async admit(socket: ViewerSocket): Promise<void> {
    const auth = (socket.handshake.auth ?? {}) as Record<string, unknown>;
    const query = socket.handshake.query as Record<string, unknown>;
    const accessKey = text(auth.accessKey) ?? text(query.accessKey);
    const campaignKey = text(auth.campaignKey) ?? text(query.campaignKey);
    if (!accessKey || !campaignKey) throw new Error('auth must carry accessKey and campaignKey');
    const customer = await this.customers.findByAccessKey(accessKey);
    const campaign = customer
      ? await this.dataSource.manager.findOne(Campaign, { where: { customerId: customer.id, campaignKey } })
      : null;
    if (!customer || !campaign) throw new Error(`campaign ${campaignKey} not found`);
    socket.data = {
      campaignId: campaign.id,
      counted: auth.role !== 'operator',
      campaignKey,
      currency: customer.currency,
      baseUrl: this.baseUrlOf(socket),
    };
  }

  private baseUrlOf(socket: ViewerSocket): string {
    if (this.config.server.publicBaseUrl) return this.config.server.publicBaseUrl;
    const headers = socket.handshake.headers;
    const forwarded = this.config.server.trustProxy ? String(headers['x-forwarded-proto'] ?? '').split(',')[0].trim() : '';
    const proto = forwarded || (socket.handshake.secure ? 'https' : 'http');
    return `${proto}://${headers.host ?? `localhost:${this.config.server.port}`}`;
  }

  async handleConnection(socket: ViewerSocket): Promise<void> {
    const { campaignId } = socket.data;
    if (!campaignId) return;
    await socket.join(roomOf(campaignId));
    if (socket.data.counted) this.counter.joined(campaignId);
    await this.sendSnapshot(socket);
  }

  handleDisconnect(socket: ViewerSocket): void {
    if (socket.data?.campaignId && socket.data.counted) this.counter.left(socket.data.campaignId);
  }

  @SubscribeMessage('resync')
  async resync(@ConnectedSocket() socket: ViewerSocket, @MessageBody() body: unknown): Promise<void> {
    const sinceSeq = Number((body as { sinceSeq?: unknown } | null)?.sinceSeq);
    const { campaignId } = socket.data;
    if (!campaignId) return;
    const em = this.dataSource.manager;
    const campaign = await em.findOne(Campaign, { where: { id: campaignId } });
    if (!campaign) {
      socket.disconnect(true);
      return;
    }
    const missed = Number.isInteger(sinceSeq) && sinceSeq >= 0 ? await this.log.since(em, campaignId, sinceSeq, campaign.lastSeq) : null;
    if (!missed) {
      await this.sendSnapshot(socket);
      return;
    }
    for (const event of missed) this.notifier.sendTo(socket, event.type, event.payload);
  }

  private async sendSnapshot(socket: ViewerSocket): Promise<void> {
    const { campaignId, currency, baseUrl } = socket.data;
    try {
      const userCount = await this.counter.count(campaignId);
      // On MySQL one REPEATABLE READ transaction gives a consistent snapshot (seq and state from the same
      // instant); SQLite's single connection reads between write transactions anyway.
      const snapshot = isMysql(this.dataSource)
          ? await this.dataSource.transaction('REPEATABLE READ', (em) => this.views.snapshot(em, campaignId, currency, baseUrl, userCount))
          : await this.views.snapshot(this.dataSource.manager, campaignId, currency, baseUrl, userCount);
      if (snapshot) this.notifier.sendTo(socket, 'campaign.snapshot', snapshot);
      else socket.disconnect(true);
    } catch (err) {
      this.logger.error(`snapshot for campaign ${campaignId} failed: ${err instanceof Error ? err.stack : err}`);
    }
  }
}
