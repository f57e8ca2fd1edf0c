import { Module } from '@nestjs/common';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhookEvents } from './webhook-events';
import { WebhookSender } from './webhook-sender';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

/**
 * Signed webhooks (docs/webhooks.md): the console routes for endpoints and their delivery log, the one
 * place events are recorded (WebhookEvents, exported for the domains that produce them), and the
 * dispatcher every node runs to send the outbox.
 */
@Module({
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhookEvents, WebhookDispatcher, WebhookSender],
  exports: [WebhookEvents],
})
export class WebhooksModule {}
