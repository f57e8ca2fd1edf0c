import { useImageServer } from './support/image-server';
import { Payload } from './support/live-client';
import {
  CAMPAIGN_GOODS_KEYS,
  CAMPAIGN_GOODS_ITEM_KEYS,
  CAMPAIGN_GOODS_MEDIA_KEYS,
  keys,
  isEpochMs,
  expectError,
  expectOk,
  expectEventShape,
  Body,
  liveHarness,
} from './support/live-harness';
import { describeEngines, TestCustomer } from './support/test-app';

/** The sales-status operations in all three parameter styles, and what viewers are told (docs/api-reference.md, docs/live-protocol.md). */

const images = useImageServer();

describeEngines(
  'live campaigns: sales status',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const { http, con, salesStatus, createCampaign, register, liveCampaign, viewer } = live;
    let A: TestCustomer;
    let B: TestCustomer;
    beforeAll(() => {
      ({ A, B } = live);
    });

    describe('sales status', () => {
      it('answers the CampaignGoods object exactly as documented (media included)', async () => {
        const mediaUrl = images().url1('/photo.jpg');
        const goods = await register(A, { mediaUrl, description: null });
        expect(goods.medias).toHaveLength(1);
        const c = await createCampaign(A, { operatorName: 'Desk' });
        expectOk(await con(A).addGoods(c.campaignKey, { goodsIds: [goods.id] }));
        const before = Date.now();
        const res = await salesStatus(A, c.campaignKey, 'id', { goodsId: goods.id, salesStatus: 'SOLD_OUT' }, 'query', A.auth({ sub: 'op-7' }));
        expectOk(res);
        const body = res.body;
        expect(keys(body)).toEqual(CAMPAIGN_GOODS_KEYS);
        expect(body).toMatchObject({
          campaignId: String(c.campaignId), // as text in CampaignGoods (a number in the campaign record)
          goodsId: String(goods.id),
          sortOrder: 1,
          showingNow: false,
          salesStatus: 'SOLD_OUT',
          adminName: 'Desk',
          adminId: 'op-7',
        });
        expect(isEpochMs(body.createdAt)).toBe(true);
        expect(body.updatedAt).toBeGreaterThanOrEqual(before - 5);
        expect(body.updatedAt).toBeGreaterThanOrEqual(body.createdAt);

        const item = body.goods;
        expect(keys(item)).toEqual(CAMPAIGN_GOODS_ITEM_KEYS);
        expect(item).toMatchObject({
          id: String(goods.id),
          customerId: String(A.id),
          name: goods.name,
          brand: 'Sampletech',
          description: null,
          url: goods.url,
          sku: goods.sku,
          originalPrice: goods.originalPrice,
          discountedPrice: 9000.5,
          customOriginalPrice: null,
          customDiscountedPrice: null,
          currency: 'KRW',
          discountPercentage: 10,
          checked: false,
          locked: false,
        });
        expect(typeof item.adminId).toBe('string');
        expect(typeof item.adminName).toBe('string');
        expect(isEpochMs(item.createdAt) && isEpochMs(item.updatedAt)).toBe(true);

        expect(item.medias).toHaveLength(1);
        const media = item.medias[0];
        const stored = goods.medias[0];
        expect(keys(media)).toEqual(CAMPAIGN_GOODS_MEDIA_KEYS);
        expect(media).toMatchObject({
          id: String(stored.id),
          customerId: String(A.id),
          mediaType: 'IMAGE',
          name: null,
          description: null,
          originalUrl: mediaUrl,
          url: stored.url,
          width: 800,
          height: 600,
          size: String(stored.size),
        });
        expect(typeof media.historyId).toBe('string');
        expect(media.checksum === null || typeof media.checksum === 'string').toBe(true);
        expect(isEpochMs(media.createdAt) && isEpochMs(media.updatedAt)).toBe(true);
        expect(media.thumbnails.map((t: Payload) => [t.width, t.height, t.original])).toEqual([
          [120, 90, false],
          [240, 180, false],
          [480, 360, false],
        ]);
        for (const t of media.thumbnails) {
          expect(t.imageUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/media\//);
          expect(Number.isInteger(t.size)).toBe(true);
        }

        // The console list shows the same object.
        const listed = (await con(A).goods(c.campaignKey)).body.results[0];
        expect(listed).toEqual(body);
      });

      it("a 100x50 image: three thumbnails 120, 240 and 480 px wide in CampaignGoods, and the viewers' thumbnailUrl is the 240 px one", async () => {
        const goods = await register(A, { mediaUrl: images().url1('/small.png') });
        expect(goods.medias[0].thumbnails.map((t: Payload) => [t.width, t.height, t.original])).toEqual([
          [120, 60, false],
          [240, 120, false],
          [480, 240, false],
        ]);
        const c = await createCampaign(A);
        expectOk(await con(A).addGoods(c.campaignKey, { goodsIds: [goods.id] }));
        const res = await salesStatus(A, c.campaignKey, 'id', { goodsId: goods.id, salesStatus: 'SOLD_OUT' }, 'query');
        expectOk(res);
        const thumbnails = res.body.goods.medias[0].thumbnails as Payload[];
        expect(thumbnails.map((t) => [t.width, t.height, t.original])).toEqual([
          [120, 60, false],
          [240, 120, false],
          [480, 240, false],
        ]);
        const path = (url: string) => new URL(url).pathname;
        for (const t of thumbnails) {
          const file = await http().get(path(t.imageUrl));
          expect({ status: file.status, length: Number(file.headers['content-length']) }).toEqual({ status: 200, length: t.size });
        }
        const v = await viewer(A, c.campaignKey);
        const snap = await v.next('campaign.snapshot');
        expect(snap.goods).toHaveLength(1);
        expect(path(snap.goods[0].thumbnailUrl)).toBe(path(thumbnails[1].imageUrl));
      });

      it.each([
        ['id', 'query'],
        ['id', 'form'],
        ['id', 'json'],
        ['url', 'query'],
        ['url', 'form'],
        ['url', 'json'],
        ['sku', 'query'],
        ['sku', 'form'],
        ['sku', 'json'],
      ] as const)('locates the item by %s with parameters as %s', async (by, style) => {
        const { key, goods } = await liveCampaign(A, 2);
        const target = goods[1];
        const locator = by === 'id' ? { goodsId: target.id } : by === 'url' ? { url: target.url } : { sku: target.sku };
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        for (const status of ['ALMOST_SOLD_OUT', 'SOLD_OUT', 'ON_SALE']) {
          const res = await salesStatus(A, key, by, { ...locator, salesStatus: status, name: `Op ${style}` }, style);
          expectOk(res);
          expect(res.body).toMatchObject({ goodsId: String(target.id), salesStatus: status, adminName: `Op ${style}` });
          const event = await v.next('goods.salesStatus');
          expectEventShape('goods.salesStatus', event);
          expect(event).toMatchObject({
            campaignKey: key,
            goodsId: String(target.id),
            salesStatus: status,
            adminName: `Op ${style}`,
            updatedAt: res.body.updatedAt,
          });
        }
        expect(v.lastSeq).toBe(snap.seq + 3);
        const listed = (await con(A).goods(key)).body.results;
        expect(listed.map((r: Payload) => r.salesStatus)).toEqual(['ON_SALE', 'ON_SALE']);
      });

      it('adminName: `name`, else the campaign’s operatorName, else the token’s name claim (else null); adminId: the token’s sub', async () => {
        const { key, goods } = await liveCampaign(A, 1, { operatorName: 'Campaign Op' });
        const g = goods[0];
        const set = (auth: string, extra: Body = {}) => salesStatus(A, key, 'sku', { sku: g.sku, salesStatus: 'SOLD_OUT', ...extra }, 'form', auth);
        const withName = await set(A.auth({ name: 'Token Op', sub: 'u-1' }), { name: 'Param Op' });
        expect(withName.body).toMatchObject({ adminName: 'Param Op', adminId: 'u-1' });
        const fromCampaign = await set(A.auth({ name: 'Token Op', sub: 'u-2' }));
        expect(fromCampaign.body).toMatchObject({ adminName: 'Campaign Op', adminId: 'u-2' });
        expect(typeof (await set(A.auth())).body.adminId).toBe('string');

        const bare = await liveCampaign(A, 1);
        const fromToken = await salesStatus(A, bare.key, 'id', { goodsId: bare.goods[0].id, salesStatus: 'SOLD_OUT' }, 'json', A.auth({ name: 'Token Op' }));
        expect(fromToken.body.adminName).toBe('Token Op');
        const none = await salesStatus(A, bare.key, 'id', { goodsId: bare.goods[0].id, salesStatus: 'SOLD_OUT' });
        expectOk(none);
        expect(none.body.adminName).toBeNull();
      });

      it('errors: unknown campaign -710, unknown goods -404, goods not in the campaign -711, bad parameters -510', async () => {
        const { key, goods } = await liveCampaign(A, 1);
        const outsider = await register(A);
        const theirs = await register(B);
        const g = goods[0];
        expectError(await salesStatus(A, 'NoSuchCampaign1', 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT' }), 404, -710);
        expectError(await salesStatus(A, key, 'id', { goodsId: 987654321, salesStatus: 'SOLD_OUT' }), 404, -404);
        expectError(await salesStatus(A, key, 'url', { url: 'https://shop.example.com/none', salesStatus: 'SOLD_OUT' }, 'form'), 404, -404);
        expectError(await salesStatus(A, key, 'sku', { sku: 'NO-SUCH', salesStatus: 'SOLD_OUT' }, 'query'), 404, -404);
        expectError(await salesStatus(A, key, 'id', { goodsId: theirs.id, salesStatus: 'SOLD_OUT' }), 404, -404);
        expectError(await salesStatus(A, key, 'sku', { sku: theirs.sku, salesStatus: 'SOLD_OUT' }), 404, -404);
        expectError(await salesStatus(A, key, 'id', { goodsId: outsider.id, salesStatus: 'SOLD_OUT' }), 404, -711);
        expectError(await salesStatus(A, key, 'url', { url: outsider.url, salesStatus: 'SOLD_OUT' }, 'query'), 404, -711);
        for (const style of ['query', 'form', 'json'] as const) {
          expectError(await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'GONE' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'id', { goodsId: g.id }, style), 400, -510);
          // A missing locator is worded as every other invalid argument.
          for (const [by, field] of [
            ['id', 'goodsId'],
            ['url', 'url'],
            ['sku', 'sku'],
          ] as const) {
            const missing = await salesStatus(A, key, by, { salesStatus: 'SOLD_OUT' }, style);
            expectError(missing, 400, -510);
            expect(missing.body).toMatchObject({ _e: `Invalid argument: ${field} is required`, errors: [{ field, message: `${field} is required` }] });
          }
          expectError(await salesStatus(A, key, 'id', { goodsId: 'abc', salesStatus: 'SOLD_OUT' }, style), 400, -510);
          expectError(await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT', notify: 'perhaps' }, style), 400, -510);
        }
        // A list where one value belongs (JSON) is told so; a parameter given twice is told it was repeated;
        // a value that is not text is told that, naming it, rather than that it is too long.
        const listed = await salesStatus(A, key, 'id', { goodsId: [g.id], salesStatus: 'SOLD_OUT' });
        expectError(listed, 400, -510);
        expect(listed.body).toMatchObject({
          _e: expect.stringMatching(/^Invalid argument: goodsId must be one value, not a list; got \[/),
          errors: [{ field: 'goodsId' }],
        });
        const twice = await http()
          .put(`/v1/goods/${A.accessKey}/campaign/${key}/salesStatus/id?goodsId=${g.id}&goodsId=${g.id}&salesStatus=SOLD_OUT`)
          .set('Authorization', A.auth());
        expectError(twice, 400, -510);
        expect(twice.body._e).toMatch(/^Invalid argument: goodsId was given 2 times; give it once; got \[/);
        // A JSON list as the body is refused, as on every route that takes one object (not ignored for the
        // query string), on the sales-status and stock routes alike.
        for (const [method, route] of [
          ['put', 'salesStatus/id'],
          ['put', 'stock/id'],
          ['post', 'stock/id/decrement'],
        ] as const) {
          const target = `/v1/goods/${A.accessKey}/campaign/${key}/${route}?goodsId=${g.id}&salesStatus=SOLD_OUT&stock=3&quantity=1`;
          const asList = await (method === 'put' ? http().put(target) : http().post(target)).set('Authorization', A.auth()).send([{ salesStatus: 'SOLD_OUT' }]);
          expectError(asList, 400, -510);
          expect(asList.body).toMatchObject({ _e: 'Invalid argument: the body must be a JSON object, not a list', errors: [{ field: 'body' }] });
        }
        for (const field of ['name', 'adminChatNotice', 'chatMessage']) {
          const typed = await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT', [field]: 5 });
          expectError(typed, 400, -510);
          expect(typed.body.errors).toEqual([{ field, message: `${field} must be a string; got 5` }]);
        }
        expectError(await http().put(`/v1/goods/${A.accessKey}/campaign/${key}/salesStatus/id`).query({ goodsId: g.id, salesStatus: 'SOLD_OUT' }), 401, -102);
        // Nothing above changed the item.
        expect((await con(A).goods(key)).body.results[0].salesStatus).toBe('ON_SALE');
      });

      it.each(['query', 'form', 'json'] as const)(
        'notify=false (%s) stores the status without pushing it; notice and chat message are still stored and pushed',
        async (style) => {
          const { key, goods } = await liveCampaign(A, 2, { operatorName: 'Desk' });
          const g = goods[0];
          const v = await viewer(A, key);
          const snap = await v.next('campaign.snapshot');

          const silent = await salesStatus(A, key, 'id', { goodsId: g.id, salesStatus: 'SOLD_OUT', notify: false }, style);
          expectOk(silent);
          expect(silent.body.salesStatus).toBe('SOLD_OUT');
          await v.settle(300);
          expect(v.unread).toEqual([]);
          expect((await con(A).goods(key)).body.results[0].salesStatus).toBe('SOLD_OUT');
          const late = await viewer(A, key);
          const lateSnap = await late.next('campaign.snapshot');
          expect(lateSnap.seq).toBe(snap.seq);
          expect(lateSnap.goods[0]).toMatchObject({ goodsId: String(g.id), salesStatus: 'SOLD_OUT', adminName: 'Desk' });

          const withMessages = await salesStatus(
            A,
            key,
            'id',
            { goodsId: g.id, salesStatus: 'ALMOST_SOLD_OUT', notify: false, adminChatNotice: 'Last few!', chatMessage: 'Hurry up' },
            style,
          );
          expectOk(withMessages);
          const [notice, chat] = await v.take(2);
          expect(notice.type).toBe('chat.notice');
          expectEventShape('chat.notice', notice.payload);
          expect(notice.payload).toMatchObject({ seq: snap.seq + 1, message: 'Last few!', adminName: 'Desk' });
          expect(chat.type).toBe('chat.message');
          expectEventShape('chat.message', chat.payload);
          expect(chat.payload).toMatchObject({ seq: snap.seq + 2, message: 'Hurry up', adminName: 'Desk' });
          await v.settle(200);
          expect(v.unread).toEqual([]);
          const stored = await con(A).get(key);
          expect(stored.body.notice).toMatchObject({ message: 'Last few!', adminName: 'Desk' });
          expect(stored.body.goods[0].salesStatus).toBe('ALMOST_SOLD_OUT');
          const third = await viewer(A, key);
          const thirdSnap = await third.next('campaign.snapshot');
          expect(thirdSnap.chat.map((l: Payload) => l.message)).toEqual(['Hurry up']);
          expect(thirdSnap.notice).toMatchObject({ message: 'Last few!' });
        },
      );

      it('notify (default true) pushes the status, then the pinned notice, then the chat message, with consecutive seqs', async () => {
        const { key, goods } = await liveCampaign(A, 1);
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        const res = await salesStatus(
          A,
          key,
          'url',
          { url: goods[0].url, salesStatus: 'SOLD_OUT', name: 'Mina', adminChatNotice: 'Sold out!', chatMessage: 'Thank you' },
          'form',
        );
        expectOk(res);
        const events = await v.take(3);
        expect(events.map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.salesStatus', snap.seq + 1],
          ['chat.notice', snap.seq + 2],
          ['chat.message', snap.seq + 3],
        ]);
        expect(events[1].payload).toMatchObject({ message: 'Sold out!', adminName: 'Mina' });
        expect(events[2].payload).toMatchObject({ message: 'Thank you', adminName: 'Mina' });
        // JSON null for notify (a typed client's unset option) is the default: pushed.
        expectOk(await salesStatus(A, key, 'url', { url: goods[0].url, salesStatus: 'ON_SALE', notify: null, name: null }));
        const [next] = await v.take(1);
        expect(next).toMatchObject({ type: 'goods.salesStatus', payload: { seq: snap.seq + 4, salesStatus: 'ON_SALE' } });
      });
    });

    // -------------------------------------------------------------------------------------------
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);
