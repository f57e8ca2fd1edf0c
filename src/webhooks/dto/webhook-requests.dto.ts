import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsDefined, IsIn, IsOptional, ValidateIf } from 'class-validator';
import { BooleanField, HttpUrlField, IntQuery, OptionalField, TextRules } from '../../common/validation/decorators';
import { DELIVERY_STATES, DeliveryState } from '../entities/webhook-delivery.entity';
import { WEBHOOK_EVENT_TYPES, WebhookEventType } from '../webhook-event-types';

const EVENTS_TEXT = `one or more of ${WEBHOOK_EVENT_TYPES.join(', ')}`;

/** The event types of an endpoint: a list first, then its size, repeats and names (in this order; see TextRules). */
function EventTypes(): PropertyDecorator {
  return applyDecorators(
    IsArray({ message: `events must be a list: ${EVENTS_TEXT}` }),
    ArrayMinSize(1, { message: `events must name ${EVENTS_TEXT}` }),
    ArrayMaxSize(WEBHOOK_EVENT_TYPES.length, { message: `events must name ${EVENTS_TEXT}` }),
    ArrayUnique({ message: 'events must not repeat a type' }),
    IsIn(WEBHOOK_EVENT_TYPES, { each: true, message: `events must name ${EVENTS_TEXT}` }),
  );
}

class WebhookFields {
  @ApiPropertyOptional({ nullable: true, type: String, maxLength: 255, example: 'Order system (production)' })
  @ValidateIf((o: WebhookFields) => o.description !== undefined && o.description !== null)
  @TextRules('description', 255)
  description?: string | null;

  @BooleanField(
    'active',
    {},
    { default: true, description: 'Inactive endpoints get no new events; their pending deliveries wait (retried on the usual schedule)' },
  )
  active?: boolean;
}

export class CreateWebhookDto extends WebhookFields {
  @HttpUrlField('url', 2048, { required: true }, { example: 'https://shop.example.com/hooks/livegoods', description: 'https URL the events are POSTed to' })
  url: string;

  @ApiProperty({
    type: [String],
    enum: WEBHOOK_EVENT_TYPES,
    example: ['goods.salesStatus', 'campaign.status'],
    description: `The event types to send: ${EVENTS_TEXT}`,
  })
  @IsDefined({ message: 'events is required' })
  @EventTypes()
  events: WebhookEventType[];
}

export class UpdateWebhookDto extends WebhookFields {
  @HttpUrlField('url', 2048, {}, { example: 'https://shop.example.com/hooks/livegoods', description: 'https URL the events are POSTed to' })
  url?: string;

  @ApiPropertyOptional({ type: [String], enum: WEBHOOK_EVENT_TYPES, example: ['goods.salesStatus'], description: `The event types to send: ${EVENTS_TEXT}` })
  @OptionalField()
  @EventTypes()
  events?: WebhookEventType[];
}

export class ListWebhookDeliveriesQuery {
  @IntQuery('page', 1, 1_000_000, { default: 1, description: 'Page number, from 1' })
  page: number = 1;

  @IntQuery('count', 1, 100, { default: 30, description: 'Deliveries per page (newest first)' }, { clamp: true })
  count: number = 30;

  @ApiPropertyOptional({ enum: DELIVERY_STATES, description: 'Only deliveries in this state; an empty value is all states' })
  // An empty parameter (`state=`, as in the documented template) is the same as leaving it out.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' && value.trim() === '' ? undefined : value))
  @IsOptional()
  @IsIn(DELIVERY_STATES, { message: `state must be one of ${DELIVERY_STATES.join(', ')}` })
  state?: DeliveryState;
}
