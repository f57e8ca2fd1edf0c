import { INestApplication } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { ApiValidationPipe } from './common/validation/api-validation.pipe';
import { requestIdMiddleware } from './http/request-id.middleware';
import { answerClientErrors, letHeadersThrough, requireHost } from './http/client-errors';
import type { Request } from 'express';
import { AppConfig } from './config/app-config';
import { baseUrlOf, ownBaseUrl } from './http/base-url';
import { Lifecycle } from './lifecycle/lifecycle.service';
import { LiveIoAdapter } from './live/live-io.adapter';
import { answerConditionalRequests } from './http/conditional-requests';
import { LiveSessionLimits } from './live/live-sessions';
import { DataSource } from 'typeorm';
import { corsMiddleware } from './http/cors';
import { ConnectionGuard } from './lifecycle/connection-guard';
import { compressionMiddleware } from './http/compression';
import { httpMetrics } from './metrics/http-metrics';
import { Metrics } from './metrics/metrics.service';
import { poolUseOf } from './metrics/pool-use';
import { Transactions } from './database/transactions';
import { RateLimiter } from './rate-limit/rate-limiter';
import { ipRateLimitMiddleware } from './rate-limit/ip-rate-limit.middleware';
import { ApiDocsCache, documentServedFrom, registerApiDocsCache } from './http/api-docs-cache';
import type { RequestHandler } from 'express';
import { apiDocsHeaders } from './http/api-docs-headers';

/** Where Swagger UI (and its assets), the OpenAPI JSON and its YAML are served. */
const DOCS_PATH = '/docs';
const DOCS_JSON_PATH = '/docs-json';
const DOCS_YAML_PATH = '/docs-yaml';

/**
 * Everything the HTTP app needs besides its modules; shared by main.ts and the e2e tests so that
 * tests run exactly the app that ships.
 */
export function configureApp(app: NestExpressApplication): void {
  const config = app.get(AppConfig);
  const metrics = app.get(Metrics);
  const dataSource = app.get(DataSource);
  metrics.readPool(() => poolUseOf(dataSource));
  const transactions = app.get(Transactions);
  if (!transactions.isMysql) metrics.readSqliteWal(() => transactions.sqliteWalBytes);
  // Caps on open connections and deadlines for idle ones, before the server listens.
  const connections = new ConnectionGuard(config.server, metrics);
  connections.apply(app.getHttpServer());
  // Requests Node's parser or deadlines refuse (400, 408, 431) get the error shape and a request id.
  answerClientErrors(app.getHttpServer());
  letHeadersThrough(app.getHttpServer());
  app.use(requestIdMiddleware);
  app.use(requireHost);
  // Requests in flight, for the graceful shutdown and the metrics, from the first middleware on.
  const lifecycle = app.get(Lifecycle);
  lifecycle.watch(app.getHttpServer(), () => connections.lingeringConnections);
  app.use(lifecycle.track);
  metrics.countRequestsInFlight(() => lifecycle.requestsInFlight);
  app.use(httpMetrics(metrics));
  // Before routing, so that preflights are answered and error responses carry the headers too.
  app.use(corsMiddleware(config.server.corsOrigins));
  app.use(compressionMiddleware());
  app.disable('x-powered-by');
  // A conditional GET gets its 304 also when it says Cache-Control: no-cache, as fetch() makes it.
  answerConditionalRequests((app.getHttpAdapter().getInstance() as { request: object }).request);
  app.set('trust proxy', config.server.proxyTrust);
  app.useGlobalFilters(new ApiExceptionFilter());
  app.useGlobalPipes(new ApiValidationPipe());
  // Socket.IO handshakes never reach Express: the per-IP limit and the cap on sessions per address are
  // applied to them by Engine.IO's allowRequest (LiveSessionLimits).
  const sessions = new LiveSessionLimits(config, app.get(RateLimiter), metrics);
  app.useWebSocketAdapter(new LiveIoAdapter(app, config.redis, config.server.liveConnectTimeoutMs, sessions));
  // Signals are handled by main.ts (Lifecycle.shutdown): requests in flight finish before the app closes.
  // The API docs and paths no route matches reach no controller, so no guard: the per-IP limit (the
  // same counter as IpRateLimitGuard's) is counted for them by a middleware, before SwaggerModule's
  // handlers and before the 404.
  const ipLimit = ipRateLimitMiddleware(app.get(RateLimiter));
  app.use([DOCS_PATH, DOCS_JSON_PATH, DOCS_YAML_PATH], ipLimit);
  // Where a bearer token is pasted: no framing by other sites, no sniffing, a Content-Security-Policy.
  app.use([DOCS_PATH, DOCS_JSON_PATH, DOCS_YAML_PATH], apiDocsHeaders(config));
  beforeNotFoundHandler(app, ipLimit);
  setupSwagger(app);
}

