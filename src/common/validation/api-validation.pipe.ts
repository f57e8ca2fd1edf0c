import { ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { ApiException } from '../errors/api.exception';
import { validationException } from '../errors/validation';
import { sent } from './decorators';

/**
 * The global ValidationPipe (transform, whitelist, errors in the API's shape), and one rule for every query
 * string: a parameter is given once. `count=2&count=3` reaches a handler as a list, which each field
 * would refuse in its own words ("must be an integer; got [...]"); every parameter given twice is told
 * the same way instead, as the sales-status parameters are.
 */
export class ApiValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidUnknownValues: false,
      stopAtFirstError: true,
      validateCustomDecorators: true,
      exceptionFactory: validationException,
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // A list where the route takes one object (its DTO): told so, not as every required field missing.
    if (metadata.type === 'body' && Array.isArray(value) && isDtoClass(metadata.metatype)) throw bodyListRefusal();
    if (metadata.type === 'body' && formBodies.has(value as object) && metadata.metatype) refuseRepeatedFields(value, metadata.metatype);
    if (metadata.type === 'query') {
      refuseRepeated(value, metadata.data);
      if (metadata.data === undefined && metadata.metatype) refuseBracketed(value, metadata.metatype);
    }
    return super.transform(value, metadata);
  }
}

/** 400 -510 for a JSON array sent where the route takes one object. */
export function bodyListRefusal(): ApiException {
  return ApiException.invalid('Invalid argument: the body must be a JSON object, not a list', [
    { field: 'body', message: 'must be a JSON object, not a list' },
  ]);
}

/** A class the body is validated against (a DTO), not a built-in type such as Array or Object. */
function isDtoClass(metatype: ArgumentMetadata['metatype']): boolean {
  return typeof metatype === 'function' && ![Array, Object, String, Number, Boolean].includes(metatype as never);
}

/** 400 -510 for the first parameter of a query (or the one named parameter) that was given more than once. */
export function refuseRepeated(value: unknown, name?: string): void {
  const entries: Array<[string, unknown]> =
    name !== undefined ? [[name, value]] : value && typeof value === 'object' ? Object.entries(value as Record<string, unknown>) : [];
  for (const [param, given] of entries) {
    if (Array.isArray(given)) throw listRefusal(param, given);
  }
}

/**
 * 400 -510 for a parameter that came as a list: given several times in a query string or form, or as a
 * list where one value belongs (`fromJson`: a JSON array; or a single `name[]=…` of a query string or form).
 */
export function listRefusal(param: string, given: unknown[], fromJson = false): ApiException {
  const repeated = !fromJson && given.length > 1;
  const message = repeated ? `${param} was given ${given.length} times; give it once` : `${param} must be one value, not a list`;
  return ApiException.invalid(`Invalid argument: ${message}; got ${sent(given)}`, [{ field: param, message }]);
}

/**
 * Bodies read from a form (application/x-www-form-urlencoded), as the body parser marks them: a field
 * given twice there (`name=a&name=b`) arrives as a list, like a query parameter given twice.
 */
export const formBodies = new WeakSet<object>();

/**
 * 400 -510 for the first field of a form body given more than once, where its DTO takes one value: told
 * so, rather than "name must be a string". Fields that take a list (`events=a&events=b`) keep theirs.
 */
function refuseRepeatedFields(value: unknown, metatype: object): void {
  const { params, lists } = fieldsOf(metatype);
  for (const [field, given] of Object.entries(value as Record<string, unknown>)) {
    if (Array.isArray(given) && params.has(field) && !lists.has(field)) throw listRefusal(field, given);
  }
}

/** The properties a DTO validates (class-validator's metadata), and of those the ones it validates as lists (IsArray). */
interface DtoFields {
  params: ReadonlySet<string>;
  lists: ReadonlySet<string>;
}

/** DtoFields by class. */
const dtoFields = new WeakMap<object, DtoFields>();

function fieldsOf(metatype: object): DtoFields {
  let fields = dtoFields.get(metatype);
  if (!fields) {
    const metadatas = getMetadataStorage().getTargetValidationMetadatas(metatype as new () => object, '', true, false);
    fields = {
      params: new Set(metadatas.map((m) => m.propertyName)),
      lists: new Set(metadatas.filter((m) => m.name === 'isArray').map((m) => m.propertyName)),
    };
    dtoFields.set(metatype, fields);
  }
  return fields;
}

/**
 * 400 -510 for a parameter of the query's DTO sent in a bracketed form (`searchKeyword[]=x`,
 * `count[a]=1`), as query-string libraries write lists and objects (qs, PHP). The query string is read
 * flat, so such a key is no parameter the route knows and would be dropped without a word: the list
 * answered unfiltered. Bracketed keys of names the route does not take are ignored, as unknown
 * parameters are.
 */
export function refuseBracketed(value: unknown, metatype: object): void {
  if (!value || typeof value !== 'object') return;
  for (const key of Object.keys(value)) {
    const open = key.indexOf('[');
    if (open <= 0) continue;
    const param = key.slice(0, open);
    if (!fieldsOf(metatype).params.has(param)) continue;
    const message = `${param} was given as ${key}; give it once, as ${param}=…`;
    throw ApiException.invalid(`Invalid argument: ${message}`, [{ field: param, message }]);
  }
}
