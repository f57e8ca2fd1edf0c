import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

/**
 * Checks real HTTP exchanges against the OpenAPI document the app serves (/docs-json): the operation,
 * the status, the content type and headers, the JSON body (every object read as
 * `additionalProperties: false`), the security requirement, and what the request sent (path, query and
 * body values the service accepted). Used by test/openapi-responses.e2e-spec.ts.
 */

type Json = Record<string, unknown>;
type Schema = Json;

export interface SentRequest {
  method: string;
  /** The path as sent, without the query string (percent-encoding kept). */
  path: string;
  /** The query parameters as sent (text). */
  query?: Record<string, string>;
  /** A JSON body (`json`) or form fields (`form`: urlencoded or multipart text fields). */
  body?: unknown;
  bodyType?: 'json' | 'form' | 'multipart';
  /** Whether an Authorization header was sent. */
  token: boolean;
  /** false: check the response only (a request deliberately outside the document). */
  checkRequest?: boolean;
}

export interface ReceivedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (when JSON). */
  body: unknown;
}

interface Operation {
  template: string;
  method: string;
  op: Json;
  params: Json[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
/** Response headers the API sets on purpose: when sent, the document must declare them. */
const DECLARED_HEADERS = ['retry-after', 'x-ignored-columns', 'content-disposition', 'idempotent-replayed'];

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A copy of a schema in which every object without an `additionalProperties` of its own refuses
 * undeclared properties, and `#/…` references point into the document registered as `openapi.json`.
 */
export function strictSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictSchema);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'example' || key === 'examples' || key === 'default' || key === 'enum') out[key] = value;
    else if (key === '$ref' && typeof value === 'string' && value.startsWith('#/')) out[key] = `openapi.json${value}`;
    else if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, strictSchema(s)]));
    } else if (key === 'discriminator') out[key] = value;
    else out[key] = strictSchema(value);
  }
  if ((out.type === 'object' || 'properties' in out) && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

export class OpenApiChecker {
  private readonly ajv: Ajv;
  private readonly operations: Operation[] = [];
  private readonly compiled = new WeakMap<object, ValidateFunction>();
  /** Statuses seen per operation (`GET /path`), over every checked exchange. */
  readonly seen = new Map<string, Set<number>>();

  constructor(readonly doc: Json) {
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
    this.ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
    this.ajv.addFormat('binary', { type: 'string', validate: () => true });
    this.ajv.addSchema({ components: strictSchema(doc.components ?? {}) }, 'openapi.json');
    for (const [template, item] of Object.entries((doc.paths as Json) ?? {})) {
      if (!isObject(item)) continue;
      const shared = (item.parameters as Json[] | undefined) ?? [];
      for (const method of METHODS) {
        const op = item[method];
        if (isObject(op)) this.operations.push({ template, method, op, params: [...shared, ...((op.parameters as Json[]) ?? [])] });
      }
    }
  }

  /** Every operation of the document, as `GET /path`. */
  operationNames(): string[] {
    return this.operations.map((o) => `${o.method.toUpperCase()} ${o.template}`);
  }

  /** Problems with one exchange: [] when request and response agree with the document. */
  problems(req: SentRequest, res: ReceivedResponse): string[] {
    const found = this.find(req.method, req.path);
    if (typeof found === 'string') return [found];
    const { operation, pathParams } = found;
    const name = `${operation.method.toUpperCase()} ${operation.template}`;
    const where = `${req.method.toUpperCase()} ${req.path} → ${res.status} (${name})`;
    const problems: string[] = [];
    const responses = (operation.op.responses as Json) ?? {};
    const documented = (responses[String(res.status)] ?? responses[`${String(res.status)[0]}XX`] ?? responses.default) as Json | undefined;
    if (!documented) return [`${where}: status ${res.status} is not documented (documented: ${Object.keys(responses).join(', ')})`];
    this.record(name, res.status);

    // Content type and body.
    const type = String(res.headers['content-type'] ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase();
    const content = documented.content as Json | undefined;
    if (type) {
      const media = content?.[type] as Json | undefined;
      if (!media) problems.push(`${where}: content type ${type} is not documented (documented: ${Object.keys(content ?? {}).join(', ') || 'none'})`);
      else if (type === 'application/json') problems.push(...this.validate(media.schema as Schema, res.body, `${where}: body`));
    } else if (content && Object.keys(content).length) {
      problems.push(`${where}: no content type, but the document says ${Object.keys(content).join(', ')}`);
    }

    // Headers the API sets on purpose.
    const declared = Object.keys((documented.headers as Json) ?? {}).map((h) => h.toLowerCase());
    for (const header of DECLARED_HEADERS) {
      if (res.headers[header] !== undefined && !declared.includes(header)) problems.push(`${where}: header ${header} is sent but not documented`);
    }

    // Security: a success without a token only from an operation that needs none.
    const security = (operation.op.security ?? this.doc.security ?? []) as Json[];
    const open = security.length === 0 || security.some((s) => Object.keys(s).length === 0);
    if (res.status < 300 && !req.token && !open) problems.push(`${where}: answered 2xx without a token, but the document requires ${JSON.stringify(security)}`);

    // What the service accepted must be what the document allows.
    if (res.status < 300 && req.checkRequest !== false) problems.push(...this.requestProblems(req, operation, pathParams, where));
    return problems;
  }

  /** Throws with every problem of the exchange. */
  check(req: SentRequest, res: ReceivedResponse): void {
    const problems = this.problems(req, res);
    if (problems.length)
      throw new Error(`The response disagrees with /docs-json:\n- ${problems.join('\n- ')}\nbody: ${JSON.stringify(res.body)?.slice(0, 2000)}`);
  }

  private record(name: string, status: number): void {
    const statuses = this.seen.get(name) ?? new Set<number>();
    statuses.add(status);
    this.seen.set(name, statuses);
  }

  /** The documented operation for a request: the matching path with the most literal segments. */
  private find(method: string, path: string): { operation: Operation; pathParams: Record<string, string> } | string {
    const segments = path.split('/');
    let best: { operation: Operation; pathParams: Record<string, string>; literals: number } | undefined;
    let pathKnown = false;
    for (const operation of this.operations) {
      const parts = operation.template.split('/');
      if (parts.length !== segments.length) continue;
      const pathParams: Record<string, string> = {};
      let literals = 0;
      const matches = parts.every((part, i) => {
        const param = /^\{(.+)\}$/.exec(part);
        if (param) {
          if (!segments[i]) return false;
          pathParams[param[1]] = decodeURIComponent(segments[i]);
          return true;
        }
        literals += 1;
        return part === segments[i];
      });
      if (!matches) continue;
      pathKnown = true;
      if (operation.method !== method.toLowerCase()) continue;
      if (!best || literals > best.literals) best = { operation, pathParams, literals };
    }
    if (best) return { operation: best.operation, pathParams: best.pathParams };
    return pathKnown ? `${method.toUpperCase()} ${path}: method not documented for this path` : `${method.toUpperCase()} ${path}: path not documented`;
  }

  private requestProblems(req: SentRequest, operation: Operation, pathParams: Record<string, string>, where: string): string[] {
    const problems: string[] = [];
    const params = operation.params;
    for (const [name, value] of Object.entries(pathParams)) {
      const p = params.find((x) => x.in === 'path' && x.name === name);
      if (!p) problems.push(`${where}: path parameter ${name} is not documented`);
      else problems.push(...this.validateText(p.schema as Schema, value, p, `${where}: path parameter ${name}`));
    }
    const query = req.query ?? {};
    for (const [name, value] of Object.entries(query)) {
      const p = params.find((x) => x.in === 'query' && x.name === name);
      if (!p) problems.push(`${where}: query parameter ${name} is not documented`);
      else problems.push(...this.validateText(p.schema as Schema, value, p, `${where}: query parameter ${name}`));
    }
    for (const p of params) {
      if (p.in === 'query' && p.required && query[p.name as string] === undefined)
        problems.push(`${where}: required query parameter ${String(p.name)} was not sent`);
    }
    const requestBody = operation.op.requestBody as Json | undefined;
    if (req.body === undefined) {
      if (requestBody?.required) problems.push(`${where}: the document requires a body, none was sent`);
      return problems;
    }
    const contentType = { json: 'application/json', form: 'application/x-www-form-urlencoded', multipart: 'multipart/form-data' }[req.bodyType ?? 'json'];
    const media = (requestBody?.content as Json | undefined)?.[contentType] as Json | undefined;
    if (!media) return [...problems, `${where}: request body ${contentType} is not documented`];
    const schema = this.resolve(media.schema as Schema);
    if (req.bodyType === 'json' || req.bodyType === undefined) {
      problems.push(...this.validate(schema, req.body, `${where}: request body`));
    } else if (isObject(req.body)) {
      // Form fields are text: each is read as the type its property documents.
      const properties = (schema.properties as Json | undefined) ?? {};
      const typed: Json = {};
      for (const [name, value] of Object.entries(req.body)) {
        const property = properties[name] as Schema | undefined;
        typed[name] = property && typeof value === 'string' ? this.asDocumented(property, value) : value;
      }
      problems.push(...this.validate(schema, typed, `${where}: form body`));
    }
    return problems;
  }

  /** A `$ref` schema's target (one level). */
  private resolve(schema: Schema): Schema {
    const ref = schema?.$ref;
    if (typeof ref !== 'string') return schema;
    const name = ref.replace('#/components/schemas/', '');
    return ((this.doc.components as Json).schemas as Json)[name] as Schema;
  }

  /** A text value (path, query, form) read as the documented schema would have it. */
  private asDocumented(schema: Schema, text: string, param?: Json): unknown {
    const s = this.resolve(schema);
    if (s.type === 'array') {
      // Arrays in one parameter are comma-separated (style form, explode false).
      const items = param?.explode === false ? text.split(',') : [text];
      return items.map((item) => this.asDocumented(s.items as Schema, item));
    }
    for (const candidate of this.candidates(text)) {
      if (this.validate(s, candidate, '').length === 0) return candidate;
    }
    return text;
  }

  private candidates(text: string): unknown[] {
    const out: unknown[] = [text];
    if (/^-?\d+(\.\d+)?$/.test(text)) out.push(Number(text));
    if (text === 'true' || text === 'false') out.push(text === 'true');
    return out;
  }

  private validateText(schema: Schema | undefined, text: string, param: Json, label: string): string[] {
    if (!schema || Object.keys(schema).length === 0) return [`${label}: no schema`];
    const value = this.asDocumented(schema, text, param);
    return this.validate(schema, value, `${label} (${JSON.stringify(text)})`);
  }

  private validate(schema: Schema | undefined, value: unknown, label: string): string[] {
    if (!schema) return [`${label}: no schema documented`];
    let validator = this.compiled.get(schema);
    if (!validator) {
      validator = this.ajv.compile(strictSchema(schema) as object);
      this.compiled.set(schema, validator);
    }
    if (validator(value)) return [];
    return (validator.errors ?? []).map((e) => `${label}${e.instancePath || ''} ${e.message ?? 'is invalid'}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
  }
}

/**
 * What every operation and parameter of the document must have: tags, a summary and a description; a
 * described, typed schema for every parameter; no property or parameter both required and defaulted
 * (generated clients would then demand a value the API does not need); the error shape on every error
 * response; 401, 429 and 503 on every operation that needs a token; Retry-After on 429 and 503.
 */
/** Whether a schema, or one of its alternatives, has an example. */
function hasExample(schema: Json | undefined): boolean {
  if (!isObject(schema)) return false;
  if (schema.example !== undefined || schema.examples !== undefined) return true;
  return ['oneOf', 'anyOf', 'allOf'].some((key) => Array.isArray(schema[key]) && (schema[key] as Json[]).some((s) => hasExample(s)));
}

export function hygieneProblems(doc: Json): string[] {
  const problems: string[] = [];
  const typed = (s: Json | undefined) => !!s && ['type', 'oneOf', 'anyOf', '$ref'].some((k) => k in s);
  const definedTags = new Set(((doc.tags as Json[] | undefined) ?? []).map((t) => String(t.name)));
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (!op) continue;
      const name = `${method.toUpperCase()} ${path}`;
      if (!Array.isArray(op.tags) || op.tags.length === 0) problems.push(`${name}: no tag`);
      for (const tag of (op.tags as string[]) ?? []) if (!definedTags.has(tag)) problems.push(`${name}: tag ${tag} is not among the document's tags`);
      if (!op.summary) problems.push(`${name}: no summary`);
      if (!op.description) problems.push(`${name}: no description`);
      for (const p of (op.parameters as Json[]) ?? []) {
        const schema = p.schema as Json | undefined;
        if (!p.description) problems.push(`${name}: parameter ${String(p.name)} has no description`);
        if (!typed(schema)) problems.push(`${name}: parameter ${String(p.name)} has no type (${JSON.stringify(schema)})`);
        if (p.required && schema && schema.default !== undefined) problems.push(`${name}: parameter ${String(p.name)} is required but has a default`);
        // Swagger UI's "Try it out" fills a parameter with its example (its schema's alternatives' too), and sends it unnoticed.
        if (p.example !== undefined || p.examples !== undefined || hasExample(schema))
          problems.push(`${name}: parameter ${String(p.name)} has an example (Swagger UI would send it)`);
      }
      // A body that carries the query's fields and wins over them: a prefilled body would replace what
      // the user typed in the parameters.
      const queryNames = new Set(((op.parameters as Json[]) ?? []).filter((p) => p.in === 'query').map((p) => String(p.name)));
      for (const [type, media] of Object.entries(((op.requestBody as Json | undefined)?.content as Json | undefined) ?? {})) {
        const m = media as Json;
        const ref = (m.schema as Json | undefined)?.$ref as string | undefined;
        const body = (ref ? ((doc.components as Json).schemas as Json)[ref.replace('#/components/schemas/', '')] : m.schema) as Json | undefined;
        const props = (body?.properties as Json | undefined) ?? {};
        if (!Object.keys(props).some((prop) => queryNames.has(prop))) continue;
        if (Object.values(props).some((s) => hasExample(s as Json)) || (m.example !== undefined && JSON.stringify(m.example) !== '{}'))
          problems.push(`${name}: its ${type} body overlaps the query parameters and has examples (Swagger UI would send them over the user's parameters)`);
      }
      const responses = (op.responses as Json) ?? {};
      if (!Object.keys(responses).some((s) => s.startsWith('2'))) problems.push(`${name}: no 2xx response`);
      const security = (op.security ?? doc.security ?? []) as Json[];
      if (security.length > 0) {
        for (const status of ['401', '429', '503']) if (!responses[status]) problems.push(`${name}: needs a token but documents no ${status}`);
      }
      for (const [status, response] of Object.entries(responses)) {
        if (!/^[45]/.test(status)) continue;
        const r = response as Json;
        const schema = ((r.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as Json | undefined;
        const isError = schema?.$ref === '#/components/schemas/ErrorResponse';
        if (!isError && !(path === '/health/ready' && status === '503')) problems.push(`${name}: ${status} is not the error shape {_s, _e}`);
        if ((status === '429' || status === '503') && isError && !(r.headers as Json | undefined)?.['Retry-After'])
          problems.push(`${name}: ${status} without Retry-After`);
      }
    }
  }
  const walk = (schema: unknown, where: string): void => {
    if (Array.isArray(schema)) return schema.forEach((s, i) => walk(s, `${where}[${i}]`));
    if (!isObject(schema)) return;
    const required = (schema.required as string[] | undefined) ?? [];
    for (const [prop, s] of Object.entries((schema.properties as Json | undefined) ?? {})) {
      if (required.includes(prop) && isObject(s) && s.default !== undefined) problems.push(`${where}.${prop}: required but has a default`);
      walk(s, `${where}.${prop}`);
    }
    for (const key of ['items', 'oneOf', 'anyOf', 'allOf']) if (key in schema) walk(schema[key], `${where}.${key}`);
  };
  for (const [name, schema] of Object.entries(((doc.components as Json)?.schemas as Json) ?? {})) walk(schema, name);
  return problems;
}
