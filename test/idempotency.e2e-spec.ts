import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { IdempotencyService } from '../src/idempotency/idempotency.service';
import { describeTwoNodes } from './support/cluster-app';
import { useImageServer } from './support/image-server';
import { xlsx } from './support/sheet-fixtures';
import { describeEngines, holdWriteLock, TestApp, TestCustomer } from './support/test-app';

/** Idempotency-Key on authenticated writes (docs/api-reference.md, Idempotency keys). */

type Body = Record<string, unknown>;

const item = (n: number | string, extra: Body = {}): Body => ({
  name: `Item ${n}`,
  sku: `IK-${n}`,
  url: `https://shop.example.com/goods/IK-${n}`,
  ...extra,
});

const images = useImageServer();

async function countGoods(t: TestApp, customerId: number): Promise<number> {
  const [{ n }] = await t.dataSource.query<Array<{ n: number | string }>>('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [customerId]);
  return Number(n);
}

describeEngines(
  'Idempotency-Key',
  __filename,
  (ctx) => {
    let C: TestCustomer;
    let D: TestCustomer;
    const goods = (c: TestCustomer, rest = '') => `/v1/goods/${c.accessKey}${rest}`;
    const register = (c: TestCustomer, body: unknown, key?: string) => {
      let req = ctx().http.post(goods(c)).set('Authorization', c.auth());
      if (key !== undefined) req = req.set('Idempotency-Key', key);
      return req.send(body as object);
    };
    const syncWithKey = (c: TestCustomer, elements: Body[], key: string) =>
      ctx().http.post(goods(c, '/sync')).set('Authorization', c.auth()).set('Idempotency-Key', key).send(elements);

    beforeAll(async () => {
      C = await ctx().createCustomer('Idem C');
      D = await ctx().createCustomer('Idem D');
    });

    it('a retried register answers the first answer byte for byte, with Idempotent-Replayed, and creates one item', async () => {
      const first = await register(C, item(1), 'reg-1').buffer(true);
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const second = await register(C, item(1), 'reg-1').buffer(true);
      expect(second.status).toBe(200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.headers['content-type']).toBe(first.headers['content-type']);
      expect(second.text).toBe(first.text);
      expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
      expect(await countGoods(ctx(), C.id)).toBe(1);
      // Without the key the same body is a new request: 409, the sku is taken.
      expect((await register(C, item(1))).status).toBe(409);
    });

    it('an answer compressed as it streams (over 64 KB, gzip or br) is stored whole and replayed, in the encoding the retry asks for', async () => {
      const G = await ctx().createCustomer('Compressed');
      const elements = Array.from({ length: 400 }, (_, i) => item(`Z${i}`, { description: `row ${i} `.repeat(20) }));
      for (const [first, again] of [
        ['gzip', 'gzip'],
        ['br', 'identity'],
      ]) {
        const key = `big-${first}`;
        const send = (encoding: string) =>
          ctx()
            .http.post(goods(G, '/sync'))
            .set('Authorization', G.auth())
            .set('Idempotency-Key', key)
            .set('Accept-Encoding', encoding)
            .send(elements.map((e) => ({ ...e, sku: `${String(e.sku)}-${first}`, url: `${String(e.url)}-${first}` })));
        const answer = await send(first);
        expect([answer.status, answer.headers['content-encoding']]).toEqual([200, first]);
        expect(answer.body.createCount).toBe(400);
        const replayed = await send(again);
        expect([replayed.status, replayed.headers['idempotent-replayed']]).toEqual([200, 'true']);
        expect(replayed.body).toEqual(answer.body);
      }
      expect(await countGoods(ctx(), G.id)).toBe(800);
    });

    it('a stored 4xx answer is replayed too (the request was wrong, it stays wrong)', async () => {
      const first = await register(C, { name: 'no sku' }, 'bad-1');
      expect(first.status).toBe(400);
      const again = await register(C, { name: 'no sku' }, 'bad-1');
      expect(again.status).toBe(400);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
    });

    it('the same key with another body, path, method or query is 422 in the error shape', async () => {
      expect((await register(C, item(2), 'mix-1')).status).toBe(200);
      const otherBody = await register(C, item(3), 'mix-1');
      expect(otherBody.status).toBe(422);
      expect(otherBody.body).toEqual({ _s: -422, _e: expect.stringMatching(/different request/) });
      const otherQuery = await ctx()
        .http.post(`${goods(C)}?refreshMedia=true`)
        .set('Authorization', C.auth())
        .set('Idempotency-Key', 'mix-1')
        .send(item(2));
      expect(otherQuery.status).toBe(422);
      const otherRoute = await ctx().http.put(goods(C, '/sku')).set('Authorization', C.auth()).set('Idempotency-Key', 'mix-1').send(item(2));
      expect(otherRoute.status).toBe(422);
      expect(await countGoods(ctx(), C.id)).toBe(2);
    });

    it('keys are checked: empty, over 255 characters or not printable ASCII is 400 -510, and nothing is written', async () => {
      for (const key of ['x'.repeat(256), 'caf\u00e9']) {
        const res = await register(C, item(4), key);
        expect(res.status).toBe(400);
        expect(res.body._s).toBe(-510);
      }
      expect((await register(C, item(4), 'x'.repeat(255))).status).toBe(200);
      expect((await register(C, item(5), '')).status).toBe(400);
      // Sent twice, the header is refused (not read as the one key "a, b").
      const twice = await ctx()
        .http.post(`/v1/goods/${C.accessKey}`)
        .set('Authorization', C.auth())
        .set('Idempotency-Key', ['a', 'b'] as unknown as string)
        .send(item(5));
      expect({ status: twice.status, _s: twice.body._s, _e: twice.body._e }).toEqual({
        status: 400,
        _s: -510,
        _e: 'The Idempotency-Key header was sent 2 times: send it once',
      });
      expect(await countGoods(ctx(), C.id)).toBe(3);
    });

    it('keys are per customer and case-sensitive: the same key of two customers runs twice', async () => {
      const c = await register(C, item(6), 'shared-key');
      const d = await register(D, item(6), 'shared-key');
      expect(c.status).toBe(200);
      expect(d.status).toBe(200);
      expect(d.headers['idempotent-replayed']).toBeUndefined();
      expect(d.body.id).not.toBe(c.body.id);
      const upper = await register(C, item(7), 'SHARED-KEY');
      expect(upper.status).toBe(200);
      expect(upper.headers['idempotent-replayed']).toBeUndefined();
    });

    it('a request without a token is 401 and does not take the key', async () => {
      const res = await ctx().http.post(goods(C)).set('Idempotency-Key', 'no-token').send(item(8));
      expect(res.status).toBe(401);
      const real = await register(C, item(8), 'no-token');
      expect(real.status).toBe(200);
      expect(real.headers['idempotent-replayed']).toBeUndefined();
    });

    it('while the first request runs, the same key is 409 with Retry-After; once it ends the retry replays it', async () => {
      const tag = `idem-running-${ctx().engine}`;
      const hold = images().hold(tag);
      const body = item(9, { mediaUrl: images().url1(`/held/${tag}/photo.jpg`) });
      const first = register(C, body, 'slow-1').then((r) => r);
      await hold.arrived;
      const during = await register(C, body, 'slow-1');
      expect(during.status).toBe(409);
      expect(during.body).toEqual({ _s: -409, _e: expect.stringMatching(/still running/) });
      expect(during.headers['retry-after']).toBe('1');
      hold.release();
      const done = await first;
      expect(done.status).toBe(200);
      expect(done.body.medias).toHaveLength(1);
      const after = await register(C, body, 'slow-1');
      expect(after.status).toBe(200);
      expect(after.headers['idempotent-replayed']).toBe('true');
      expect(after.body).toEqual(done.body);
      expect(images().hits(`/held/${tag}/photo.jpg`, 1)).toBe(1);
    });

    it('a 503 (database unavailable) is not stored: the key is free again and the retry runs', async () => {
      const release = await holdWriteLock(ctx(), C.id);
      let refused: Response;
      try {
        refused = await register(C, item(10), 'outage-1');
      } finally {
        await release();
      }
      expect(refused.status).toBe(503);
      const retried = await register(C, item(10), 'outage-1');
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      const [{ n }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ? AND sku = ?', [C.id, 'IK-10']);
      expect(Number(n)).toBe(1);
    });

    it('expired keys are ignored, and swept', async () => {
      expect((await register(C, item(11), 'old-1')).status).toBe(200);
      // Age the key past its TTL (as if a day had gone by).
      await ctx().dataSource.query('UPDATE idempotency_keys SET expiresAt = ? WHERE customerId = ?', [Date.now() - 1, C.id]);
      const [{ n: before }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM idempotency_keys WHERE customerId = ?', [C.id]);
      expect(Number(before)).toBeGreaterThan(0);
      // An expired key is not replayed: the request runs again (here: the sku is taken now, 409).
      const again = await register(C, item(11), 'old-1');
      expect(again.status).toBe(409);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      await ctx().dataSource.query('UPDATE idempotency_keys SET expiresAt = ? WHERE customerId = ?', [Date.now() - 1, C.id]);
      expect(await ctx().app.get(IdempotencyService).sweep()).toBeGreaterThan(0);
      const [{ n: keys }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM idempotency_keys WHERE customerId = ?', [C.id]);
      const [{ n: parts }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM idempotency_key_parts WHERE customerId = ?', [C.id]);
      expect([Number(keys), Number(parts)]).toEqual([0, 0]);
    });

    it('a running key whose lease ran out (its node died) is taken over', async () => {
      await ctx().dataSource.query(
        'INSERT INTO idempotency_keys (customerId, keyHash, fingerprint, owner, statusCode, headers, bodyParts, leaseUntil, expiresAt) VALUES (?, ?, ?, ?, NULL, NULL, NULL, ?, ?)',
        [C.id, 'a'.repeat(64), 'f'.repeat(64), 'dead-node-owner', Date.now() - 1, Date.now() + 3_600_000],
      );
      const { keyHashOf } = await import('../src/idempotency/idempotency-request');
      await ctx().dataSource.query('UPDATE idempotency_keys SET keyHash = ? WHERE owner = ?', [keyHashOf('dead-1'), 'dead-node-owner']);
      const res = await register(C, item(12), 'dead-1');
      expect(res.status).toBe(200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    });

    it('a write that committed but whose answer was not kept (its node died, or lost the database, at that instant) is not applied again once its lease lapses: 409', async () => {
      const { keyHashOf } = await import('../src/idempotency/idempotency-request');
      const E = await ctx().createCustomer('Lost answers');
      const campaign = await ctx().http.post(`/v1/console/${E.accessKey}/campaigns`).set('Authorization', E.auth()).send({ title: 'Orders' });
      const registered = await ctx().http.post(goods(E)).set('Authorization', E.auth()).send(item('L1'));
      const key = campaign.body.campaignKey as string;
      expect(
        (
          await ctx()
            .http.post(`/v1/console/${E.accessKey}/campaigns/${key}/goods`)
            .set('Authorization', E.auth())
            .send({ skus: ['IK-L1'] })
        ).status,
      ).toBe(200);
      const stock = `${goods(E)}/campaign/${key}/stock/sku`;
      expect((await ctx().http.put(stock).set('Authorization', E.auth()).send({ sku: 'IK-L1', stock: 1000 })).status).toBe(200);
      const take = () =>
        ctx().http.post(`${stock}/decrement`).set('Authorization', E.auth()).set('Idempotency-Key', 'order-lost').send({ sku: 'IK-L1', quantity: 1 });
      // The decrement commits; storing its answer fails as if the node had died right then (its lease
      // is no longer renewed). The answer still goes out, but the client (say) never got it.
      const service = ctx().app.get(IdempotencyService);
      const store = jest.spyOn(service, 'store').mockImplementationOnce(async (hold) => {
        (service as unknown as { stopRenewing(h: unknown): void }).stopRenewing(hold);
        throw new Error('the database went away');
      });
      try {
        expect((await take()).body.stock).toBe(999);
      } finally {
        store.mockRestore();
      }
      // Within the lease: still running. Once it lapsed: applied, not run again.
      expect((await take()).status).toBe(409);
      await ctx().dataSource.query('UPDATE idempotency_keys SET leaseUntil = ? WHERE customerId = ? AND keyHash = ?', [
        Date.now() - 1,
        E.id,
        keyHashOf('order-lost'),
      ]);
      const retried = await take();
      expect([retried.status, retried.body._s]).toEqual([409, -409]);
      expect(retried.body._e).toMatch(/was applied, but its node stopped before its answer was kept; it is not applied again/);
      const [{ stock: left }] = await ctx().dataSource.query('SELECT stock FROM campaign_goods WHERE goodsId = ?', [registered.body.id]);
      expect(Number(left)).toBe(999);
      // The key is kept (and swept with the others at its expiry), not as a stale running one.
      await ctx().app.get(IdempotencyService).sweep();
      expect((await take()).status).toBe(409);
    });

    it('a 5xx after the write committed keeps the key: the retry is told the request was applied (409), not run again', async () => {
      const { MediaService } = await import('../src/media/media.service');
      const F = await ctx().createCustomer('Failed after commit');
      // The item is stored; the step after the commit fails (a disk error, say): the answer is a 500.
      const release = jest.spyOn(ctx().app.get(MediaService), 'releaseFiles').mockRejectedValueOnce(new Error('the disk went away'));
      try {
        const failed = await register(F, item('A1'), 'after-commit');
        expect([failed.status, failed.body._s]).toEqual([500, -500]);
      } finally {
        release.mockRestore();
      }
      expect(await countGoods(ctx(), F.id)).toBe(1);
      const retried = await register(F, item('A1'), 'after-commit');
      expect([retried.status, retried.body._s]).toEqual([409, -409]);
      expect(retried.body._e).toMatch(/was applied, but .* it is not applied again/);
      expect(await countGoods(ctx(), F.id)).toBe(1);
      // Without the key the same body is a new request, refused as the sku is taken: the item is there.
      expect((await register(F, item('A1'))).status).toBe(409);
    });

    it('a request that commits nothing before its lease lapses (its node died mid-write) runs again: nothing of it was applied', async () => {
      const { keyHashOf } = await import('../src/idempotency/idempotency-request');
      const service = ctx().app.get(IdempotencyService);
      // Refused before any write commits (the catalog's lock held elsewhere), and the release lost too.
      const release = jest.spyOn(service, 'release').mockImplementationOnce(async (hold) => {
        (service as unknown as { stopRenewing(h: unknown): void }).stopRenewing(hold);
        throw new Error('the database went away');
      });
      const unlock = await holdWriteLock(ctx(), C.id);
      try {
        expect((await register(C, item(14), 'nothing-1')).status).toBe(503);
      } finally {
        await unlock();
        release.mockRestore();
      }
      await ctx().dataSource.query('UPDATE idempotency_keys SET leaseUntil = ? WHERE customerId = ? AND keyHash = ?', [
        Date.now() - 1,
        C.id,
        keyHashOf('nothing-1'),
      ]);
      const retried = await register(C, item(14), 'nothing-1');
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
    });

    it('a spreadsheet import retried with the same key is applied once (the file is fingerprinted)', async () => {
      const sheet = await xlsx([
        ['sku', 'name', 'url'],
        ['XL-1', 'Sheet item 1', 'https://shop.example.com/xl/1'],
        ['XL-2', 'Sheet item 2', 'https://shop.example.com/xl/2'],
      ]);
      const upload = (bytes: Buffer, key: string) =>
        ctx().http.post(goods(D, '/excel')).set('Authorization', D.auth()).set('Idempotency-Key', key).attach('file', bytes, 'goods.xlsx');
      const first = await upload(sheet, 'sheet-1');
      expect(first.status).toBe(200);
      expect(first.body.createCount).toBe(2);
      const retry = await upload(sheet, 'sheet-1');
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body).toEqual(first.body);
      const [{ n }] = await ctx().dataSource.query("SELECT COUNT(*) AS n FROM goods WHERE customerId = ? AND sku LIKE 'XL-%'", [D.id]);
      expect(Number(n)).toBe(2);
      const updated = await ctx().http.get(goods(D, '/sku')).query({ value: 'XL-1' }).set('Authorization', D.auth());
      expect(updated.body.name).toBe('Sheet item 1');
      // Another file with the same key: 422.
      const other = await xlsx([
        ['sku', 'name', 'url'],
        ['XL-3', 'Sheet item 3', 'https://shop.example.com/xl/3'],
      ]);
      expect((await upload(other, 'sheet-1')).status).toBe(422);
    });

    it('other writes are covered too: sync, console, campaign goods, sales status and deletes', async () => {
      const sync = () => syncWithKey(D, [item('S1')], 'sync-1');
      const s1 = await sync();
      expect(s1.status).toBe(200);
      expect((await sync()).headers['idempotent-replayed']).toBe('true');
      const create = () =>
        ctx().http.post(`/v1/console/${D.accessKey}/campaigns`).set('Authorization', D.auth()).set('Idempotency-Key', 'camp-1').send({ title: 'Idem live' });
      const c1 = await create();
      expect(c1.status).toBe(200);
      const c2 = await create();
      expect(c2.headers['idempotent-replayed']).toBe('true');
      expect(c2.body.campaignKey).toBe(c1.body.campaignKey);
      const [{ n }] = await ctx().dataSource.query('SELECT COUNT(*) AS n FROM campaigns WHERE customerId = ?', [D.id]);
      expect(Number(n)).toBe(1);
      const goodsId = s1.body.results[0].id as number;
      const del = () =>
        ctx()
          .http.delete(goods(D, `/${goodsId}/sku`))
          .query({ value: 'IK-S1' })
          .set('Authorization', D.auth())
          .set('Idempotency-Key', 'del-1');
      const d1 = await del();
      expect(d1.status).toBe(200);
      const d2 = await del();
      expect(d2.status).toBe(200);
      expect(d2.headers['idempotent-replayed']).toBe('true');
      // Campaign goods, stock and sales status (form and query parameters are fingerprinted too).
      const sku = (await ctx().http.post(goods(D)).set('Authorization', D.auth()).send(item('S2'))).body as Body;
      const campaignKey = c1.body.campaignKey as string;
      const add = () =>
        ctx()
          .http.post(`/v1/console/${D.accessKey}/campaigns/${campaignKey}/goods`)
          .set('Authorization', D.auth())
          .set('Idempotency-Key', 'add-1')
          .send({ goodsIds: [sku.id] });
      expect((await add()).status).toBe(200);
      expect((await add()).headers['idempotent-replayed']).toBe('true');
      const stock = `${goods(D)}/campaign/${campaignKey}/stock`;
      expect((await ctx().http.put(`${stock}/sku`).set('Authorization', D.auth()).send({ sku: 'IK-S2', stock: 10 })).status).toBe(200);
      const take = (key: string) =>
        ctx().http.post(`${stock}/sku/decrement`).set('Authorization', D.auth()).set('Idempotency-Key', key).type('form').send({ sku: 'IK-S2', quantity: '3' });
      expect((await take('order-1')).body.stock).toBe(7);
      const retried = await take('order-1');
      expect([retried.headers['idempotent-replayed'], retried.body.stock]).toEqual(['true', 7]);
      expect((await take('order-2')).body.stock).toBe(4);
      const status = (value: string) =>
        ctx()
          .http.put(`${goods(D)}/campaign/${campaignKey}/salesStatus/sku`)
          .query({ sku: 'IK-S2', salesStatus: value })
          .set('Authorization', D.auth())
          .set('Idempotency-Key', 'status-1');
      expect((await status('SOLD_OUT')).status).toBe(200);
      expect((await status('SOLD_OUT')).headers['idempotent-replayed']).toBe('true');
      expect((await status('ON_SALE')).status).toBe(422);
      // A read is not covered: the header is ignored.
      const list = await ctx().http.get(goods(D)).set('Authorization', D.auth()).set('Idempotency-Key', 'x'.repeat(300));
      expect(list.status).toBe(200);
    });

    it('a streamed answer (sync) is stored before its last byte goes out: a retry sent the moment it arrives replays it', async () => {
      // The sync answer is a StreamableFile: its body is written before end(). Storing it is slowed down
      // here, so that an answer let out before the store would reach the client first.
      const service = ctx().app.get(IdempotencyService);
      const store = service.store.bind(service);
      const slowed = jest.spyOn(service, 'store').mockImplementation(async (...args) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return store(...args);
      });
      try {
        const sync = () => syncWithKey(D, [item('ST1')], 'sync-streamed');
        const first = await sync();
        expect(first.status).toBe(200);
        expect(slowed).toHaveBeenCalledTimes(1);
        const retry = await sync();
        expect([retry.status, retry.headers['idempotent-replayed']]).toEqual([200, 'true']);
        expect(retry.text).toBe(first.text);
      } finally {
        slowed.mockRestore();
      }
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', DB_LOCK_TIMEOUT_MS: '1000' },
);

describeEngines(
  'Idempotency-Key: answers over IDEMPOTENCY_MAX_RESPONSE_BYTES',
  `${__filename}-small`,
  (ctx) => {
    it('an answer too large to keep is not replayed, and the request is not applied again (409)', async () => {
      const C = await ctx().createCustomer('Small');
      const sync = () =>
        ctx()
          .http.post(`/v1/goods/${C.accessKey}/sync`)
          .set('Authorization', C.auth())
          .set('Idempotency-Key', 'big-1')
          .send(Array.from({ length: 20 }, (_, i) => item(`big-${i}`, { description: 'x'.repeat(200) })));
      const first = await sync();
      expect(first.status).toBe(200);
      expect(first.text.length).toBeGreaterThan(1024);
      const again = await sync();
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ _s: -409, _e: expect.stringMatching(/was applied \(HTTP 200\) but its answer was too large to keep/) });
      expect(await countGoods(ctx(), C.id)).toBe(20);
      // A small answer still fits.
      const small = () => ctx().http.post(`/v1/goods/${C.accessKey}`).set('Authorization', C.auth()).set('Idempotency-Key', 'small-1').send(item('s'));
      expect((await small()).status).toBe(200);
      expect((await small()).headers['idempotent-replayed']).toBe('true');
    });
  },
  { IDEMPOTENCY_MAX_RESPONSE_BYTES: '1024' },
);

describeTwoNodes('Idempotency-Key on two nodes', __filename, 'Idem cluster', (cluster) => {
  const register = (node: 'A' | 'B', n: number, key: string) =>
    cluster[node].http
      .post(`/v1/goods/${cluster.C.accessKey}`)
      .set('Authorization', cluster.C.auth())
      .set('Idempotency-Key', key)
      .send(item(`N${n}`));

  it('the same key sent to both nodes at once is applied exactly once', async () => {
    const rounds = 12;
    const pairs = await Promise.all(Array.from({ length: rounds }, (_, i) => Promise.all([register('A', i, `both-${i}`), register('B', i, `both-${i}`)])));
    for (const [a, b] of pairs) {
      const fresh = [a, b].filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
      expect(fresh).toHaveLength(1);
      const other = fresh[0] === a ? b : a;
      // The other one either replays the answer or was told the key is in use.
      if (other.status === 200) {
        expect(other.headers['idempotent-replayed']).toBe('true');
        expect(other.body).toEqual(fresh[0].body);
      } else expect(other.status).toBe(409);
    }
    const [{ n }] = await cluster.A.app.get(DataSource).query<Array<{ n: string }>>('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [cluster.C.id]);
    expect(Number(n)).toBe(rounds);
  });

  it('a key used on one node is replayed by the other', async () => {
    const a = await register('A', 100, 'cross-1');
    expect(a.status).toBe(200);
    const b = await register('B', 100, 'cross-1');
    expect(b.status).toBe(200);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.body).toEqual(a.body);
  });
});