/**
 * Mounts `middleware` right before the handler that answers requests no route matched (404 -404):
 * Nest registers that handler at init, after every route, through the HTTP adapter's setNotFoundHandler.
 */
function beforeNotFoundHandler(app: NestExpressApplication, middleware: RequestHandler): void {
  const adapter = app.getHttpAdapter();
  const setNotFoundHandler = adapter.setNotFoundHandler?.bind(adapter);
  if (!setNotFoundHandler) throw new Error('The HTTP adapter has no setNotFoundHandler: unmatched requests would not be rate limited');
  adapter.setNotFoundHandler = (...args: Parameters<typeof setNotFoundHandler>): unknown => {
    adapter.getInstance().use(middleware);
    return setNotFoundHandler(...args);
  };
}

/** The tags of the document, in the order Swagger UI shows them. */
const TAGS: [string, string][] = [
  ['Goods', 'The goods catalog: list and search, look-ups, register, updates, deletes, sync and the spreadsheet import'],
  ['Sales status', "Set a campaign item's sales status (ON_SALE, ALMOST_SOLD_OUT, SOLD_OUT), optionally with a notice or a chat line"],
  ['Stock', "A campaign item's stock: set it, take from it (orders), put back (returns, restocks); the sales status follows it"],
  ['Campaigns console', 'Campaigns (broadcasts) for operator tools: create, list, change, status moves, delete, chat and notice'],
  ['Webhooks console', "Webhook endpoints that tell the shop's systems what happens: register, change, rotate the signing secret, delivery log, replay"],
  ['Campaign goods', 'The goods of a campaign: add, list, reorder, the item showing now, remove'],
  ['Public campaigns', 'Public broadcast information for players; no token'],
  ['Media', 'The hosted images and thumbnails; no token'],
  ['Health', 'Liveness, readiness and process metrics; no token, not rate limited'],
];

/** The OpenAPI document of the app (served at /docs-json; `npm run openapi` writes it to openapi.json). */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const { server } = app.get(AppConfig);
  const builder = new DocumentBuilder()
    .setTitle('livegoods API')
    .setDescription(
      'Goods catalog, campaigns and live sales status. Authenticated routes take `Authorization: Bearer <JWT>` ' +
        'signed HS256 by the customer with its secretKey, carrying `accessKey` (equal to the path segment) and `exp` ' +
        '(at most TOKEN_MAX_TTL, 30 days by default, ahead); operations marked `security: []` need no token. ' +
        'Errors are `{"_s": <code>, "_e": "<message>"}` (plus `errors[]` for validation failures). ' +
        'The full reference is docs/api-reference.md in the repository.',
    )
    .setOpenAPIVersion('3.0.3')
    .setVersion('1')
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addServer('{origin}', 'This service: its scheme, host and port', {
      origin: {
        default: server.publicBaseUrl || `http://localhost:${server.port}`,
        description: 'Where the service is reached (PUBLIC_BASE_URL when set)',
      },
    })
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A JWT signed by the customer (docs/authentication.md)' })
    .addSecurityRequirements('bearer');
  for (const [name, description] of TAGS) builder.addTag(name, description);
  const config = builder.build();
  config.info.contact = { name: 'livegoods maintainers (issues on the project repository)' };
  return withoutPrefilledParameters(SwaggerModule.createDocument(app, config));
}

type Described = { example?: unknown; description?: string };
type SchemaNode = Described & { $ref?: string; properties?: Record<string, SchemaNode>; oneOf?: SchemaNode[]; anyOf?: SchemaNode[]; allOf?: SchemaNode[] };
type ParameterNode = Described & { in?: string; name?: string; schema?: SchemaNode };
type OperationNode = {
  parameters?: ParameterNode[];
  requestBody?: { content?: Record<string, { schema?: SchemaNode; example?: unknown }> };
};

/** Removes every `example` of a schema (its alternatives included) and returns the first one found. */
function takeExample(node: SchemaNode | undefined): unknown {
  if (!node || typeof node !== 'object') return undefined;
  let found = node.example;
  delete node.example;
  for (const alternative of [...(node.oneOf ?? []), ...(node.anyOf ?? []), ...(node.allOf ?? [])]) {
    const inner = takeExample(alternative);
    if (found === undefined) found = inner;
  }
  return found;
}

