import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiParam, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import type { ReferenceObject, SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';

/**
 * The metadata key @nestjs/swagger reads a controller's security requirements from (DECORATORS.API_SECURITY,
 * not exported by the package).
 */
const API_SECURITY = 'swagger/apiSecurity';

/**
 * Swagger helpers shared by every controller. The conventions of the document they build are written
 * down in docs/architecture.md (OpenAPI document).
 */

export class FieldErrorResponse {
  @ApiProperty({ example: 'sku', description: 'The field (or parameter) that is wrong' }) field: string;
  @ApiProperty({ example: 'sku is required', description: 'What is wrong with it' }) message: string;
}

const ERROR_CODES = [-510, -102, -404, -710, -711, -409, -413, -415, -422, -429, -503, -500];

/** The one error shape (docs/api-reference.md, Errors). */
export class ErrorResponse {
  @ApiProperty({
    type: 'integer',
    format: 'int32',
    enum: ERROR_CODES,
    example: -510,
    description:
      'Error code: -510 invalid argument, -102 unauthorized, -404 not found, -710 campaign not found, -711 goods not in ' +
      'the campaign, -409 conflict, -413 over a limit, -415 unsupported media, -422 status move not allowed, -429 rate ' +
      'limited, -503 unavailable, -500 unexpected',
  })
  _s: number;
  @ApiProperty({ example: 'Invalid argument: sku is required', description: 'What went wrong, in words' }) _e: string;
  @ApiPropertyOptional({ type: [FieldErrorResponse], description: 'On validation failures only: one entry per bad field' })
  errors?: FieldErrorResponse[];
}

const ERROR_TEXT: Record<number, string> = {
  400: '-510 invalid argument (a missing or ill-typed field, bad paging, a parameter given twice, malformed JSON); `errors` names each bad field',
  401: '-102 missing, malformed, expired or foreign token, or an unknown access key',
  404: '-404 not found',
  409: '-409 the sku or url is already used by another item',
  413: '-413 over a limit (body size, values in the body, elements)',
  415: '-415 unsupported body (unknown Content-Encoding, a Content-Type not read, JSON not in UTF-8, or not a readable spreadsheet)',
  422: '-422 status move not allowed (READY → ONAIR → CLOSED only)',
  429: '-429 rate limited; Retry-After says when to try again',
  500: '-500 unexpected; the message holds the request id to look up in the server log',
  503: '-503 the database is unavailable, too slow or busy, or the node is shutting down; nothing was written; Retry-After says when to try again',
};

export const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 1, example: 5 } },
};

/** One documented error response in the one error shape; `description` overrides the default text. */
export function ApiError(status: number, description?: string): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorResponse),
    ApiResponse({
      status,
      description: description ?? ERROR_TEXT[status] ?? 'error',
      content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorResponse) } } },
      ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}),
    }),
  );
}

/** Documents the error responses a route can give, all in the one error shape. */
export function ApiErrors(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(...statuses.map((status) => ApiError(status)));
}

/** The access-key path parameter. */
export const AccessKeyParam = ApiParam({
  name: 'accessKey',
  description: "The customer's access key (matched exactly)",
  schema: { type: 'string', example: 'q3Jx0vQk1m8bT2yN5cRz7wLp' },
});

/**
 * Bearer JWT (the document-wide security requirement) + the accessKey path segment, and the errors every
 * tenant route can give: 401, 429 (per IP, per customer, refused authentications), 500, 503.
 */
export function TenantRoute(): ClassDecorator {
  return applyDecorators(AccessKeyParam, ApiErrors(401, 429, 500, 503));
}

/**
 * A route that needs no token: `security: []` overrides the document-wide bearer requirement. Set on the
 * controller: @nestjs/swagger drops an empty security list set on a single method. Errors: 429 (per IP,
 * unless the route skips it) and 500; `errors` adds more.
 */
export function PublicRoute(...errors: number[]): ClassDecorator {
  const noSecurity: ClassDecorator = (target) => {
    Reflect.defineMetadata(API_SECURITY, [], target);
  };
  return applyDecorators(noSecurity, ApiErrors(...errors, 500));
}

/** A positive int64 id in the path. */
export function IdPathParam(name: string, description: string): MethodDecorator & ClassDecorator {
  return ApiParam({ name, description, schema: { type: 'integer', format: 'int64', minimum: 1, example: 1024 } });
}

/** The JSON null, as one branch of a `oneOf` (OpenAPI 3.0 has no `type: 'null'`). */
export const NULL_SCHEMA: SchemaObject = { type: 'string', nullable: true, enum: [null], description: 'null' };

/** `oneOf: [ref, null]`: a nullable reference in OpenAPI 3.0 (a `$ref` takes no siblings). */
export function nullableRef(model: string | (new (...args: never[]) => unknown)): { oneOf: (SchemaObject | ReferenceObject)[] } {
  return { oneOf: [{ $ref: getSchemaPath(model) }, NULL_SCHEMA] };
}
