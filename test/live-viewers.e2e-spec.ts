import type { Response } from 'supertest';
import { CampaignEvent } from '../src/campaigns/entities/campaign-event.entity';
import { Transactions } from '../src/database/transactions';
import { EVENTS_KEPT, CampaignEventLog } from '../src/campaigns/campaign-event-log';
import { LiveFanout } from '../src/live/live-fanout';
import { LiveNotifier } from '../src/live/live-notifier';
import { LiveGateway, SNAPSHOT_RESYNC_INTERVAL_MS } from '../src/live/live.gateway';
import { LIVE_SOURCE, LiveSource } from '../src/live/live-source';
import { SNAPSHOT_REUSE_MS } from '../src/live/shared-snapshots';
import type { PendingEvent } from '../src/live/live-events';
import { Payload, Viewer } from './support/live-client';
import { CAMPAIGN_KEYS, SNAPSHOT_KEYS, SUMMARY_KEYS, keys, isEpochMs, expectOk, expectEventShape, liveHarness } from './support/live-harness';
import { describeEngines, TestCustomer } from './support/test-app';

/** The /live viewer channel with real socket.io-client viewers: snapshots, events, seq, resync, the event log (docs/live-protocol.md). Single process, no Redis (live-cluster.e2e-spec.ts covers two nodes sharing Redis). */

