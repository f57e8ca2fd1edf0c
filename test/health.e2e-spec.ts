import { describeEngines } from './support/test-app';

describeEngines('health and API docs', __filename, (ctx) => {
  it('GET /health answers ok without a token', async () => {
    const res = await ctx().http.get('/health').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('GET /health/ready checks the database', async () => {
    const res = await ctx().http.get('/health/ready').expect(200);
    expect(res.body).toEqual({ status: 'ok', checks: { database: 'up' } });
  });

  it('GET /health/metrics is read-only: ?reset=true no longer clears the event-loop figures', async () => {
    // Hold the event loop (the app runs in this process) so the histogram records a long delay.
    const until = Date.now() + 150;
    while (Date.now() < until) {
      // busy
    }
    const before = await ctx().http.get('/health/metrics').expect(200);
    expect(before.body.eventLoopDelayMs.max).toBeGreaterThanOrEqual(100);
    await ctx().http.get('/health/metrics').query({ reset: 'true' }).expect(200);
    await ctx().http.get('/health/metrics').query({ reset: '1' }).expect(200);
    const after = await ctx().http.get('/health/metrics').expect(200);
    expect(after.body.eventLoopDelayMs.max).toBeGreaterThanOrEqual(before.body.eventLoopDelayMs.max);
    const docs = await ctx().http.get('/docs-json').expect(200);
    expect(docs.body.paths['/health/metrics'].get.parameters ?? []).toEqual([]);
  });

  it('echoes a caller X-Request-Id', async () => {
    const res = await ctx().http.get('/health').set('X-Request-Id', 'trace-abc.123').expect(200);
    expect(res.headers['x-request-id']).toBe('trace-abc.123');
    // Trace ids of load balancers and base64 ids pass as they are.
    for (const id of ['Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1', 'q83vEjRWeJA+/A==', 'a,b']) {
      expect((await ctx().http.get('/health').set('X-Request-Id', id).expect(200)).headers['x-request-id']).toBe(id);
    }
    // Anything else (spaces, quotes, over 128 characters) gets an id of the service's own.
    for (const id of ['has space', 'quote"d', 'x'.repeat(129)]) {
      expect((await ctx().http.get('/health').set('X-Request-Id', id).expect(200)).headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('serves Swagger UI at /docs and OpenAPI JSON at /docs-json', async () => {
    await ctx().http.get('/docs').expect(200).expect('content-type', /html/);
    const res = await ctx().http.get('/docs-json').expect(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(res.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});
