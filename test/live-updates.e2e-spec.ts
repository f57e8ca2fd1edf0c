import { BetterSqlite3QueryRunner } from 'typeorm/driver/better-sqlite3/BetterSqlite3QueryRunner';
import { MysqlQueryRunner } from 'typeorm/driver/mysql/MysqlQueryRunner';
import { CampaignGoodsUpdates, IDS_IN_QUERY } from '../src/campaigns/campaign-goods-updates';
import { useImageServer } from './support/image-server';
import { csv } from './support/sheet-fixtures';
import type { Payload, Viewer } from './support/live-client';
import { expectEventShape, expectOk, liveHarness } from './support/live-harness';
import { describeEngines } from './support/test-app';

/**
 * Edits that viewers hear of beyond the goods list and statuses (docs/live-protocol.md): `campaign.update`
 * after a campaign PATCH, `goods.update` after catalog edits of goods in a campaign (register/update,
 * sync, spreadsheet import: one event per campaign per write), and `resync` answers for a sinceSeq that
 * is ahead or malformed.
 */

const images = useImageServer();

describeEngines(
  'live campaigns: campaign and catalog edits reach viewers',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const { http, con, liveCampaign, register, viewer, campaignRow } = live;

    const goodsPath = (rest = '') => `/v1/goods/${live.A.accessKey}${rest}`;
    const put = (rest: string, body: Record<string, unknown>) => http().put(goodsPath(rest)).set('Authorization', live.A.auth()).send(body);
    const sync = (body: unknown[]) => http().post(goodsPath('/sync')).set('Authorization', live.A.auth()).send(body);
    const lastSeq = async (key: string) => Number((await campaignRow(key)).lastSeq);

    /** A viewer that has read its join snapshot; returns it with the snapshot's seq. */
    async function watching(key: string): Promise<{ v: Viewer; seq: number; snapshot: Payload }> {
      const v = await viewer(live.A, key);
      const snapshot = await v.next('campaign.snapshot');
      return { v, seq: snapshot.seq, snapshot };
    }

    /** The summaries of these goods in a fresh snapshot of the campaign (what the event must equal). */
    async function summariesNow(key: string, ids: unknown[]): Promise<Payload[]> {
      const { v, snapshot } = await watching(key);
      v.close();
      const wanted = ids.map(String);
      return snapshot.goods.filter((g: Payload) => wanted.includes(g.goodsId));
    }

    describe('campaign.update', () => {
      it('a PATCH reaches viewers with the next seq and the record as the snapshot shows it; a PATCH that changes nothing pushes nothing', async () => {
        const { key } = await liveCampaign(live.A, 1, { title: 'Before', posterUrl: 'https://cdn.example.com/p1.jpg' });
        const { v, seq } = await watching(key);
        const scheduledAt = Date.now() + 86_400_000;
        const res = await con(live.A).patch(key, {
          title: 'After',
          description: 'Tonight only',
          posterUrl: 'https://cdn.example.com/p2.jpg',
          scheduledAt,
          operatorName: 'Desk',
        });
        expectOk(res);
        const event = await v.next('campaign.update');
        expectEventShape('campaign.update', event);
        expect(event.seq).toBe(seq + 1);
        expect(event.campaign).toMatchObject({
          campaignKey: key,
          title: 'After',
          description: 'Tonight only',
          posterUrl: 'https://cdn.example.com/p2.jpg',
          scheduledAt,
          operatorName: 'Desk',
          updatedAt: res.body.updatedAt,
        });
        // The same record a new viewer's snapshot carries (userCount aside: it counts that viewer too).
        const { v: late, snapshot } = await watching(key);
        expect(snapshot.seq).toBe(seq + 1);
        expect({ ...snapshot.campaign, userCount: 0 }).toEqual({ ...event.campaign, userCount: 0 });
        late.close();

        // Same values again: nothing written, nothing told.
        expectOk(await con(live.A).patch(key, { title: 'After', scheduledAt, posterUrl: 'https://cdn.example.com/p2.jpg' }));
        expectOk(await con(live.A).patch(key, {}));
        await v.settle(300);
        expect(v.unread).toEqual([]);
        expect(await lastSeq(key)).toBe(seq + 1);
        expect((await con(live.A).get(key)).body.updatedAt).toBe(res.body.updatedAt);

        // Clearing a field is a change.
        expectOk(await con(live.A).patch(key, { description: null }));
        expect(await v.next('campaign.update')).toMatchObject({ seq: seq + 2, campaign: { description: null, title: 'After' } });
      });
    });

    describe('goods.update', () => {
      it('an update by id, sku or url of goods in a campaign reaches its viewers; a change viewers cannot see, or of goods in no campaign, pushes nothing', async () => {
        const { key, goods } = await liveCampaign(live.A, 3);
        const outside = await register(live.A);
        const { v, seq } = await watching(key);

        expectOk(await put('', { id: goods[1].id, discountedPrice: 7777, originalPrice: 9999 }));
        const byId = await v.next('goods.update');
        expectEventShape('goods.update', byId);
        expect(byId.seq).toBe(seq + 1);
        expect(byId.goods).toHaveLength(1);
        expect(byId.goods[0]).toMatchObject({ goodsId: String(goods[1].id), sortOrder: 2, discountedPrice: 7777, originalPrice: 9999 });

        expectOk(await put('/sku', { sku: goods[0].sku, name: 'Renamed by sku' }));
        expect(await v.next('goods.update')).toMatchObject({ seq: seq + 2, goods: [{ goodsId: String(goods[0].id), name: 'Renamed by sku' }] });
        expectOk(await put('/url', { url: goods[2].url, sku: 'NEW-SKU-BY-URL', brand: null }));
        const byUrl = await v.next('goods.update');
        expect(byUrl).toMatchObject({ seq: seq + 3, goods: [{ goodsId: String(goods[2].id), sku: 'NEW-SKU-BY-URL', brand: null }] });
        // Exactly what a snapshot shows for that item.
        expect(byUrl.goods).toEqual(await summariesNow(key, [goods[2].id]));

        // Not shown to viewers (description), no change at all, goods in no campaign, a new item: nothing.
        expectOk(await put('', { id: goods[0].id, description: 'only the description' }));
        expectOk(await put('', { id: goods[0].id, name: 'Renamed by sku' }));
        expectOk(await put('', { id: outside.id, name: 'Not in a campaign' }));
        await register(live.A);
        await v.settle(300);
        expect(v.unread).toEqual([]);
        expect(await lastSeq(key)).toBe(seq + 3);
      });

      it("public answers name the client's Host in their links for at most 32 new Hosts a minute; past that, the node's own base (no answer built per Host)", async () => {
        const { key, goods } = await liveCampaign(live.A, 1, { collectionVisible: true });
        expectOk(await put('', { id: goods[0].id, mediaUrl: images().url1('/photo.jpg') }));
        const imageUrls: string[] = [];
        for (let i = 0; i < 40; i += 1) {
          const res = await http().get(`/v1/campaigns/${live.A.accessKey}/${key}`).set('Host', `shop-${i}.hosts.example:8080`);
          expect(res.status).toBe(200);
          imageUrls.push(res.body.goods[0].imageUrl as string);
        }
        const named = imageUrls.map((url, i) => url.startsWith(`http://shop-${i}.hosts.example:8080/media/`));
        const own = imageUrls.map((url) => /^http:\/\/localhost:\d+\/media\//.test(url));
        expect(named.map((n, i) => n || own[i])).toEqual(imageUrls.map(() => true));
        // Some Hosts named, then none: the later ones all get the node's own base.
        const firstOwn = own.indexOf(true);
        expect(firstOwn).toBeGreaterThan(0);
        expect(firstOwn).toBeLessThanOrEqual(32);
        expect(own.slice(firstOwn)).toEqual(imageUrls.slice(firstOwn).map(() => true));
        // A Host admitted before keeps being named.
        const again = await http().get(`/v1/campaigns/${live.A.accessKey}/${key}`).set('Host', 'shop-0.hosts.example:8080');
        expect(again.body.goods[0].imageUrl).toMatch(/^http:\/\/shop-0\.hosts\.example:8080\/media\//);
      });

      it('an image set, replaced or removed by an update or a sync reaches viewers as a goods.update with the new imageUrl', async () => {
        const { key, goods } = await liveCampaign(live.A, 2);
        const { v, seq } = await watching(key);
        expectOk(await put('', { id: goods[0].id, mediaUrl: images().url1('/photo.jpg') }));
        const set = await v.next('goods.update');
        expect(set.seq).toBe(seq + 1);
        expect(set.goods).toEqual([
          expect.objectContaining({ goodsId: String(goods[0].id), imageUrl: expect.stringMatching(/^http/), thumbnailUrl: expect.stringMatching(/^http/) }),
        ]);
        expectOk(
          await sync([
            { id: goods[1].id, mediaUrl: images().url1('/logo.png') },
            { id: goods[0].id, mediaUrl: null },
          ]),
        );
        const both = await v.next('goods.update');
        expect(both.seq).toBe(seq + 2);
        expect(both.goods.map((g: Payload) => [g.goodsId, g.imageUrl === null])).toEqual([
          [String(goods[0].id), true],
          [String(goods[1].id), false],
        ]);
        expect(both.goods).toEqual(await summariesNow(key, [goods[0].id, goods[1].id]));
        await v.settle(300);
        expect(v.unread).toEqual([]);
      });

      it('a sync of many goods pushes exactly one goods.update per open campaign holding any of them, with all their summaries in sortOrder; a closed campaign is not told', async () => {
        // 1,100 stored items: more than IDS_IN_QUERY, so the campaigns' places are matched in memory.
        const stamp = Date.now().toString(36);
        const rows = Array.from({ length: 1100 }, (_, i) => ({
          sku: `BULK-${stamp}-${i}`,
          url: `https://shop.example.com/bulk/${stamp}/${i}`,
          name: `Bulk ${i}`,
        }));
        const created = await sync(rows);
        expectOk(created);
        expect(created.body.createCount).toBe(1100);
        const ids: number[] = created.body.results.map((r: Payload) => Number(r.id));

        const one = await liveCampaign(live.A, 0);
        const two = await liveCampaign(live.A, 0);
        const ended = await liveCampaign(live.A, 0);
        expectOk(await con(live.A).addGoods(one.key, { goodsIds: [ids[900], ids[5], ids[1099]] }));
        expectOk(await con(live.A).addGoods(two.key, { goodsIds: [ids[5]] }));
        expectOk(await con(live.A).addGoods(ended.key, { goodsIds: [ids[5]] }));
        expectOk(await con(live.A).status(ended.key, 'ONAIR'));
        expectOk(await con(live.A).status(ended.key, 'CLOSED'));
        const endedSeq = await lastSeq(ended.key);

        const a = await watching(one.key);
        const b = await watching(two.key);
        const res = await sync(rows.map((r, i) => ({ sku: r.sku, name: `Bulk ${i} v2`, discountedPrice: 100 + i })));
        expectOk(res);
        expect(res.body.updateCount).toBe(1100);

        const ea = await a.v.next('goods.update');
        expectEventShape('goods.update', ea);
        expect(ea.seq).toBe(a.seq + 1);
        expect(ea.goods.map((g: Payload) => [g.goodsId, g.sortOrder, g.name, g.discountedPrice])).toEqual([
          [String(ids[900]), 1, 'Bulk 900 v2', 1000],
          [String(ids[5]), 2, 'Bulk 5 v2', 105],
          [String(ids[1099]), 3, 'Bulk 1099 v2', 1199],
        ]);
        expect(ea.goods).toEqual(await summariesNow(one.key, [ids[900], ids[5], ids[1099]]));
        expect(await b.v.next('goods.update')).toMatchObject({ seq: b.seq + 1, goods: [{ goodsId: String(ids[5]), name: 'Bulk 5 v2' }] });
        await a.v.settle(300);
        expect(a.v.unread).toEqual([]);
        expect(b.v.unread).toEqual([]);
        expect(await lastSeq(ended.key)).toBe(endedSeq);

        // A small sync (ids in the query) touching one item of campaign one only.
        expectOk(
          await sync([
            { sku: rows[1099].sku, originalPrice: 5000 },
            { sku: rows[7].sku, name: 'elsewhere' },
          ]),
        );
        expect(await a.v.next('goods.update')).toMatchObject({ seq: a.seq + 2, goods: [{ goodsId: String(ids[1099]), originalPrice: 5000 }] });
        // A sync that changes nothing visible in a campaign: nothing.
        expectOk(
          await sync([
            { sku: rows[5].sku, description: 'not shown' },
            { sku: rows[8].sku, name: 'elsewhere too' },
          ]),
        );
        await a.v.settle(300);
        expect(a.v.unread).toEqual([]);
        expect(b.v.unread).toEqual([]);
      });

      it('finding and telling the campaigns costs the same few queries for 3 changed ids as for 10,000', async () => {
        const { key, goods } = await liveCampaign(live.A, 3);
        await liveCampaign(live.A, 2); // another open campaign, holding none of them
        const updates = ctx().app.get(CampaignGoodsUpdates);
        const tenant = { id: live.A.id, accessKey: live.A.accessKey, currency: live.A.currency, baseUrl: 'http://127.0.0.1', operator: {} };
        const real = goods.map((g) => Number(g.id));
        const many = [...real, ...Array.from({ length: 10_000 - real.length }, (_, i) => 2_000_000_000 + i)];
        expect(many.length).toBeGreaterThan(IDS_IN_QUERY);
        const runner = ctx().engine === 'mysql' ? MysqlQueryRunner.prototype : BetterSqlite3QueryRunner.prototype;
        const counted = async (ids: number[]): Promise<string[]> => {
          const spy = jest.spyOn(runner, 'query');
          try {
            await updates.goodsChanged(tenant, ids);
            // The spy sees every query of the process: leave out the background pollers' (webhook
            // dispatcher, import-job runner, idempotency sweep), which may run meanwhile on a busy machine,
            // and the transactions' BEGIN and COMMIT, which theirs would add too.
            return spy.mock.calls
              .map((call) => String(call[0]))
              .filter((sql) => !/webhook_|import_job|idempotency_key|^\s*(BEGIN|START|COMMIT|ROLLBACK)/i.test(sql))
              .map((sql) => sql.split(/\s+/).slice(0, 3).join(' '));
          } finally {
            spy.mockRestore();
          }
        };
        const seq = await lastSeq(key);
        const few = await counted(real);
        const lots = await counted(many);
        expect(await lastSeq(key)).toBe(seq + 2);
        expect(lots.length).toBe(few.length);
        // Open campaigns, places, then one transaction: lock (MySQL), places, goods, media, the event (2:
        // the seq taken by the UPDATE itself, the insert).
        expect(few).toHaveLength(ctx().engine === 'mysql' ? 8 : 7);
        // Goods in no open campaign: the open campaigns and the places only.
        expect(await counted(many.slice(3))).toHaveLength(2);
      });

      it('a spreadsheet import of goods in a campaign reaches its viewers in one goods.update', async () => {
        const { key, goods } = await liveCampaign(live.A, 3);
        const { v, seq } = await watching(key);
        const file = csv([
          ['sku', 'url', 'name', 'discountedPrice'],
          [goods[2].sku, undefined, 'From the sheet 2', 1234],
          [goods[0].sku, undefined, 'From the sheet 0', 4321],
          [`SHEET-NEW-${Date.now().toString(36)}`, 'https://shop.example.com/sheet/new', 'A new item', 1],
        ]);
        const res = await http()
          .post(goodsPath('/excel'))
          .set('Authorization', live.A.auth())
          .attach('file', file, { filename: 'goods.csv', contentType: 'text/csv' });
        expectOk(res);
        expect([res.body.createCount, res.body.updateCount, res.body.failCount]).toEqual([1, 2, 0]);
        const event = await v.next('goods.update');
        expect(event.seq).toBe(seq + 1);
        expect(event.goods.map((g: Payload) => [g.goodsId, g.name, g.discountedPrice])).toEqual([
          [String(goods[0].id), 'From the sheet 0', 4321],
          [String(goods[2].id), 'From the sheet 2', 1234],
        ]);
        await v.settle(300);
        expect(v.unread).toEqual([]);
      });
    });

    describe('resync', () => {
      it('after a missed campaign.update and goods.update, a resync replays them in order', async () => {
        const { key, goods } = await liveCampaign(live.A, 2);
        const steady = await watching(key);
        const away = await watching(key);
        away.v.close();
        expectOk(await con(live.A).patch(key, { title: 'While you were away' }));
        expectOk(await put('', { id: goods[0].id, name: 'Changed while away' }));
        const seen = await steady.v.take(2);
        expect(seen.map((e) => e.type)).toEqual(['campaign.update', 'goods.update']);

        const back = await watching(key);
        expect(back.seq).toBe(away.seq + 2);
        back.v.resync(away.seq);
        const replay = await back.v.take(2);
        expect(replay.map((e) => [e.type, e.payload])).toEqual(seen.map((e) => [e.type, e.payload]));
        expect(replay.map((e) => e.payload.seq)).toEqual([away.seq + 1, away.seq + 2]);
      });

      it('a sinceSeq ahead of the campaign, or malformed, is answered with a snapshot', async () => {
        const { key, goods } = await liveCampaign(live.A, 1);
        expectOk(await put('', { id: goods[0].id, name: 'one event more' }));
        const { v, seq } = await watching(key);
        expect(seq).toBe(2);
        for (const sinceSeq of [seq + 1, seq + 1000]) {
          v.resync(sinceSeq);
          expect((await v.next('campaign.snapshot')).seq).toBe(seq);
        }
        // Not coerced: "0", null, true and [] would otherwise replay from 0 (the log still holds it all).
        for (const sinceSeq of ['0', null, true, [], -1, 0.5, 'abc']) {
          v.resync(sinceSeq);
          const snapshot = await v.next('campaign.snapshot');
          expect(snapshot.seq).toBe(seq);
          expect(snapshot.goods[0].name).toBe('one event more');
        }
        // A well-formed one still replays.
        v.resync(0);
        expect((await v.take(2)).map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.list', 1],
          ['goods.update', 2],
        ]);
        await v.settle(200);
        expect(v.unread).toEqual([]);
      });
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);