describeEngines(
  'live campaigns: viewers',
  __filename,
  (ctx) => {
    const live = liveHarness(ctx);
    const { http, con, salesStatus, createCampaign, register, liveCampaign, viewer, campaignRow } = live;
    let base = '';
    let A: TestCustomer;
    let B: TestCustomer;
    beforeAll(() => {
      ({ base, A, B } = live);
    });

    describe('viewers', () => {
      it('get a snapshot on join: {seq, campaign, goods, notice, chat}', async () => {
        const { key, goods } = await liveCampaign(A, 2, { description: 'About tonight', operatorName: 'Desk', collectionVisible: true });
        expectOk(await con(A).chat(key, { message: 'Pinned!', pinned: true }));
        expectOk(await con(A).chat(key, { message: 'Welcome' }));
        expectOk(await salesStatus(A, key, 'id', { goodsId: goods[1].id, salesStatus: 'SOLD_OUT' }));
        const row = await campaignRow(key);
        const v = await viewer(A, key);
        const snap = await v.next('campaign.snapshot');
        expect(keys(snap)).toEqual(SNAPSHOT_KEYS);
        // 1 goods.list (add) + notice + chat + salesStatus
        expect(snap.seq).toBe(4);
        expect(snap.seq).toBe(Number(row.lastSeq));
        expect(keys(snap.campaign)).toEqual([...CAMPAIGN_KEYS, 'description'].sort());
        expect(snap.campaign).toMatchObject({ campaignKey: key, description: 'About tonight', campaignStatus: 'READY', operatorName: 'Desk' });
        expect(snap.campaign.userCount).toBeGreaterThanOrEqual(1);
        expect(snap.goods.map((g: Payload) => [g.goodsId, g.sortOrder, g.salesStatus])).toEqual([
          [String(goods[0].id), 1, 'ON_SALE'],
          [String(goods[1].id), 2, 'SOLD_OUT'],
        ]);
        for (const g of snap.goods) expect(keys(g)).toEqual(SUMMARY_KEYS);
        expect(snap.notice).toMatchObject({ message: 'Pinned!', adminName: 'Desk' });
        expect(snap.chat).toEqual([expect.objectContaining({ message: 'Welcome', adminName: 'Desk' })]);
        expect(snap.chat[0].id).toMatch(/^\d+$/);
      });

      it('receive every event type, in order, seq +1 each with no gap across mixed operations; two viewers see the same stream', async () => {
        const { key, goods: g } = await liveCampaign(A, 3, { operatorName: 'Desk' });
        const extra = await register(A);
        const doomed = await register(A);
        const v1 = await viewer(A, key);
        const v2 = await viewer(A, key);
        const s0 = (await v1.next('campaign.snapshot')).seq;
        expect((await v2.next('campaign.snapshot')).seq).toBe(s0);

        const steps: Array<[string, () => Promise<Response>, (p: Payload) => void]> = [
          [
            'goods.list',
            () => con(A).addGoods(key, { goodsIds: [extra.id, doomed.id] }),
            (p) => expect(p.goods.map((x: Payload) => x.goodsId)).toEqual([g[0].id, g[1].id, g[2].id, extra.id, doomed.id].map(String)),
          ],
          [
            'goods.salesStatus',
            () => salesStatus(A, key, 'id', { goodsId: g[0].id, salesStatus: 'ALMOST_SOLD_OUT' }),
            (p) => expect(p).toMatchObject({ goodsId: String(g[0].id), salesStatus: 'ALMOST_SOLD_OUT', adminName: 'Desk', campaignKey: key }),
          ],
          [
            'goods.list',
            () => con(A).order(key, [g[2].id]),
            (p) =>
              expect(p.goods.map((x: Payload) => [x.goodsId, x.sortOrder])).toEqual(
                [g[2].id, g[0].id, g[1].id, extra.id, doomed.id].map((id, i) => [String(id), i + 1]),
              ),
          ],
          [
            'goods.list',
            () => con(A).showing(key, g[1].id, true),
            (p) => expect(p.goods.filter((x: Payload) => x.showingNow).map((x: Payload) => x.goodsId)).toEqual([String(g[1].id)]),
          ],
          [
            'chat.notice',
            () => con(A).chat(key, { message: 'Notice', pinned: true }),
            (p) => expect(p).toMatchObject({ message: 'Notice', adminName: 'Desk' }),
          ],
          ['chat.message', () => con(A).chat(key, { message: 'Hello', name: 'Mina' }), (p) => expect(p).toMatchObject({ message: 'Hello', adminName: 'Mina' })],
          [
            'campaign.status',
            () => con(A).status(key, 'ONAIR'),
            (p) => {
              expect(p.campaignStatus).toBe('ONAIR');
              expect(isEpochMs(p.startedAt)).toBe(true);
              expect(p.endedAt).toBeNull();
            },
          ],
          ['goods.list', () => con(A).removeGoods(key, g[0].id), (p) => expect(p.goods.map((x: Payload) => x.goodsId)).not.toContain(String(g[0].id))],
          [
            'goods.list',
            () => http().delete(`/v1/goods/${A.accessKey}/${doomed.id}`).set('Authorization', A.auth()),
            (p) => expect(p.goods.map((x: Payload) => x.goodsId)).toEqual([g[2].id, g[1].id, extra.id].map(String)),
          ],
          ['chat.notice', () => con(A).chat(key, { message: '', pinned: true }), (p) => expect(p.message).toBe('')],
          [
            'goods.salesStatus',
            () => salesStatus(A, key, 'sku', { sku: extra.sku, salesStatus: 'SOLD_OUT' }, 'query'),
            (p) => expect(p.goodsId).toBe(String(extra.id)),
          ],
          [
            'campaign.status',
            () => con(A).status(key, 'CLOSED'),
            (p) => {
              expect(p.campaignStatus).toBe('CLOSED');
              expect(isEpochMs(p.startedAt) && isEpochMs(p.endedAt)).toBe(true);
            },
          ],
        ];
        for (const [i, [type, act, check]] of steps.entries()) {
          const res = await act();
          expectOk(res);
          for (const v of [v1, v2]) {
            const event = await v.nextEvent();
            expect([event.type, event.payload.seq]).toEqual([type, s0 + i + 1]);
            expectEventShape(type, event.payload);
            check(event.payload);
          }
        }
        // A no-op (only goods already in) pushes nothing and takes no seq.
        expectOk(await con(A).addGoods(key, { goodsIds: [extra.id] }));
        await v1.settle(300);
        expect(v1.unread).toEqual([]);
        expect(v2.unread).toEqual([]);
        expect(Number((await campaignRow(key)).lastSeq)).toBe(s0 + steps.length);
        const late = await viewer(A, key);
        expect((await late.next('campaign.snapshot')).seq).toBe(s0 + steps.length);
      });

      it('deleting a goods item from the catalog pushes goods.list to every campaign it was in, and nothing elsewhere', async () => {
        const one = await liveCampaign(A, 2);
        const two = await liveCampaign(A, 0);
        const other = await liveCampaign(A, 1);
        const shared = one.goods[1];
        expectOk(await con(A).addGoods(two.key, { goodsIds: [shared.id] }));
        const [v1, v2, v3] = [await viewer(A, one.key), await viewer(A, two.key), await viewer(A, other.key)];
        const seqs = [(await v1.next('campaign.snapshot')).seq, (await v2.next('campaign.snapshot')).seq, (await v3.next('campaign.snapshot')).seq];
        expectOk(await http().delete(`/v1/goods/${A.accessKey}/sku`).query({ value: shared.sku }).set('Authorization', A.auth()));
        expect(await v1.next('goods.list')).toEqual({ seq: seqs[0] + 1, goods: [expect.objectContaining({ goodsId: String(one.goods[0].id) })] });
        expect(await v2.next('goods.list')).toEqual({ seq: seqs[1] + 1, goods: [] });
        const loner = await register(A);
        expectOk(await http().delete(`/v1/goods/${A.accessKey}/${loner.id}`).set('Authorization', A.auth()));
        await v3.settle(300);
        expect([v1.unread, v2.unread, v3.unread]).toEqual([[], [], []]);
        expect((await con(A).goods(two.key)).body.totalCount).toBe(0);
      });

      it('concurrent changes get distinct consecutive seqs, delivered in ascending order', async () => {
        const { key, goods } = await liveCampaign(A, 5);
        const v = await viewer(A, key);
        const s0 = (await v.next('campaign.snapshot')).seq;
        const statuses = ['ON_SALE', 'ALMOST_SOLD_OUT', 'SOLD_OUT'];
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => salesStatus(A, key, 'id', { goodsId: goods[i % 5].id, salesStatus: statuses[i % 3] })),
        );
        for (const r of results) expectOk(r);
        const events = await v.take(20);
        expect(events.map((e) => e.type)).toEqual(Array(20).fill('goods.salesStatus'));
        expect(events.map((e) => e.payload.seq)).toEqual(Array.from({ length: 20 }, (_, i) => s0 + i + 1));
        await v.settle(200);
        expect(v.unread).toEqual([]);
      });

      it('the events of one turn go to each viewer together (one call per room), and real clients read every one of them in order', async () => {
        const { key, goods } = await liveCampaign(A, 2, { operatorName: 'Desk' });
        const ws = await viewer(A, key);
        const polling = await Viewer.connect(base, { accessKey: A.accessKey, campaignKey: key }, 10_000, 'polling');
        const s0 = (await ws.next('campaign.snapshot')).seq;
        expect((await polling.next('campaign.snapshot')).seq).toBe(s0);
        const rooms = jest.spyOn(LiveFanout.prototype, 'toRoom');
        try {
          // One request that records three events: a status, a pinned notice and a chat line.
          expectOk(
            await salesStatus(A, key, 'id', { goodsId: goods[0].id, salesStatus: 'SOLD_OUT', adminChatNotice: 'Last ones!', chatMessage: 'Thanks all' }),
          );
          const expected = [
            ['goods.salesStatus', s0 + 1],
            ['chat.notice', s0 + 2],
            ['chat.message', s0 + 3],
          ];
          for (const v of [ws, polling]) expect((await v.take(3)).map((e) => [e.type, e.payload.seq])).toEqual(expected);
          expect(rooms).toHaveBeenCalledTimes(1);
          expect(rooms.mock.calls[0][1].map((e) => e.type)).toEqual(expected.map(([type]) => type));
        } finally {
          rooms.mockRestore();
        }
        await ws.settle(200);
        expect([ws.unread, polling.unread]).toEqual([[], []]);
        ws.close();
        polling.close();
      });

      it('long-polling and upgrading viewers get the same events in the same order as WebSocket viewers (written to directly)', async () => {
        const { key, goods } = await liveCampaign(A, 3);
        const auth = { accessKey: A.accessKey, campaignKey: key };
        const notifier = ctx().app.get(LiveNotifier);
        const before = notifier.writes;
        const ws = await Viewer.connect(base, auth, 10_000, 'websocket');
        const polling = await Viewer.connect(base, auth, 10_000, 'polling');
        const upgrading = await Viewer.connect(base, auth, 10_000, 'upgrade');
        const s0 = (await ws.next('campaign.snapshot')).seq;
        for (const v of [polling, upgrading]) expect((await v.next('campaign.snapshot')).seq).toBe(s0);
        // A burst while the third viewer may still be upgrading from polling to WebSocket.
        const statuses = ['SOLD_OUT', 'ALMOST_SOLD_OUT', 'ON_SALE'];
        const results = await Promise.all(
          Array.from({ length: 15 }, (_, i) => salesStatus(A, key, 'id', { goodsId: goods[i % 3].id, salesStatus: statuses[i % 3] })),
        );
        for (const r of results) expectOk(r);
        const expected = Array.from({ length: 15 }, (_, i) => s0 + i + 1);
        for (const v of [ws, polling, upgrading]) {
          const events = await v.take(15);
          expect(events.map((e) => [e.type, e.payload.seq])).toEqual(expected.map((seq) => ['goods.salesStatus', seq]));
        }
        expect(polling.socket.io.engine.transport.name).toBe('polling');
        const after = notifier.writes;
        // The WebSocket viewer's snapshot and 15 events went straight to its WebSocket; the polling
        // viewer's 16 through socket.io's queue. (If engine.io's internals change, the direct count
        // stays put and this fails, instead of every viewer silently taking the slower path.)
        expect(after.direct - before.direct).toBeGreaterThanOrEqual(16);
        expect(after.engine - before.engine).toBeGreaterThanOrEqual(16);
        expect(after.direct - before.direct + (after.engine - before.engine)).toBe(3 * 16);
      });

      it('a viewer that disconnects, misses three events and reconnects gets exactly those three on resync', async () => {
        const { key, goods } = await liveCampaign(A, 2);
        const steady = await viewer(A, key);
        const v = await viewer(A, key);
        const s0 = (await v.next('campaign.snapshot')).seq;
        await steady.next('campaign.snapshot');
        expectOk(await con(A).chat(key, { message: 'seen' }));
        expect((await v.next('chat.message')).seq).toBe(s0 + 1);
        await steady.next('chat.message');
        const lastSeen = v.lastSeq;
        v.close();

        expectOk(await salesStatus(A, key, 'id', { goodsId: goods[0].id, salesStatus: 'SOLD_OUT' }));
        expectOk(await con(A).showing(key, goods[1].id, true));
        expectOk(await con(A).chat(key, { message: 'missed' }));
        const live = await steady.take(3);

        const back = await viewer(A, key);
        const snap = await back.next('campaign.snapshot');
        expect(snap.seq).toBe(lastSeen + 3);
        back.resync(lastSeen);
        const replay = await back.take(3);
        expect(replay.map((e) => [e.type, e.payload])).toEqual(live.map((e) => [e.type, e.payload]));
        expect(replay.map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.salesStatus', lastSeen + 1],
          ['goods.list', lastSeen + 2],
          ['chat.message', lastSeen + 3],
        ]);
        await back.settle(300);
        expect(back.unread).toEqual([]);

        // Nothing missed: nothing sent. Ahead of the campaign: a snapshot. A later gap (simulated: ask
        // again for the last two) replays just those.
        back.resync(lastSeen + 3);
        await back.settle(300);
        expect(back.unread).toEqual([]);
        back.resync(lastSeen + 1000);
        expect((await back.next('campaign.snapshot')).seq).toBe(lastSeen + 3);
        back.resync(lastSeen + 1);
        expect((await back.take(2)).map((e) => e.payload.seq)).toEqual([lastSeen + 2, lastSeen + 3]);
      });

      it('a resync sent as the socket connects (before its join snapshot went out) is answered after the snapshot', async () => {
        const { key, goods } = await liveCampaign(A, 2);
        const id = Number((await campaignRow(key)).id);
        const v = await viewer(A, key);
        const lastSeen = (await v.next('campaign.snapshot')).seq;
        v.close();
        expectOk(await salesStatus(A, key, 'id', { goodsId: goods[0].id, salesStatus: 'SOLD_OUT' }));
        expectOk(await con(A).chat(key, { message: 'missed' }));
        // The join snapshot's read takes a while (a busy database): the resync the player sends at
        // `connect` is in by then.
        const source = ctx().app.get<LiveSource>(LIVE_SOURCE);
        const original = source.snapshot.bind(source);
        const read = jest.spyOn(source, 'snapshot').mockImplementation(async (campaignId, ...rest) => {
          if (campaignId === id) await new Promise((r) => setTimeout(r, 400));
          return original(campaignId, ...rest);
        });
        let back: Viewer;
        try {
          back = await Viewer.connect(base, { accessKey: A.accessKey, campaignKey: key }, 10_000, 'websocket', lastSeen);
        } finally {
          read.mockRestore();
        }
        const received = [await back.nextEvent(), ...(await back.take(2))];
        // The snapshot first (it holds both events), then the replay the resync asked for: before, the
        // replay came first and the snapshot after it took the client's seq back.
        expect(received.map((e) => [e.type, e.payload.seq])).toEqual([
          ['campaign.snapshot', lastSeen + 2],
          ['goods.salesStatus', lastSeen + 1],
          ['chat.message', lastSeen + 2],
        ]);
        await back.settle(300);
        expect(back.unread).toEqual([]);
      });

      it('a resync from further back than the kept log gets a fresh snapshot; a malformed one too', async () => {
        const { key, goods } = await liveCampaign(A, 1);
        for (const s of ['SOLD_OUT', 'ON_SALE', 'SOLD_OUT']) expectOk(await salesStatus(A, key, 'id', { goodsId: goods[0].id, salesStatus: s }));
        const row = await campaignRow(key);
        const last = Number(row.lastSeq);
        expect(last).toBe(4);
        // Age out the first two events, as the log trimming would.
        await ctx().dataSource.query('DELETE FROM campaign_events WHERE campaignId = ? AND seq <= ?', [row.id, 2]);
        const v = await viewer(A, key);
        await v.next('campaign.snapshot');
        v.resync(0);
        const fresh = await v.next('campaign.snapshot');
        expect(fresh.seq).toBe(last);
        expect(fresh.goods[0].salesStatus).toBe('SOLD_OUT');
        v.resync(1);
        expect((await v.next('campaign.snapshot')).seq).toBe(last);
        v.resync(2);
        expect((await v.take(2)).map((e) => [e.type, e.payload.seq])).toEqual([
          ['goods.salesStatus', 3],
          ['goods.salesStatus', 4],
        ]);
        for (const bad of ['abc', -1, 1.5, null]) {
          v.resync(bad);
          expect((await v.next('campaign.snapshot')).seq).toBe(last);
        }
        await v.settle(200);
        expect(v.unread).toEqual([]);
      });

      it(`the log keeps the last EVENTS_KEPT (${EVENTS_KEPT}) events per campaign: resync within them replays, further back snapshots (even while older rows wait for the next trim)`, async () => {
        const { key } = await liveCampaign(A, 0);
        const row = await campaignRow(key);
        const campaignId = Number(row.id);
        const total = EVENTS_KEPT + 100;
        const events = Array.from({ length: total }, (_, i): PendingEvent => ({
          type: 'chat.message',
          payload: { id: String(i + 1), message: `m${i + 1}`, adminName: null, createdAt: Date.now() },
        }));
        const log = ctx().app.get(CampaignEventLog);
        const recorded = await ctx()
          .app.get(Transactions)
          .run((em) => log.record(em, campaignId, events));
        expect(recorded.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
        expect(await ctx().dataSource.getRepository(CampaignEvent).count({ where: { campaignId } })).toBe(EVENTS_KEPT);

        const v = await viewer(A, key);
        expect((await v.next('campaign.snapshot')).seq).toBe(total);
        v.resync(total - EVENTS_KEPT);
        const replay = await v.take(EVENTS_KEPT);
        expect(replay[0].payload).toMatchObject({ seq: total - EVENTS_KEPT + 1, message: `m${total - EVENTS_KEPT + 1}` });
        expect(replay.map((e) => e.payload.seq)).toEqual(Array.from({ length: EVENTS_KEPT }, (_, i) => total - EVENTS_KEPT + 1 + i));
        v.resync(total - EVENTS_KEPT - 1);
        expect((await v.next('campaign.snapshot')).seq).toBe(total);
        v.resync(0);
        expect((await v.next('campaign.snapshot')).seq).toBe(total);

        // Between two trims the table holds a few more events, but a resync further back than
        // EVENTS_KEPT is answered with a snapshot all the same, exactly as the protocol says.
        const more = 5;
        await ctx()
          .app.get(Transactions)
          .run((em) => log.record(em, campaignId, events.slice(0, more)));
        expect(await ctx().dataSource.getRepository(CampaignEvent).count({ where: { campaignId } })).toBe(EVENTS_KEPT + more);
        v.resync(total + more - EVENTS_KEPT - 1);
        expect((await v.next('campaign.snapshot')).seq).toBe(total + more);
        v.resync(total + more - EVENTS_KEPT);
        expect((await v.take(EVENTS_KEPT)).map((e) => e.payload.seq)).toEqual(
          Array.from({ length: EVENTS_KEPT }, (_, i) => total + more - EVENTS_KEPT + 1 + i),
        );
      });

      it('are refused with connect_error for an unknown campaign, a wrong accessKey, no keys, or keys that are no keys', async () => {
        const a = await createCampaign(A);
        const b = await createCampaign(B);
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: 'NoSuchCampaign1' })).toMatch(/not found/i);
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: b.campaignKey })).toMatch(/not found/i);
        expect(await Viewer.refused(base, { accessKey: B.accessKey, campaignKey: a.campaignKey })).toMatch(/not found/i);
        expect(await Viewer.refused(base, { accessKey: 'NoSuchAccessKey000000', campaignKey: a.campaignKey })).toMatch(/\S/);
        expect(await Viewer.refused(base, {})).toBe('auth must carry accessKey and campaignKey');
        // A key that was sent but is no key is told as such, not as missing.
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: 12345 })).toBe('campaignKey must be text; got number');
        expect(await Viewer.refused(base, { accessKey: A.accessKey, campaignKey: 'a'.repeat(65) })).toBe(
          'campaignKey is 65 characters long; a key has at most 64',
        );
        expect(await Viewer.refused(base, { accessKey: ['x'], campaignKey: a.campaignKey })).toBe('accessKey must be text; got a list');
        // The right pair is admitted.
        const ok = await viewer(B, b.campaignKey);
        expect((await ok.next('campaign.snapshot')).campaign.campaignKey).toBe(b.campaignKey);
      });

      it('the Socket.IO handshake answers CORS for any origin', async () => {
        const res = await http().get('/socket.io/').query({ EIO: '4', transport: 'polling' }).set('Origin', 'https://player.example.com');
        // The default namespace path; the /live namespace shares the engine (and its CORS settings).
        expect(res.status).toBe(200);
        expect(res.headers['access-control-allow-origin']).toBe('https://player.example.com');
      });
    });

    describe('shared snapshots (one read and one encoding for the viewers that get the same one)', () => {
      /** Counts the snapshot reads of the campaign (and when each started) and the snapshot encodings while `work` runs. */
      async function counting<T>(campaignId: number, work: () => Promise<T>): Promise<{ result: T; reads: number[]; encodings: number }> {
        const source = ctx().app.get<LiveSource>(LIVE_SOURCE);
        const reads: number[] = [];
        const original = source.snapshot.bind(source);
        const read = jest.spyOn(source, 'snapshot').mockImplementation((id, ...rest) => {
          if (id === campaignId) reads.push(Date.now());
          return original(id, ...rest);
        });
        const encode = jest.spyOn(LiveFanout.prototype, 'encode');
        try {
          const result = await work();
          return { result, reads, encodings: encode.mock.calls.filter(([type]) => type === 'campaign.snapshot').length };
        } finally {
          read.mockRestore();
          encode.mockRestore();
        }
      }

      it('viewers joining together get one read, encoded once: the same snapshot for each', async () => {
        const { key, goods } = await liveCampaign(A, 3);
        const id = Number((await campaignRow(key)).id);
        const { result: viewers, reads, encodings } = await counting(id, () => Promise.all(Array.from({ length: 8 }, () => viewer(A, key))));
        const snaps = await Promise.all(viewers.map((v) => v.next('campaign.snapshot')));
        expect(reads).toHaveLength(1);
        expect(encodings).toBe(1);
        for (const snap of snaps) expect(snap).toEqual(snaps[0]);
        expect(snaps[0].goods.map((g: Payload) => g.goodsId)).toEqual(goods.map((g) => String(g.id)));
      });

      it('viewers joining one after another share a snapshot while the campaign has no event: a new read at most once per SNAPSHOT_REUSE_MS', async () => {
        const { key } = await liveCampaign(A, 2);
        const id = Number((await campaignRow(key)).id);
        const {
          result: snaps,
          reads,
          encodings,
        } = await counting(id, async () => {
          const seen: Payload[] = [];
          for (let i = 0; i < 5; i += 1) {
            seen.push(await (await viewer(A, key)).next('campaign.snapshot'));
            await new Promise((r) => setTimeout(r, 60));
          }
          return seen;
        });
        // One read on any machine that joins five viewers within a second; a slower one may need more,
        // but never sooner than SNAPSHOT_REUSE_MS after the previous (each join alone would read anew).
        expect(reads.length).toBeGreaterThanOrEqual(1);
        expect(reads.length).toBeLessThan(5);
        for (let i = 1; i < reads.length; i += 1) expect(reads[i] - reads[i - 1]).toBeGreaterThanOrEqual(SNAPSHOT_REUSE_MS / 2);
        expect(encodings).toBe(reads.length);
        for (const snap of snaps) expect(snap.seq).toBe(snaps[0].seq);
      });

      it('an event drops the shared snapshot: a viewer joining after it gets a snapshot with that event, and nothing twice', async () => {
        const { key, goods } = await liveCampaign(A, 2);
        const id = Number((await campaignRow(key)).id);
        const { result, reads } = await counting(id, async () => {
          const first = await viewer(A, key);
          const s0 = (await first.next('campaign.snapshot')).seq;
          expectOk(await salesStatus(A, key, 'id', { goodsId: goods[1].id, salesStatus: 'SOLD_OUT' }));
          expect((await first.next('goods.salesStatus')).seq).toBe(s0 + 1);
          const second = await viewer(A, key);
          const snap = await second.next('campaign.snapshot');
          expectOk(await con(A).chat(key, { message: 'after both joined' }));
          return { s0, snap, first, second };
        });
        const { s0, snap, first, second } = result;
        expect(snap.seq).toBe(s0 + 1);
        expect(snap.goods.map((g: Payload) => g.salesStatus)).toEqual(['ON_SALE', 'SOLD_OUT']);
        expect(reads).toHaveLength(2);
        for (const v of [first, second]) expect((await v.next('chat.message')).seq).toBe(s0 + 2);
        await second.settle(200);
        expect([first.unread, second.unread]).toEqual([[], []]);
      });

      it('resyncs answered with a snapshot come SNAPSHOT_RESYNC_INTERVAL_MS after the join and share one, unless the campaign has moved on since it was read', async () => {
        const { key } = await liveCampaign(A, 1);
        const id = Number((await campaignRow(key)).id);
        const v = await viewer(A, key);
        const w = await viewer(A, key);
        const s0 = (await v.next('campaign.snapshot')).seq;
        await w.next('campaign.snapshot');
        const shared = await counting(id, async () => {
          const asked = Date.now();
          v.resync('not a seq');
          w.resync('not a seq');
          const [a, b] = await Promise.all([v.next('campaign.snapshot'), w.next('campaign.snapshot')]);
          return { seqs: [a.seq, b.seq], waited: Date.now() - asked };
        });
        expect(shared.result.seqs).toEqual([s0, s0]);
        // Each waited out the rest of the interval since its join's snapshot; then both got one read, encoded once.
        expect(shared.result.waited).toBeGreaterThanOrEqual(SNAPSHOT_RESYNC_INTERVAL_MS - 1000);
        expect([shared.reads.length, shared.encodings]).toEqual([1, 1]);
        // An event this node has not delivered (recorded straight into the log): the resync read its seq.
        const log = ctx().app.get(CampaignEventLog);
        await ctx()
          .app.get(Transactions)
          .run((em) => log.record(em, id, [{ type: 'chat.message', payload: { id: 'x', message: 'unseen', adminName: null, createdAt: Date.now() } }]));
        const fresh = await counting(id, async () => {
          v.resync(s0 + 5); // ahead of the campaign: a snapshot
          return v.next('campaign.snapshot');
        });
        expect(fresh.result.seq).toBe(s0 + 1);
        expect([fresh.reads.length, fresh.encodings]).toEqual([1, 1]);
      });

      it('a room refreshed with a snapshot (its node missed events the log no longer holds) gets one read, encoded once, for all its viewers', async () => {
        const { key } = await liveCampaign(A, 2);
        const id = Number((await campaignRow(key)).id);
        const viewers = await Promise.all(Array.from({ length: 4 }, () => viewer(A, key)));
        for (const v of viewers) await v.next('campaign.snapshot');
        const gateway: { refreshRoom(campaignId: number): Promise<void> } = ctx().app.get<unknown>(LiveGateway) as never;
        const { reads, encodings } = await counting(id, () => gateway.refreshRoom(id));
        // A new read (the shared one may lack what was missed), shared by the whole room.
        expect([reads.length, encodings]).toEqual([1, 1]);
        for (const v of viewers) expect(keys(await v.next('campaign.snapshot'))).toEqual(SNAPSHOT_KEYS);
      });
    });

    // -------------------------------------------------------------------------------------------
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true' },
);
