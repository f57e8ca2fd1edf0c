import { NestInterceptor, RequestMethod, Type } from '@nestjs/common';
import { INTERCEPTORS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { ApiHeader } from '@nestjs/swagger';
import { IS_PUBLIC } from '../auth/decorators';
import { ApiError } from '../http/api-docs.decorators';
import { IDEMPOTENCY_KEY_HEADER, KEY_MAX_LENGTH, REPLAYED_HEADER } from './idempotency-request';

/** The metadata key @nestjs/swagger keeps a handler's responses under (DECORATORS.API_RESPONSE, not exported by the package). */
const API_RESPONSE = 'swagger/apiResponse';
/** Marks a handler this module has already covered (several apps may be built in one process). */
const COVERED = 'livegoods:idempotent';

const WRITE_METHODS = new Set<RequestMethod>([RequestMethod.POST, RequestMethod.PUT, RequestMethod.PATCH, RequestMethod.DELETE]);

interface ResponseDoc {
  description?: string;
  headers?: Record<string, unknown>;
  [key: string]: unknown;
}

const KEY_DESCRIPTION =
  `Makes a retry safe: the same key with the same request within IDEMPOTENCY_TTL (24 h by default) answers the first ` +
  `answer again (status, body, headers, plus \`${REPLAYED_HEADER}: true\`) without applying the request again. ` +
  `1 to ${KEY_MAX_LENGTH} printable ASCII characters (400 otherwise), per customer; a UUID per logical operation is a good key. ` +
  'The same key with a different method, path, query or body is 422; while the first request with the key runs, 409. ' +
  'Answers 5xx, 401, 403, 408, 425 and 429 are not stored (the key is free again). See docs/api-reference.md, Idempotency keys.';

const REPLAYED_DOC = {
  description: 'Present (`true`) when this answer is the stored answer of an earlier request with the same Idempotency-Key',
  schema: { type: 'string', enum: ['true'] },
};

const RETRY_AFTER_DOC = { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 1, example: 1 } };

const CONFLICT_TEXT = `-409 a request with the same ${IDEMPOTENCY_KEY_HEADER} is still running (Retry-After), or ran and its answer was too large to keep`;
const BAD_KEY_TEXT = `-510 the ${IDEMPOTENCY_KEY_HEADER} header is empty, longer than ${KEY_MAX_LENGTH} characters or not printable ASCII`;
const MISMATCH_TEXT = `-422 the ${IDEMPOTENCY_KEY_HEADER} was used for a different request (method, path, query or body)`;

/** The authenticated write routes (POST, PUT, PATCH, DELETE; not @Public()) of every controller of the app. */
export function writeRoutesOf(modules: ModulesContainer): Array<{ type: Type; name: string; handler: object }> {
  const scanner = new MetadataScanner();
  const routes: Array<{ type: Type; name: string; handler: object }> = [];
  for (const moduleRef of modules.values()) {
    for (const wrapper of moduleRef.controllers.values()) {
      const type = wrapper.metatype as Type | null;
      if (!type?.prototype || Reflect.getMetadata(IS_PUBLIC, type)) continue;
      for (const name of scanner.getAllMethodNames(type.prototype as object)) {
        const handler = (type.prototype as Record<string, unknown>)[name];
        if (typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        if (!WRITE_METHODS.has(Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod)) continue;
        if (Reflect.getMetadata(IS_PUBLIC, handler)) continue;
        routes.push({ type, name, handler });
      }
    }
  }
  return routes;
}

/**
 * Adds the idempotency interceptor as the innermost interceptor of every authenticated write route (so
 * it runs after the route's own interceptors, an upload's reading included), and documents the header,
 * 400 (a bad key), 409, 422 and the replay header on each of them. Runs before the routes are registered; a route added
 * later to any controller is covered without more ado.
 */
export function coverWriteRoutes(modules: ModulesContainer, interceptor: NestInterceptor): void {
  for (const { type, name, handler } of writeRoutesOf(modules)) {
    if (Reflect.getMetadata(COVERED, handler)) continue;
    Reflect.defineMetadata(COVERED, true, handler);
    const interceptors = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) as unknown[] | undefined) ?? [];
    Reflect.defineMetadata(INTERCEPTORS_METADATA, [...interceptors, interceptor], handler);
    documentRoute(type, name, handler);
  }
}

function documentRoute(type: Type, name: string, handler: object): void {
  const prototype = type.prototype as object;
  const descriptor = Object.getOwnPropertyDescriptor(prototype, name) as PropertyDescriptor;
  ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description: KEY_DESCRIPTION,
    schema: { type: 'string', minLength: 1, maxLength: KEY_MAX_LENGTH, example: '3f2b8c1e-4b7a-4d0e-9a51-6c2f0e8d7b14' },
  })(prototype, name, descriptor);
  const inherited = (Reflect.getMetadata(API_RESPONSE, type) as Record<string, ResponseDoc> | undefined) ?? {};
  const before = (Reflect.getMetadata(API_RESPONSE, handler) as Record<string, ResponseDoc> | undefined) ?? {};
  // @nestjs/swagger joins the descriptions of one status given twice on a method (blank line between);
  // one documented on the class only is replaced by the method's, so its text is carried over.
  const describedAs = (status: number, text: string): string => {
    const fromClass = before[status] ? undefined : inherited[status]?.description;
    return fromClass ? `${fromClass}\n\n${text}` : text;
  };
  ApiError(400, describedAs(400, BAD_KEY_TEXT))(prototype, name, descriptor);
  ApiError(409, describedAs(409, CONFLICT_TEXT))(prototype, name, descriptor);
  ApiError(422, describedAs(422, MISMATCH_TEXT))(prototype, name, descriptor);
  const responses = { ...(Reflect.getMetadata(API_RESPONSE, handler) as Record<string, ResponseDoc>) };
  for (const [status, response] of Object.entries(responses)) {
    const code = Number(status);
    if (!(code >= 200 && code < 300) && !(code >= 400 && code < 500)) continue;
    const headers: Record<string, unknown> = { ...response.headers, [REPLAYED_HEADER]: REPLAYED_DOC };
    if (code === 409) headers['Retry-After'] = RETRY_AFTER_DOC;
    responses[status] = { ...response, headers };
  }
  Reflect.defineMetadata(API_RESPONSE, responses, handler);
}
