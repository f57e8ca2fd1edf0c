import { sign } from 'jsonwebtoken';
import type { Response } from 'supertest';
import { CustomersService } from '../src/customers/customers.service';
import { LiveGateway } from '../src/live/live.gateway';
import { eventually, Payload, Viewer } from './support/live-client';
import { SUMMARY_KEYS, CAMPAIGN_KEYS, DAY, keys, expectError, expectOk, Body, liveHarness } from './support/live-harness';
import { describeEngines, TestCustomer } from './support/test-app';

/** Tenant isolation of campaigns and the public broadcast endpoints (no token), and their OpenAPI paths (docs/api-reference.md). */

describeEngines(
  'live campaigns: public information',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const { http, con, salesStatus, createCampaign, liveCampaign, viewer, register } = live;
    let base = '';
    let A: TestCustomer;
    let B: TestCustomer;
    beforeAll(() => {
      ({ base, A, B } = live);
    });

    describe('tenant isolation', () => {
      it("A's token never opens B's campaigns: B's path is 401, B's campaignKey under A's path is 404 -710", async () => {
        const b = await liveCampaign(B, 1);
        const bViewer = await viewer(B, b.key);
        await bViewer.next('campaign.snapshot');
        const aOnB = con(B, A.auth());
        expectError(await aOnB.get(b.key), 401, -102);
        expectError(await aOnB.list(), 401, -102);
        expectError(await aOnB.status(b.key, 'ONAIR'), 401, -102);
        expectError(await aOnB.chat(b.key, { message: 'x' }), 401, -102);
        expectError(await aOnB.remove(b.key), 401, -102);
        expectError(await salesStatus(B, b.key, 'id', { goodsId: b.goods[0].id, salesStatus: 'SOLD_OUT' }, 'json', A.auth()), 401, -102);

        const aOwn = con(A);
        expectError(await aOwn.get(b.key), 404, -710);
        expectError(await aOwn.patch(b.key, { title: 'mine' }), 404, -710);
        expectError(await aOwn.status(b.key, 'ONAIR'), 404, -710);
        expectError(await aOwn.goods(b.key), 404, -710);
        expectError(await aOwn.addGoods(b.key, { goodsIds: [b.goods[0].id] }), 404, -710);
        expectError(await aOwn.order(b.key, [b.goods[0].id]), 404, -710);
        expectError(await aOwn.showing(b.key, b.goods[0].id, true), 404, -710);
        expectError(await aOwn.removeGoods(b.key, b.goods[0].id), 404, -710);
        expectError(await aOwn.chat(b.key, { message: 'x' }), 404, -710);
        expectError(await aOwn.remove(b.key), 404, -710);
        expectError(await salesStatus(A, b.key, 'id', { goodsId: b.goods[0].id, salesStatus: 'SOLD_OUT' }), 404, -710);
        expect((await aOwn.list()).body.results.map((c: Payload) => c.campaignKey)).not.toContain(b.key);

        await bViewer.settle(300);
        expect(bViewer.unread).toEqual([]);
        const still = await con(B).get(b.key);
        expect(still.body).toMatchObject({ campaignStatus: 'READY', title: 'Friday live' });
        expect(still.body.goods[0].salesStatus).toBe('ON_SALE');
        expect(still.body.goods[0].currency).toBe('USD');
      });
    });

    describe('public broadcast information (no token)', () => {
      let P: TestCustomer;
      const at: Record<string, Payload> = {};
      const now = Date.now();
      const pub = (path: string, query: Body = {}) => http().get(`/v1/campaigns/${P.accessKey}${path}`).query(query);
      const order = (res: Response) => res.body.results.map((c: Payload) => c.title);

      beforeAll(async () => {
        P = await ctx().createCustomer('Public');
        const make = async (title: string, scheduledAt: number | null, visible: boolean, status: 'READY' | 'ONAIR' | 'CLOSED', goods = 0) => {
          const c = await liveCampaign(P, goods, { title, scheduledAt, collectionVisible: visible, description: `${title} description` });
          if (status !== 'READY') expectOk(await con(P).status(c.key, 'ONAIR'));
          if (status === 'CLOSED') expectOk(await con(P).status(c.key, 'CLOSED'));
          at[title] = { ...c.campaign, goods: c.goods };
        };
        await make('closed-2d', now - 2 * DAY, true, 'CLOSED');
        await make('late-ready-1d', now - DAY, true, 'READY');
        await make('onair', now - 3600_000, true, 'ONAIR', 2);
        await make('private-1d', now + DAY, false, 'READY');
        await make('next-2d', now + 2 * DAY, true, 'READY', 1);
        await make('later-5d', now + 5 * DAY, true, 'READY');
      });

      it('lists only collection-visible campaigns, ordered by scheduledAt, summary form, with a Cache-Control header', async () => {
        const res = await pub('');
        expectOk(res);
        expect(res.headers['cache-control']).toMatch(/max-age=\d+/);
        expect(res.body._s).toBe(0);
        expect(res.body.totalCount).toBe(5);
        expect(order(res)).toEqual(['closed-2d', 'late-ready-1d', 'onair', 'next-2d', 'later-5d']);
        for (const c of res.body.results) {
          expect(keys(c)).toEqual(CAMPAIGN_KEYS);
          expect(c.collectionVisible).toBe(true);
        }
        const nobody = await http().get('/v1/campaigns/NoSuchAccessKey000000');
        expectOk(nobody);
        expect(nobody.body).toEqual({ results: [], totalCount: 0, _s: 0 });
      });

      it('filters by status (comma list) and by scheduledAt from/to, in epoch ms or ISO-8601', async () => {
        expect(order(await pub('', { status: 'READY,ONAIR' }))).toEqual(['late-ready-1d', 'onair', 'next-2d', 'later-5d']);
        expect(order(await pub('', { status: 'CLOSED' }))).toEqual(['closed-2d']);
        expect(order(await pub('', { status: 'onair' }))).toEqual(['onair']);
        const refused = await pub('', { status: 'READY,LIVE' });
        expectError(refused, 400, -510);
        // An error is never kept by a cache, though the route's answers may be.
        expect(refused.headers['cache-control']).toBe('no-store');
        // Given twice, status is refused like every other parameter (the list is comma-separated).
        const twice = await http().get(`/v1/campaigns/${P.accessKey}?status=READY&status=ONAIR`);
        expectError(twice, 400, -510);
        expect(twice.body._e).toContain('status was given 2 times; give it once');
        expect(twice.body.errors).toEqual([{ field: 'status', message: expect.stringContaining('given 2 times') }]);
        const from = now - 1.5 * DAY;
        const to = now + 3 * DAY;
        expect(order(await pub('', { from, to }))).toEqual(['late-ready-1d', 'onair', 'next-2d']);
        expect(order(await pub('', { from: new Date(from).toISOString(), to: new Date(to).toISOString() }))).toEqual(['late-ready-1d', 'onair', 'next-2d']);
        expect(order(await pub('', { from: now }))).toEqual(['next-2d', 'later-5d']);
        expect(order(await pub('', { to: new Date(now).toISOString() }))).toEqual(['closed-2d', 'late-ready-1d', 'onair']);
        const counted = await pub('', { from, to, status: 'READY' });
        expect(order(counted)).toEqual(['late-ready-1d', 'next-2d']);
        expect(counted.body.totalCount).toBe(2);
        expectError(await pub('', { from: 'yesterday' }), 400, -510);
        // The list's URL as the contract writes it, from= and to= empty: not given, like every empty parameter.
        const written = await http().get(`/v1/campaigns/${P.accessKey}?status=READY,ONAIR,CLOSED&from=&to=&page=1&count=10&detail=false`);
        expect(written.status).toBe(200);
        expect(order(written)).toEqual(order(await pub('', {})));
        expect(order(await pub('', { from: ' ', to: now - 1.5 * DAY }))).toEqual(['closed-2d']);
      });

      it('pages with page/count (count above 100 is served as 100)', async () => {
        const res = await pub('', { page: 2, count: 2 });
        expectOk(res);
        expect(order(res)).toEqual(['onair', 'next-2d']);
        expect(res.body.totalCount).toBe(5);
        expect(order(await pub('', { page: 3, count: 2 }))).toEqual(['later-5d']);
        expectOk(await pub('', { count: 100 }));
        expectOk(await pub('', { count: 101 }));
        expectError(await pub('', { count: 0 }), 400, -510);
        expectError(await pub('', { page: 0 }), 400, -510);
      });

      it('detail=true adds description and the goods with their statuses', async () => {
        const res = await pub('', { detail: true, status: 'ONAIR' });
        expectOk(res);
        const [c] = res.body.results;
        expect(keys(c)).toEqual([...CAMPAIGN_KEYS, 'description', 'goods'].sort());
        expect(c.description).toBe('onair description');
        expect(c.goods.map((g: Payload) => [g.goodsId, g.salesStatus])).toEqual(at.onair.goods.map((g: Payload) => [String(g.id), 'ON_SALE']));
        for (const g of c.goods) expect(keys(g)).toEqual(SUMMARY_KEYS);
      });

      it('one campaign: detail form, also for a private known key; an unknown key is 200 NOT_EXIST', async () => {
        const res = await pub(`/${at['private-1d'].campaignKey}`);
        expectOk(res);
        expect(res.headers['cache-control']).toMatch(/max-age=\d+/);
        expect(keys(res.body)).toEqual([...CAMPAIGN_KEYS, 'description', 'goods'].sort());
        expect(res.body).toMatchObject({ title: 'private-1d', collectionVisible: false, description: 'private-1d description', goods: [] });
        const unknown = await pub('/NoSuchCampaign1');
        expectOk(unknown);
        expect(unknown.body).toEqual({ campaignKey: 'NoSuchCampaign1', campaignStatus: 'NOT_EXIST' });
        const otherTenant = await http().get(`/v1/campaigns/${A.accessKey}/${at['next-2d'].campaignKey}`);
        expect(otherTenant.body).toEqual({ campaignKey: at['next-2d'].campaignKey, campaignStatus: 'NOT_EXIST' });
      });

      it('upcoming: the ONAIR one when includeOnAir (default), else the soonest READY after now; collection-visible only', async () => {
        const onair = await pub('/upcoming');
        expectOk(onair);
        expect(onair.headers['cache-control']).toMatch(/max-age=\d+/);
        expect(onair.body).toMatchObject({ title: 'onair', campaignStatus: 'ONAIR', description: 'onair description' });
        expect(onair.body.goods).toHaveLength(2);
        expect((await pub('/upcoming', { includeOnAir: true })).body.title).toBe('onair');
        expect((await pub('/upcoming', { includeOnAir: false })).body.title).toBe('next-2d');
        expectError(await pub('/upcoming', { includeOnAir: 'sometimes' }), 400, -510);

        // No parameter exposes a private campaign on this unauthenticated endpoint: the former
        // includePrivate is an unknown parameter now, ignored (the answer is the one without it).
        expect((await pub('/upcoming', { includeOnAir: false, includePrivate: true })).body.title).toBe('next-2d');
        expect((await pub('/upcoming', { includePrivate: true })).body.title).toBe('onair');
        expect((await pub('/upcoming', { includeOnAir: false, includePrivate: 'yes please' })).body.title).toBe('next-2d');

        // A private ONAIR campaign is never the answer; none visible at all → NOT_EXIST.
        const Q = await ctx().createCustomer('Quiet');
        const q = await createCampaign(Q, { title: 'secret live', collectionVisible: false });
        expectOk(await con(Q).status(q.campaignKey, 'ONAIR'));
        await createCampaign(Q, { title: 'secret next', collectionVisible: false, scheduledAt: Date.now() + DAY });
        for (const query of [{}, { includePrivate: true }, { includePrivate: 1 }, { includeOnAir: false, includePrivate: true }]) {
          const none = await http().get(`/v1/campaigns/${Q.accessKey}/upcoming`).query(query);
          expectOk(none);
          expect(none.body).toEqual({ campaignStatus: 'NOT_EXIST' });
        }
        for (const query of [{}, { includePrivate: true }, { detail: true, includePrivate: true }]) {
          const listed = await http().get(`/v1/campaigns/${Q.accessKey}`).query(query);
          expectOk(listed);
          expect(listed.body).toEqual({ results: [], totalCount: 0, _s: 0 });
        }
        // The key itself still opens the private campaign (known keys answer even when private).
        expect((await http().get(`/v1/campaigns/${Q.accessKey}/${q.campaignKey}`)).body.title).toBe('secret live');
        const nobody = await http().get('/v1/campaigns/NoSuchAccessKey000000/upcoming');
        expect(nobody.body.campaignStatus).toBe('NOT_EXIST');
      });

      it('upcoming after the running one closes: the soonest READY scheduled after now', async () => {
        const R = await ctx().createCustomer('Rotation');
        const live = await createCampaign(R, { title: 'live', collectionVisible: true, scheduledAt: now - 1000 });
        await createCampaign(R, { title: 'past-ready', collectionVisible: true, scheduledAt: now - DAY });
        await createCampaign(R, { title: 'soon', collectionVisible: true, scheduledAt: now + 3600_000 });
        await createCampaign(R, { title: 'later', collectionVisible: true, scheduledAt: now + 7200_000 });
        expectOk(await con(R).status(live.campaignKey, 'ONAIR'));
        const up = () => http().get(`/v1/campaigns/${R.accessKey}/upcoming`);
        expect((await up()).body.title).toBe('live');
        expectOk(await con(R).status(live.campaignKey, 'CLOSED'));
        expect((await up()).body.title).toBe('soon');
      });

      it('userCount is the number of viewers connected right now', async () => {
        const key = at['next-2d'].campaignKey;
        const count = async () => (await pub(`/${key}`)).body.userCount as number;
        expect(await count()).toBe(0);
        const viewers = [await viewer(P, key), await viewer(P, key), await viewer(P, key)];
        expect(await eventually(count, (n) => n === 3)).toBe(3);
        const listed = (await pub('', { status: 'READY', from: now })).body.results.find((c: Payload) => c.campaignKey === key);
        expect(listed.userCount).toBe(3);
        expect((await con(P).get(key)).body.userCount).toBe(3);
        viewers[0].close();
        expect(await eventually(count, (n) => n === 2)).toBe(2);
        viewers[1].close();
        viewers[2].close();
        expect(await eventually(count, (n) => n === 0)).toBe(0);
      });

      it("an operator's console connection (auth.role 'operator' with the customer's token) gets the events but is not a viewer in userCount", async () => {
        const key = at['later-5d'].campaignKey;
        const count = async () => (await pub(`/${key}`)).body.userCount as number;
        const operator = await Viewer.connect(base, { accessKey: P.accessKey, campaignKey: key, role: 'operator', token: P.token() });
        const snap = await operator.next('campaign.snapshot');
        const audience = await viewer(P, key);
        expect(await eventually(count, (n) => n === 1)).toBe(1);
        expectOk(await con(P).chat(key, { message: 'to everyone' }));
        expect(await operator.next('chat.message')).toMatchObject({ seq: snap.seq + 1, message: 'to everyone' });
        operator.close();
        audience.close();
        expect(await eventually(count, (n) => n === 0)).toBe(0);
      });

      it("claiming role 'operator' without the customer's valid token is refused (viewer counts cannot be faked)", async () => {
        const key = at['later-5d'].campaignKey;
        const other = await ctx().createCustomer('Someone else');
        const auth = { accessKey: P.accessKey, campaignKey: key, role: 'operator' };
        expect(await Viewer.refused(base, auth)).toMatch(/token/);
        expect(await Viewer.refused(base, { ...auth, token: 'not-a-jwt' })).toMatch(/operator/);
        expect(await Viewer.refused(base, { ...auth, token: other.token() })).toMatch(/operator/);
        expect(await Viewer.refused(base, { ...auth, token: P.token({}, { expiresIn: -3600 }) })).toMatch(/operator/);
      });

      it("an operator's console is disconnected when its token stops being valid (exp and the 60 s clock skew), as the API then refuses it", async () => {
        const key = at['later-5d'].campaignKey;
        // exp 58 s ago: still valid for 2 s (the skew allowed), then not.
        const token = P.token({}, { expiresIn: -58 });
        const operator = await Viewer.connect(base, { accessKey: P.accessKey, campaignKey: key, role: 'operator', token });
        await operator.next('campaign.snapshot');
        const lasting = await Viewer.connect(base, { accessKey: P.accessKey, campaignKey: key, role: 'operator', token: P.token() });
        await lasting.next('campaign.snapshot');
        expect(await operator.disconnected(8000)).toBe('io server disconnect');
        expect((await http().get(`/v1/goods/${P.accessKey}`).set('Authorization', `Bearer ${token}`)).status).toBe(401);
        expect(await Viewer.refused(base, { accessKey: P.accessKey, campaignKey: key, role: 'operator', token })).toMatch(/operator/);
        expect(lasting.disconnectReason).toBeNull();
        lasting.close();
      });

      it("an operator's console is disconnected once the key that signed its token is retired (rotate-secret --grace 0), as the API then refuses it", async () => {
        const R = await ctx().createCustomer('Rotating');
        const { campaignKey: key } = await createCampaign(R, { title: 'rotated' });
        const token = R.token();
        const operator = await Viewer.connect(base, { accessKey: R.accessKey, campaignKey: key, role: 'operator', token });
        await operator.next('campaign.snapshot');
        const audience = await viewer(R, key);
        const gateway = ctx().app.get(LiveGateway);
        // Rotated with a grace: the previous key still verifies, the console stays.
        const customers = ctx().app.get(CustomersService);
        await customers.rotateSecret(R.accessKey, 3600);
        await gateway.recheckOperators();
        expect(operator.disconnectReason).toBeNull();
        // Rotated again at once (after a leak): the key that signed the console's token is gone.
        const rotated = await customers.rotateSecret(R.accessKey, 0);
        expect((await http().get(`/v1/goods/${R.accessKey}`).set('Authorization', `Bearer ${token}`)).status).toBe(401);
        const fresh = sign({ accessKey: R.accessKey }, Buffer.from(rotated?.secretKey ?? '', 'base64'), { algorithm: 'HS256', expiresIn: 3600 });
        const renewed = await Viewer.connect(base, { accessKey: R.accessKey, campaignKey: key, role: 'operator', token: fresh });
        await renewed.next('campaign.snapshot');
        await gateway.recheckOperators();
        expect(await operator.disconnected(5000)).toBe('io server disconnect');
        // (Two rotations: the key that signed it is not even the previous one any more.)
        expect(await Viewer.refused(base, { accessKey: R.accessKey, campaignKey: key, role: 'operator', token })).toMatch(/role 'operator': Invalid token/);
        // A console with a token of the new key, and viewers (no token), stay.
        expect(renewed.disconnectReason).toBeNull();
        expect(audience.disconnectReason).toBeNull();
        renewed.close();
        audience.close();
      });
    });

    describe('the public answers are kept for their max-age, and dropped when the campaign changes', () => {
      let Q: TestCustomer;
      const pub = (path: string, query: Body = {}) => http().get(`/v1/campaigns/${Q.accessKey}${path}`).query(query);
      const titleBehindTheServicesBack = (key: string, title: string) =>
        ctx().dataSource.query('UPDATE campaigns SET title = ? WHERE campaignKey = ?', [title, key]);

      beforeAll(async () => {
        Q = await ctx().createCustomer('Cached');
      });

      it('answers one campaign, the list and upcoming from its copy: a change written behind its back is not seen; same ETag, 304 on If-None-Match', async () => {
        const c = await liveCampaign(Q, 2, { title: 'Kept', collectionVisible: true, scheduledAt: Date.now() + DAY });
        const first = await pub(`/${c.key}`);
        expectOk(first);
        expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(first.headers['cache-control']).toBe('public, max-age=5, stale-while-revalidate=30');
        const listed = await pub('', { detail: true, count: 100 });
        const upcoming = await pub('/upcoming');
        expect(upcoming.body.title).toBe('Kept');

        await titleBehindTheServicesBack(c.key, 'Written behind its back');
        const again = await pub(`/${c.key}`);
        expect(again.body).toEqual(first.body);
        expect(again.headers.etag).toBe(first.headers.etag);
        expect((await pub('', { detail: true, count: 100 })).body).toEqual(listed.body);
        expect((await pub('/upcoming')).body.title).toBe('Kept');
        const notModified = await pub(`/${c.key}`).set('If-None-Match', first.headers.etag);
        expect(notModified.status).toBe(304);
        // As a page's fetch() sends it when given an If-None-Match by hand.
        expect((await pub(`/${c.key}`).set('If-None-Match', first.headers.etag).set('Cache-Control', 'no-cache').set('Pragma', 'no-cache')).status).toBe(304);
        expect((await pub(`/${c.key}`).set('If-None-Match', 'W/"other"').set('Cache-Control', 'no-cache')).status).toBe(200);

        // A change through the service drops them at once.
        expectOk(await con(Q).patch(c.key, { description: 'changed' }));
        expect((await pub(`/${c.key}`)).body).toMatchObject({ title: 'Written behind its back', description: 'changed' });
        expect((await pub('', { detail: true, count: 100 })).body.results[0].title).toBe('Written behind its back');
        expect((await pub('/upcoming')).body.title).toBe('Written behind its back');
      });

      it('a large answer (over 64 KB, sent as its kept chunks) is the same JSON, its ETag moves with userCount, 304 on If-None-Match, HEAD', async () => {
        const elements = Array.from({ length: 100 }, (_, i) => ({
          name: `Large ${i} ${'가'.repeat(200)}`,
          sku: `LARGE-${i}`,
          url: `https://shop.example.com/large/${i}/${'x'.repeat(1000)}`,
          originalPrice: 1000,
          discountedPrice: 900,
        }));
        const synced = await http().post(`/v1/goods/${Q.accessKey}/sync`).set('Authorization', Q.auth()).send(elements);
        expectOk(synced);
        const campaign = await createCampaign(Q, { title: 'Large', collectionVisible: true, scheduledAt: Date.now() + 3 * DAY });
        const key = campaign.campaignKey as string;
        expectOk(await con(Q).addGoods(key, { goodsIds: synced.body.results.map((r: Payload) => r.id) }));
        for (const [path, query] of [
          [`/${key}`, {}],
          ['', { detail: true, count: 100 }],
        ] as Array<[string, Body]>) {
          const first = await pub(path, query).set('Accept-Encoding', 'identity');
          expectOk(first);
          const length = Number(first.headers['content-length']);
          expect(length).toBeGreaterThan(64 * 1024);
          expect(length).toBe(Buffer.byteLength(JSON.stringify(first.body)));
          expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
          expect(first.headers['cache-control']).toBe('public, max-age=5, stale-while-revalidate=30');
          const record = (body: Payload) => (path ? body : (body.results as Payload[]).find((c) => c.campaignKey === key)) as Payload;
          expect(record(first.body).userCount).toBe(0);
          expect((record(first.body).goods as Payload[]).map((g) => g.name)).toEqual(elements.map((e) => e.name));
          // Compressed, it decodes to the same.
          expect((await pub(path, query)).body).toEqual(first.body);
          expect((await pub(path, query).set('If-None-Match', first.headers.etag)).status).toBe(304);
          const head = await http().head(`/v1/campaigns/${Q.accessKey}${path}`).query(query).set('Accept-Encoding', 'identity');
          expect(head.status).toBe(200);
          expect(head.headers['content-length']).toBe(String(length));
          expect(head.headers.etag).toBe(first.headers.etag);

          const watching = await viewer(Q, key);
          try {
            const seen = await eventually(
              () => pub(path, query),
              (res) => record(res.body).userCount === 1,
            );
            expect(seen.headers.etag).not.toBe(first.headers.etag);
            expect(seen.body).toEqual(
              path
                ? { ...first.body, userCount: 1 }
                : { ...first.body, results: first.body.results.map((c: Payload) => (c.campaignKey === key ? { ...c, userCount: 1 } : c)) },
            );
            expect((await pub(path, query).set('If-None-Match', first.headers.etag)).status).toBe(200);
          } finally {
            watching.close();
          }
          await eventually(
            () => pub(path, query),
            (res) => record(res.body).userCount === 0,
          );
        }
      });

      it('every change of a campaign, its goods or their catalog entries shows at once', async () => {
        const c = await liveCampaign(Q, 3, { title: 'Moving', collectionVisible: true, showStock: true, scheduledAt: Date.now() + 2 * DAY });
        const [g1, g2, g3] = c.goods;
        const extra = await register(Q);
        const one = async () => (await pub(`/${c.key}`)).body;
        const inList = async () => ((await pub('', { detail: true, count: 100 })).body.results as Payload[]).find((x) => x.campaignKey === c.key) as Payload;
        /** Reads both (so they are kept), makes the change, and answers both as they are now. */
        const after = async (change: () => Promise<Response>): Promise<[Payload, Payload]> => {
          await one();
          await inList();
          expectOk(await change());
          return [await one(), await inList()];
        };
        const ids = (body: Payload) => body.goods.map((g: Payload) => g.goodsId);

        for (const body of await after(() => con(Q).addGoods(c.key, { goodsIds: [extra.id] })))
          expect(ids(body)).toEqual([g1.id, g2.id, g3.id, extra.id].map(String));
        for (const body of await after(() => con(Q).order(c.key, [g3.id]))) expect(ids(body)).toEqual([g3.id, g1.id, g2.id, extra.id].map(String));
        for (const body of await after(() => con(Q).showing(c.key, g1.id, true)))
          expect(body.goods[1]).toMatchObject({ goodsId: String(g1.id), showingNow: true });
        for (const body of await after(() => con(Q).removeGoods(c.key, extra.id))) expect(ids(body)).toEqual([g3.id, g1.id, g2.id].map(String));
        for (const body of await after(() => salesStatus(Q, c.key, 'id', { goodsId: g2.id, salesStatus: 'SOLD_OUT', notify: false })))
          expect(body.goods[2]).toMatchObject({ goodsId: String(g2.id), salesStatus: 'SOLD_OUT' });
        for (const body of await after(() => live.stock(Q, c.key, 'id', 'set', { goodsId: g3.id, stock: 50, notify: false })))
          expect(body.goods[0]).toMatchObject({ goodsId: String(g3.id), stock: 50 });
        // An order that changes no status and tells nobody (notify=false): the fast path, outside the campaign's writer.
        for (const body of await after(() => live.stock(Q, c.key, 'id', 'decrement', { goodsId: g3.id, notify: false })))
          expect(body.goods[0]).toMatchObject({ goodsId: String(g3.id), stock: 49 });
        for (const body of await after(() => con(Q).chat(c.key, { message: 'Pinned', pinned: true }))) expect(body.notice).toMatchObject({ message: 'Pinned' });
        for (const body of await after(() => con(Q).status(c.key, 'ONAIR'))) expect(body.campaignStatus).toBe('ONAIR');
        expect((await pub('/upcoming')).body.campaignKey).toBe(c.key);
        for (const body of await after(() => con(Q).status(c.key, 'CLOSED'))) expect(body.campaignStatus).toBe('CLOSED');
        // Catalog edits reach closed campaigns' answers too (viewers of a closed one are not told).
        for (const body of await after(() =>
          http().put(`/v1/goods/${Q.accessKey}`).set('Authorization', Q.auth()).send({ id: g1.id, name: 'Renamed in the catalog' }),
        ))
          expect(body.goods[1]).toMatchObject({ goodsId: String(g1.id), name: 'Renamed in the catalog' });
        for (const body of await after(() => http().delete(`/v1/goods/${Q.accessKey}/${g2.id}`).set('Authorization', Q.auth())))
          expect(ids(body)).toEqual([g3.id, g1.id].map(String));

        // A new campaign joins the list; a deleted one is NOT_EXIST.
        const titles = async () => ((await pub('', { count: 100 })).body.results as Payload[]).map((x) => x.title);
        expect(await titles()).not.toContain('Newcomer');
        const newcomer = await createCampaign(Q, { title: 'Newcomer', collectionVisible: true });
        expect(await titles()).toContain('Newcomer');
        await one();
        expectOk(await con(Q).remove(c.key));
        expect(await one()).toEqual({ campaignKey: c.key, campaignStatus: 'NOT_EXIST' });
        expect(await titles()).toEqual(expect.not.arrayContaining(['Moving']));
        expect(newcomer.campaignKey).toBeDefined();
      });
    });

    describe('OpenAPI', () => {
      it('documents the console, sales-status and public endpoints', async () => {
        const res = await http().get('/docs-json');
        expectOk(res);
        const paths = Object.keys(res.body.paths);
        for (const p of [
          '/v1/console/{accessKey}/campaigns',
          '/v1/console/{accessKey}/campaigns/{campaignKey}',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/status',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods/order',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods/{goodsId}/showing',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/goods/{goodsId}',
          '/v1/console/{accessKey}/campaigns/{campaignKey}/chat',
          '/v1/goods/{accessKey}/campaign/{campaignKey}/salesStatus/id',
          '/v1/goods/{accessKey}/campaign/{campaignKey}/salesStatus/url',
          '/v1/goods/{accessKey}/campaign/{campaignKey}/salesStatus/sku',
          '/v1/campaigns/{accessKey}',
          '/v1/campaigns/{accessKey}/upcoming',
          '/v1/campaigns/{accessKey}/{campaignKey}',
        ]) {
          expect(paths).toContain(p);
        }
        expect(res.body.components.schemas.CampaignGoodsResponse).toBeDefined();
        const upcomingParams = res.body.paths['/v1/campaigns/{accessKey}/upcoming'].get.parameters.map((p: { name: string }) => p.name);
        expect(upcomingParams).toContain('includeOnAir');
        expect(upcomingParams).not.toContain('includePrivate');
      });
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);
