import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiParam, ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';

export class FieldErrorResponse {
  @ApiProperty({ example: 'sku' }) field: string;
  @ApiProperty({ example: 'sku is required' }) message: string;
}

/** The one error shape (docs/api-reference.md, Errors). */
export class ErrorResponse {
  @ApiProperty({ example: -510, description: 'Error code: -510 invalid argument, -102 unauthorized, -404 not found, -409 conflict, ...' })
  _s: number;
  @ApiProperty({ example: 'Invalid argument: sku is required' }) _e: string;
  @ApiPropertyOptional({ type: [FieldErrorResponse], description: 'Present on validation failures' })
  errors?: FieldErrorResponse[];
}

const ERROR_TEXT: Record<number, string> = {
  400: '-510 invalid argument (missing or ill-typed field, bad paging, malformed JSON)',
  401: '-102 missing, malformed, expired or foreign token',
  404: '-404 goods item not found',
  409: '-409 sku or url already used by another item',
  413: '-413 body or element count over the limit',
  415: '-415 unsupported body type',
};

/** Documents the error responses a route can give, all in the one error shape. */
export function ApiErrors(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) => ApiResponse({ status, description: ERROR_TEXT[status] ?? 'error', type: ErrorResponse })),
  );
}

/** Bearer JWT + the accessKey path segment, common to every tenant route. */
export function TenantRoute(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiBearerAuth(),
    ApiParam({ name: 'accessKey', description: 'The customer access key', example: 'q3Jx0vQk1m8bT2yN5cRz7wLp' }),
    ApiErrors(401),
  );
}
