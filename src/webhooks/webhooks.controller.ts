import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, Tenant } from '../auth/decorators';
import { DeleteResponse } from '../goods/dto/goods-response.dto';
import { ApiErrors, IdPathParam, TenantRoute } from '../http/api-docs.decorators';
import { IdParam } from '../http/id-param';
import { CreateWebhookDto, ListWebhookDeliveriesQuery, UpdateWebhookDto } from './dto/webhook-requests.dto';
import {
  WebhookDeliveryListResponse,
  WebhookDeliveryResponse,
  WebhookListResponse,
  WebhookResponse,
  WebhookWithSecretResponse,
} from './dto/webhook-response.dto';
import { WebhooksService } from './webhooks.service';

const WebhookIdParam = IdPathParam('webhookId', 'The webhook endpoint id');

/**
 * Webhook endpoints of the customer (console API, same Bearer JWT): where its systems hear what happens
 * in a broadcast, signed (docs/webhooks.md).
 */
@ApiTags('Webhooks console')
@TenantRoute()
@Controller('v1/console/:accessKey/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Register an endpoint (the signing secret is in this answer only)',
    description:
      'url (https; http and private addresses only where the server allows private hosts) and events are required; active defaults to true. At most 20 endpoints per customer (413 -413).',
  })
  @ApiOkResponse({ type: WebhookWithSecretResponse })
  @ApiErrors(400, 413, 415)
  create(@CurrentTenant() tenant: Tenant, @Body() body: CreateWebhookDto): Promise<WebhookWithSecretResponse> {
    return this.webhooks.create(tenant, body);
  }

  @Get()
  @ApiOperation({ summary: 'List the endpoints (without their secrets)', description: 'All endpoints of the customer, oldest first.' })
  @ApiOkResponse({ type: WebhookListResponse })
  list(@CurrentTenant() tenant: Tenant): Promise<WebhookListResponse> {
    return this.webhooks.list(tenant);
  }

  @Get(':webhookId')
  @WebhookIdParam
  @ApiOperation({ summary: 'One endpoint (without its secret)', description: '404 -404 when unknown.' })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors(400, 404)
  get(@CurrentTenant() tenant: Tenant, @IdParam('webhookId') webhookId: number): Promise<WebhookResponse> {
    return this.webhooks.get(tenant, webhookId);
  }

  @Patch(':webhookId')
  @WebhookIdParam
  @ApiOperation({
    summary: 'Change url, events, active or description',
    description:
      'Partial: an absent field keeps its value, description null clears it. Deliveries already recorded keep going to the endpoint (at its current url).',
  })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors(400, 404, 413, 415)
  update(@CurrentTenant() tenant: Tenant, @IdParam('webhookId') webhookId: number, @Body() body: UpdateWebhookDto): Promise<WebhookResponse> {
    return this.webhooks.update(tenant, webhookId, body);
  }

  @Delete(':webhookId')
  @WebhookIdParam
  @ApiOperation({ summary: 'Delete an endpoint and its delivery log', description: 'Deliveries not yet sent are dropped; 404 -404 when unknown.' })
  @ApiOkResponse({ type: DeleteResponse })
  @ApiErrors(400, 404)
  async remove(@CurrentTenant() tenant: Tenant, @IdParam('webhookId') webhookId: number): Promise<DeleteResponse> {
    await this.webhooks.remove(tenant, webhookId);
    return { _s: 0 };
  }

  @Post(':webhookId/secret')
  @HttpCode(200)
  @WebhookIdParam
  @ApiOperation({
    summary: 'Rotate the signing secret (the new one is in this answer only)',
    description: 'Takes effect at once: every delivery sent from now on, retries included, is signed with the new secret.',
  })
  @ApiOkResponse({ type: WebhookWithSecretResponse })
  @ApiErrors(400, 404)
  rotateSecret(@CurrentTenant() tenant: Tenant, @IdParam('webhookId') webhookId: number): Promise<WebhookWithSecretResponse> {
    return this.webhooks.rotateSecret(tenant, webhookId);
  }

  @Get(':webhookId/deliveries')
  @WebhookIdParam
  @ApiOperation({
    summary: 'The delivery log of an endpoint (newest first)',
    description: 'Each delivery: event, state, tries, last status code, duration and error, next try. Kept WEBHOOK_RETENTION_DAYS days after it finished.',
  })
  @ApiOkResponse({ type: WebhookDeliveryListResponse })
  @ApiErrors(400, 404)
  deliveries(
    @CurrentTenant() tenant: Tenant,
    @IdParam('webhookId') webhookId: number,
    @Query() query: ListWebhookDeliveriesQuery,
  ): Promise<WebhookDeliveryListResponse> {
    return this.webhooks.deliveries(tenant, webhookId, query);
  }

  @Post(':webhookId/deliveries/:deliveryId/replay')
  @HttpCode(200)
  @WebhookIdParam
  @IdPathParam('deliveryId', 'The delivery to send again')
  @ApiOperation({
    summary: 'Send a delivery again',
    description: 'Records a new delivery of the same body and event id, due now, whatever the state of the original; answers the new delivery.',
  })
  @ApiOkResponse({ type: WebhookDeliveryResponse })
  @ApiErrors(400, 404)
  replay(
    @CurrentTenant() tenant: Tenant,
    @IdParam('webhookId') webhookId: number,
    @IdParam('deliveryId') deliveryId: number,
  ): Promise<WebhookDeliveryResponse> {
    return this.webhooks.replay(tenant, webhookId, deliveryId);
  }
}
