import * as apiDocs from '../src/http/api-docs-cache';
import { API_DOCS_RENDERS_PER_WINDOW, API_DOCS_VARIANTS, apiDocsCacheOf, ApiDocsCache } from '../src/http/api-docs-cache';
import { createOpenApiDocument } from '../src/app.setup';
import { describeEngines } from './support/test-app';

/**
 * The API docs are built once per base URL and served from a cache: /docs-json (and /docs-yaml and
 * Swagger UI's swagger-ui-init.js, which carry the whole document) is the same bytes for every request
 * from one address, with its ETag; the document still names the address it was fetched from as its
 * server; made-up Host headers never keep more than API_DOCS_VARIANTS variants.
 */
describeEngines('OpenAPI: the served document is built once per base URL', __filename, (ctx) => {
  let cache: ApiDocsCache;
  let hosts = 0;
  /** A Host no request of this suite has named yet, so its first request is a miss. */
  const freshHost = () => `docs-${(hosts += 1)}.example.test:8443`;

  beforeAll(() => {
    const found = apiDocsCacheOf(ctx().app);
    if (!found) throw new Error('configureApp registered no docs cache');
    cache = found;
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('two fetches of /docs-json give the same bytes and ETag; the second is sent from the cache, not patched and serialised again', async () => {
    const host = freshHost();
    const patch = jest.spyOn(apiDocs, 'documentServedFrom');
    const renders = cache.renders;
    const first = await ctx().http.get('/docs-json').set('Host', host).buffer(true).expect(200);
    const second = await ctx().http.get('/docs-json').set('Host', host).buffer(true).expect(200);
    expect(second.text).toBe(first.text);
    expect(second.headers.etag).toBe(first.headers.etag);
    expect(second.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(patch).toHaveBeenCalledTimes(1);
    expect(cache.renders).toBe(renders + 1);
    // A client holding that copy is told it is still good.
    await ctx().http.get('/docs-json').set('Host', host).set('If-None-Match', first.headers.etag).expect(304);
    await ctx().http.get('/docs-json').set('Host', host).set('If-None-Match', first.headers.etag).set('Cache-Control', 'no-cache').expect(304);
    expect(cache.renders).toBe(renders + 1);
  });

  it('the document is the one the app builds, its server defaulting to the address it was fetched from', async () => {
    const host = freshHost();
    const res = await ctx().http.get('/docs-json').set('Host', host).expect(200);
    const built = createOpenApiDocument(ctx().app);
    const expected = JSON.parse(JSON.stringify(apiDocs.documentServedFrom(built, `http://${host}`))) as Record<string, unknown>;
    expect(res.body).toEqual(expected);
    expect(res.body.servers[0].variables.origin.default).toBe(`http://${host}`);
    // Another address gets its own server, from the same cache.
    const other = await ctx().http.get('/docs-json').set('Host', freshHost()).expect(200);
    expect(other.body.servers[0].variables.origin.default).not.toBe(`http://${host}`);
    expect({ ...other.body, servers: undefined }).toEqual({ ...expected, servers: undefined });
  });

  it('/docs-yaml and swagger-ui-init.js are cached the same way, and name the same server', async () => {
    const host = freshHost();
    const patch = jest.spyOn(apiDocs, 'documentServedFrom');
    for (let i = 0; i < 2; i += 1) {
      const yaml = await ctx().http.get('/docs-yaml').set('Host', host).buffer(true).expect(200);
      expect(yaml.headers['content-type']).toMatch(/^text\/yaml/);
      expect(yaml.text).toMatch(/^openapi: 3\.0\.3$/m);
      expect(yaml.text).toContain(`default: http://${host}`);
      const init = await ctx().http.get('/docs/swagger-ui-init.js').set('Host', host).buffer(true).expect(200);
      expect(init.headers['content-type']).toMatch(/^application\/javascript/);
      expect(init.text).toContain(`"default": "http://${host}"`);
    }
    expect(patch).toHaveBeenCalledTimes(2);
  });

  it(`made-up Host headers never keep more than ${API_DOCS_VARIANTS} variants: the least recently asked is dropped`, async () => {
    const sprayed: string[] = [];
    for (let i = 0; i < 3 * API_DOCS_VARIANTS; i += 1) {
      const host = freshHost();
      sprayed.push(host);
      const res = await ctx().http.get('/docs-json').set('Host', host).expect(200);
      expect(res.body.servers[0].variables.origin.default).toBe(`http://${host}`);
      expect(cache.variants).toBeLessThanOrEqual(API_DOCS_VARIANTS);
    }
    expect(cache.variants).toBe(API_DOCS_VARIANTS);
    // The latest is still kept; the first was dropped, and is built again when asked.
    const renders = cache.renders;
    await ctx()
      .http.get('/docs-json')
      .set('Host', sprayed[sprayed.length - 1])
      .expect(200);
    expect(cache.renders).toBe(renders);
    const again = await ctx().http.get('/docs-json').set('Host', sprayed[0]).expect(200);
    expect(again.body.servers[0].variables.origin.default).toBe(`http://${sprayed[0]}`);
    expect(cache.renders).toBe(renders + 1);
    expect(cache.variants).toBe(API_DOCS_VARIANTS);
  });
  it(`builds at most ${API_DOCS_RENDERS_PER_WINDOW} answers for new addresses a minute; past that a new Host gets the node's own address, from the cache`, async () => {
    const own = `http://localhost:${ctx().config.server.port}`;
    // Whatever the tests before used of the budget: new hosts until one is answered with the node's own base.
    let fallback: { body: { servers: Array<{ variables: { origin: { default: string } } }> } } | undefined;
    for (let i = 0; i <= API_DOCS_RENDERS_PER_WINDOW && !fallback; i += 1) {
      const host = freshHost();
      const res = await ctx().http.get('/docs-json').set('Host', host).expect(200);
      if (res.body.servers[0].variables.origin.default !== `http://${host}`) fallback = res;
    }
    expect(fallback?.body.servers[0].variables.origin.default).toBe(own);
    const renders = cache.renders;
    for (let i = 0; i < 10; i += 1) {
      const res = await ctx().http.get('/docs-json').set('Host', freshHost()).expect(200);
      expect(res.body.servers[0].variables.origin.default).toBe(own);
      const yaml = await ctx().http.get('/docs-yaml').set('Host', freshHost()).expect(200);
      expect(yaml.text).toContain(`default: ${own}`);
    }
    // The own base's yaml was built once; nothing else.
    expect(cache.renders).toBeLessThanOrEqual(renders + 1);
  });
});