/** `example` moved to the end of the description (as "Example: `…`."), unless the description shows it already. */
function describeExample(target: Described, example: unknown): void {
  if (example === undefined) return;
  const shown = typeof example === 'string' ? example : JSON.stringify(example);
  const description = (target.description ?? '').trim();
  if (!description.includes(shown)) target.description = `${description}${description && !/[.!?]$/.test(description) ? '.' : ''} Example: \`${shown}\`.`.trim();
}

/**
 * Examples Swagger UI's "Try it out" would send without the user seeing them, moved into descriptions:
 * - every parameter's (its schema's alternatives included): Swagger UI fills each parameter with its
 *   example and sends the optional ones the user does not notice: a notice and a chat line pushed to a
 *   campaign's viewers, one Idempotency-Key for every write (422 from the second operation on), a paging
 *   cursor that empties a list, a `from`/`to` range that empties the public list;
 * - the body's, where the body carries the same fields as the query string and wins over it (sales
 *   status, stock): the prefilled body would replace what the user typed in the parameters (another
 *   item set SOLD_OUT, a notice and a chat line posted). That body starts as `{}` instead.
 * Other bodies keep theirs: the body is shown whole, to be edited.
 */
export function withoutPrefilledParameters(document: OpenAPIObject): OpenAPIObject {
  const schemas = (document.components?.schemas ?? {}) as Record<string, SchemaNode>;
  const resolve = (node: SchemaNode | undefined) => (node?.$ref ? schemas[node.$ref.replace('#/components/schemas/', '')] : node);
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as OperationNode[]) {
      if (!operation || typeof operation !== 'object') continue;
      const parameters = Array.isArray(operation.parameters) ? operation.parameters : [];
      for (const parameter of parameters) {
        const inner = takeExample(parameter.schema);
        const example = parameter.example ?? inner;
        delete parameter.example;
        describeExample(parameter, example);
      }
      const queryNames = new Set(parameters.filter((p) => p.in === 'query').map((p) => p.name));
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
        const body = resolve(media.schema);
        if (!body?.properties || !Object.keys(body.properties).some((name) => queryNames.has(name))) continue;
        for (const property of Object.values(body.properties)) describeExample(property, takeExample(property));
        delete media.example;
        // An empty body to start from, where one is valid (no field of it is required in the body).
        if (type === 'application/json' && !(body as { required?: string[] }).required?.length) media.example = {};
      }
    }
  }
  return document;
}

function setupSwagger(app: NestExpressApplication): void {
  const document = createOpenApiDocument(app);
  const config = app.get(AppConfig);
  const baseOf = (req: Request) => baseUrlOf(req, config);
  // The node's own base, which the cache answers with when it builds no more variants for a while (and
  // then sets on the request, for SwaggerModule's handler to build that one).
  const ownBase = ownBaseUrl(config);
  const docsBaseOf = (req: Request) => (req as Request & { docsBaseUrl?: string }).docsBaseUrl ?? baseOf(req);
  // The answers that carry the whole document are built once per base URL and path, then sent from the
  // cache (registered first, so that they answer before SwaggerModule's own handlers).
  const cache = new ApiDocsCache();
  registerApiDocsCache(app, cache);
  for (const path of [DOCS_JSON_PATH, DOCS_YAML_PATH, `${DOCS_PATH}/swagger-ui-init.js`, `${DOCS_PATH}${DOCS_PATH}/swagger-ui-init.js`]) {
    app
      .getHttpAdapter()
      .getInstance()
      .get(path, cache.handler(path, baseOf, ownBase));
  }
  SwaggerModule.setup(DOCS_PATH.slice(1), app, document, {
    jsonDocumentUrl: DOCS_JSON_PATH.slice(1),
    yamlDocumentUrl: DOCS_YAML_PATH.slice(1),
    customSiteTitle: 'livegoods API',
    // No badge loaded from validator.swagger.io (which would be sent the document's address); the page's
    // Content-Security-Policy allows images from this origin only.
    swaggerOptions: { validatorUrl: null },
    // The served document's server defaults to where it was fetched from (PUBLIC_BASE_URL when set), so
    // Swagger UI's "Try it out" calls this service wherever it runs.
    patchDocumentOnRequest: <TRequest>(req: TRequest, _res: unknown, doc: OpenAPIObject): OpenAPIObject => documentServedFrom(doc, docsBaseOf(req as Request)),
  });
}
