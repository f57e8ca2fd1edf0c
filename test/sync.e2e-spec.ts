import { buildSearchText, keyHash } from '../src/goods/goods-keys';
import { describeEngines, TestApp, TestCustomer } from './support/test-app';

type Row = Record<string, unknown> & { row: number; status: string; message: string | null; id?: number };

/** The Goods fields of a row result (what a look-up of the stored item returns). */
function goodsPart(row: Row): Record<string, unknown> {
  const { row: _row, status: _status, message: _message, ...goods } = row;
  return goods;
}

function goodsItem(n: number | string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: `Item ${n}`, sku: `SKU-${n}`, url: `https://shop.example.com/goods/${n}`, ...extra };
}

describeEngines('POST /v1/goods/{accessKey}/sync', __filename, (ctx) => {
  const sync = (c: TestCustomer, body: unknown) =>
    ctx()
      .http.post(`/v1/goods/${c.accessKey}/sync`)
      .set('Authorization', c.auth())
      .send(body as object);

  /** Syncs and checks the envelope invariants common to every 200 answer. */
  async function syncOk(c: TestCustomer, body: unknown[]) {
    const res = await sync(c, body).expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json; charset=utf-8/);
    const env = res.body as { results: Row[]; totalCount: number; createCount: number; updateCount: number; failCount: number; _s: number };
    expect(env._s).toBe(0);
    expect(env.results).toHaveLength(body.length);
    expect(env.totalCount).toBe(body.length);
    expect(env.totalCount).toBe(env.createCount + env.updateCount + env.failCount);
    expect(env.createCount).toBe(env.results.filter((r) => r.status === 'CREATE').length);
    expect(env.updateCount).toBe(env.results.filter((r) => r.status === 'UPDATE').length);
    expect(env.failCount).toBe(env.results.filter((r) => r.status === 'FAIL').length);
    env.results.forEach((r, i) => expect(r.row).toBe(i + 1));
    return env;
  }

  const bySku = async (c: TestCustomer, sku: string) => ctx().http.get(`/v1/goods/${c.accessKey}/sku`).query({ value: sku }).set('Authorization', c.auth());

  async function stored(c: TestCustomer, sku: string): Promise<Record<string, unknown>> {
    const res = await bySku(c, sku);
    expect(res.status).toBe(200);
    return res.body as Record<string, unknown>;
  }

  async function totalOf(c: TestCustomer): Promise<number> {
    const res = await ctx().http.get(`/v1/goods/${c.accessKey}`).query({ count: 1 }).set('Authorization', c.auth()).expect(200);
    return res.body.totalCount as number;
  }

  async function rowCount(t: TestApp, c: TestCustomer): Promise<number> {
    const [{ n }] = await t.dataSource.query('SELECT COUNT(*) AS n FROM goods WHERE customerId = ?', [c.id]);
    return Number(n);
  }

  it('refuses a call without a token (401 -102)', async () => {
    const c = await ctx().createCustomer();
    const res = await ctx()
      .http.post(`/v1/goods/${c.accessKey}/sync`)
      .send([goodsItem(1)])
      .expect(401);
    expect(res.body._s).toBe(-102);
    expect(typeof res.body._e).toBe('string');
    expect(await rowCount(ctx(), c)).toBe(0);
  });

  it('refuses a token of another customer (401)', async () => {
    const a = await ctx().createCustomer();
    const b = await ctx().createCustomer();
    const res = await ctx()
      .http.post(`/v1/goods/${a.accessKey}/sync`)
      .set('Authorization', b.auth())
      .send([goodsItem(1)])
      .expect(401);
    expect(res.body._s).toBe(-102);
    expect(await rowCount(ctx(), a)).toBe(0);
  });

  it('creates new items: row = stored Goods + row + status CREATE + message null', async () => {
    const c = await ctx().createCustomer('Creator', 'USD');
    const env = await syncOk(c, [
      {
        name: '스마트 워치 7',
        brand: 'Sampletech',
        description: '45 mm case, GPS',
        sku: 'SW-7',
        url: 'https://shop.example.com/goods/SW-7',
        originalPrice: 399000,
        discountedPrice: 359100,
        discountPercentage: 10,
      },
      goodsItem('plain'),
    ]);
    expect(env).toMatchObject({ totalCount: 2, createCount: 2, updateCount: 0, failCount: 0 });
    const [first, second] = env.results;
    expect(first).toEqual({
      id: expect.any(Number),
      name: '스마트 워치 7',
      brand: 'Sampletech',
      description: '45 mm case, GPS',
      url: 'https://shop.example.com/goods/SW-7',
      sku: 'SW-7',
      mediaUrl: null,
      medias: [],
      originalPrice: 399000,
      discountedPrice: 359100,
      currency: 'USD',
      discountPercentage: 10,
      row: 1,
      status: 'CREATE',
      message: null,
    });
    expect(second).toMatchObject({
      row: 2,
      status: 'CREATE',
      message: null,
      name: 'Item plain',
      brand: null,
      description: null,
      originalPrice: 0,
      discountedPrice: 0,
      discountPercentage: 0,
      currency: 'USD',
    });
    expect(Number.isInteger(first.id) && (first.id as number) > 0).toBe(true);
    expect(second.id).not.toBe(first.id);

    // The item is then visible through the look-up, exactly as the row described it.
    expect(await stored(c, 'SW-7')).toEqual(goodsPart(first));
    expect(await stored(c, 'SKU-plain')).toEqual(goodsPart(second));
    const byUrl = await ctx()
      .http.get(`/v1/goods/${c.accessKey}/url`)
      .query({ value: 'https://shop.example.com/goods/SW-7' })
      .set('Authorization', c.auth())
      .expect(200);
    expect(byUrl.body.id).toBe(first.id);
  });

  it('updates by id, by sku and by url; absent fields keep their value', async () => {
    const c = await ctx().createCustomer();
    const full = (n: number) =>
      goodsItem(n, { brand: `Brand ${n}`, description: `Desc ${n}`, originalPrice: 100 + n, discountedPrice: 90 + n, discountPercentage: 5 });
    const created = await syncOk(c, [full(1), full(2), full(3)]);
    const [i1, i2, i3] = created.results;

    const env = await syncOk(c, [
      { id: i1.id, name: 'Renamed by id' },
      { sku: 'SKU-2', discountedPrice: 42.5 },
      { url: 'https://shop.example.com/goods/3', brand: 'Brand by url' },
    ]);
    expect(env).toMatchObject({ totalCount: 3, createCount: 0, updateCount: 3, failCount: 0 });
    expect(env.results.map((r) => r.status)).toEqual(['UPDATE', 'UPDATE', 'UPDATE']);
    expect(env.results.map((r) => r.message)).toEqual([null, null, null]);
    expect(env.results.map((r) => r.id)).toEqual([i1.id, i2.id, i3.id]);

    expect(env.results[0]).toEqual({ ...i1, name: 'Renamed by id', row: 1, status: 'UPDATE', message: null });
    expect(env.results[1]).toEqual({ ...i2, discountedPrice: 42.5, row: 2, status: 'UPDATE', message: null });
    expect(env.results[2]).toEqual({ ...i3, brand: 'Brand by url', row: 3, status: 'UPDATE', message: null });

    expect(await stored(c, 'SKU-1')).toEqual({ ...goodsPart(i1), name: 'Renamed by id' });
    expect(await stored(c, 'SKU-2')).toEqual({ ...goodsPart(i2), discountedPrice: 42.5 });
    expect(await stored(c, 'SKU-3')).toEqual({ ...goodsPart(i3), brand: 'Brand by url' });
    expect(await rowCount(ctx(), c)).toBe(3);
  });

  it('null clears a nullable field; by id both keys may change; by sku the url, by url the sku', async () => {
    const c = await ctx().createCustomer();
    const created = await syncOk(c, [goodsItem('a', { brand: 'B', description: 'D' }), goodsItem('b'), goodsItem('c')]);
    const [a, b, cc] = created.results;
    const env = await syncOk(c, [
      { id: a.id, brand: null, description: null, sku: 'SKU-a2', url: 'https://shop.example.com/goods/a2' },
      { sku: 'SKU-b', url: 'https://shop.example.com/goods/b2' },
      { url: 'https://shop.example.com/goods/c', sku: 'SKU-c2' },
    ]);
    expect(env.updateCount).toBe(3);
    expect(await stored(c, 'SKU-a2')).toMatchObject({
      id: a.id,
      brand: null,
      description: null,
      name: 'Item a',
      url: 'https://shop.example.com/goods/a2',
    });
    expect(await stored(c, 'SKU-b')).toMatchObject({ id: b.id, url: 'https://shop.example.com/goods/b2' });
    expect(await stored(c, 'SKU-c2')).toMatchObject({ id: cc.id, url: 'https://shop.example.com/goods/c' });
    // The old keys are free: nothing answers to them any more.
    expect((await bySku(c, 'SKU-a')).status).toBe(404);
    expect((await bySku(c, 'SKU-c')).status).toBe(404);
    expect(await rowCount(ctx(), c)).toBe(3);
  });

  it('null for id, name, sku or url is the same as leaving it out, blank text clears a nullable field: a FAIL row goes back as it is once fixed', async () => {
    const c = await ctx().createCustomer();
    // Typed clients send null for every field they do not set.
    const typed = { id: null, name: 'Typed', sku: 'SKU-typed', url: 'https://shop.example.com/typed', brand: null, mediaUrl: null, originalPrice: null };
    const created = await syncOk(c, [typed]);
    expect(created.results[0]).toMatchObject({ status: 'CREATE', message: null, name: 'Typed' });
    expect(typeof created.results[0].id).toBe('number');
    // An element that fails: its FAIL row carries every field, null where none was sent.
    const failed = await syncOk(c, [{ sku: 'SKU-fixed', url: 'https://shop.example.com/fixed', name: 'Fixed', originalPrice: -1 }]);
    const fail = failed.results[0];
    expect(fail).toMatchObject({ status: 'FAIL', id: null, brand: null, medias: [] });
    expect(fail.message).toMatch(/originalPrice/);
    // Fixed and sent back whole (row, status, message, currency, medias and all): it is created.
    const resent = await syncOk(c, [{ ...fail, originalPrice: 100 }]);
    expect(resent.results[0]).toMatchObject({ status: 'CREATE', message: null, sku: 'SKU-fixed', name: 'Fixed', originalPrice: 100 });
    // A FAIL row of an update, fixed and sent back: only what it holds changes; its nulls (the fields its
    // element did not send) leave the stored brand, description and prices alone.
    await syncOk(c, [{ sku: 'SKU-fixed', brand: 'Brand', description: 'Kept', discountedPrice: 90 }]);
    const failedUpdate = (await syncOk(c, [{ sku: 'SKU-fixed', originalPrice: -1 }])).results[0];
    expect(failedUpdate).toMatchObject({ status: 'FAIL', brand: null, description: null, discountedPrice: null });
    const fixedUpdate = await syncOk(c, [{ ...failedUpdate, originalPrice: 120 }]);
    expect(fixedUpdate.results[0]).toMatchObject({ status: 'UPDATE', message: null });
    expect(await stored(c, 'SKU-fixed')).toMatchObject({ brand: 'Brand', description: 'Kept', discountedPrice: 90, originalPrice: 120, name: 'Fixed' });
    // Blank text: "" clears brand, mediaUrl and prices, as null does; description keeps "" as sent.
    await syncOk(c, [{ sku: 'SKU-typed', brand: 'B', originalPrice: 5, description: 'D' }]);
    const blank = await syncOk(c, [{ id: null, sku: 'SKU-typed', name: null, url: null, brand: '', mediaUrl: ' ', originalPrice: '', description: '' }]);
    expect(blank.results[0]).toMatchObject({ status: 'UPDATE', message: null });
    expect(await stored(c, 'SKU-typed')).toMatchObject({
      name: 'Typed',
      url: 'https://shop.example.com/typed',
      brand: null,
      mediaUrl: null,
      originalPrice: 0,
      description: '',
    });
    // A key that is blank still fails, and so does an element whose keys are all null.
    const refused = await syncOk(c, [
      { sku: ' ', url: 'https://shop.example.com/blank' },
      { id: null, sku: null, url: null, name: 'no key' },
    ]);
    expect(refused.results.map((r) => [r.status, r.message])).toEqual([
      ['FAIL', 'sku must not be empty'],
      ['FAIL', 'one of id, sku or url is required to match or create an item'],
    ]);
    expect(await rowCount(ctx(), c)).toBe(2);
  });

  it('numeric text prices are rounded on their decimal digits and then checked: the limits hold for the stored value', async () => {
    const c = await ctx().createCustomer();
    const env = await syncOk(c, [
      { sku: 'SKU-dec', name: 'Dec', url: 'https://shop.example.com/dec', originalPrice: '123456789012.12345', discountedPrice: '2.5e1' },
      { sku: 'SKU-over', name: 'Over', url: 'https://shop.example.com/over', originalPrice: '1000000000000.00005' },
    ]);
    expect(env.results.map((r) => [r.status, r.originalPrice, r.discountedPrice])).toEqual([
      ['CREATE', 123456789012.1235, 25],
      ['FAIL', '1000000000000.00005', null],
    ]);
    expect(env.results[1].message).toMatch(/^originalPrice must be at most/);
    expect(await stored(c, 'SKU-dec')).toMatchObject({ originalPrice: 123456789012.1235, discountedPrice: 25 });
  });

  it('every stored column follows an update, whichever fields it changes (a price, the name, a key), and search finds the new text only', async () => {
    const c = await ctx().createCustomer();
    const names = ['p', 'n', 'b', 'u', 's', 'm'];
    await syncOk(
      c,
      names.map((n) => goodsItem(n, { brand: `Brand ${n}`, originalPrice: 10 })),
    );
    const env = await syncOk(c, [
      { sku: 'SKU-p', originalPrice: 12.5 },
      { sku: 'SKU-n', name: 'Zebra lamp' },
      { sku: 'SKU-b', brand: 'Quokka' },
      { sku: 'SKU-u', url: 'https://shop.example.com/goods/u2' },
      { url: 'https://shop.example.com/goods/s', sku: 'SKU-s2' },
      { sku: 'SKU-m', name: 'Marmot', url: 'https://shop.example.com/goods/m2', originalPrice: 7 },
    ]);
    expect(env.updateCount).toBe(6);
    const rows: Array<Record<string, unknown>> = await ctx().dataSource.query(
      'SELECT name, brand, url, urlHash, sku, skuHash, searchText, originalPrice FROM goods WHERE customerId = ? ORDER BY id',
      [c.id],
    );
    const expected = [
      { name: 'Item p', brand: 'Brand p', url: 'https://shop.example.com/goods/p', sku: 'SKU-p', price: 12.5 },
      { name: 'Zebra lamp', brand: 'Brand n', url: 'https://shop.example.com/goods/n', sku: 'SKU-n', price: 10 },
      { name: 'Item b', brand: 'Quokka', url: 'https://shop.example.com/goods/b', sku: 'SKU-b', price: 10 },
      { name: 'Item u', brand: 'Brand u', url: 'https://shop.example.com/goods/u2', sku: 'SKU-u', price: 10 },
      { name: 'Item s', brand: 'Brand s', url: 'https://shop.example.com/goods/s', sku: 'SKU-s2', price: 10 },
      { name: 'Marmot', brand: 'Brand m', url: 'https://shop.example.com/goods/m2', sku: 'SKU-m', price: 7 },
    ];
    expect(rows.map((r) => ({ ...r, originalPrice: Number(r.originalPrice) }))).toEqual(
      expected.map((e) => ({
        name: e.name,
        brand: e.brand,
        url: e.url,
        urlHash: keyHash(e.url),
        sku: e.sku,
        skuHash: keyHash(e.sku),
        searchText: buildSearchText(e.name, e.brand, e.sku),
        originalPrice: e.price,
      })),
    );
    const search = async (keyword: string) =>
      (await ctx().http.get(`/v1/goods/${c.accessKey}`).query({ searchKeyword: keyword }).set('Authorization', c.auth()).expect(200)).body as {
        totalCount: number;
        results: Array<{ sku: string }>;
      };
    for (const [keyword, skus] of [
      ['zebra', ['SKU-n']],
      ['item n', []],
      ['quokka', ['SKU-b']],
      ['brand b', []],
      ['sku-s2', ['SKU-s2']],
      ['marmot', ['SKU-m']],
      ['item m', []],
    ] as const) {
      const found = await search(keyword);
      expect([keyword, found.totalCount, found.results.map((g) => g.sku)]).toEqual([keyword, skus.length, skus]);
    }
    expect((await bySku(c, 'SKU-s')).status).toBe(404);
    expect(await stored(c, 'SKU-u')).toMatchObject({ url: 'https://shop.example.com/goods/u2' });
  });

  it('an unknown id fails with a not-found message and echoes the submitted fields', async () => {
    const c = await ctx().createCustomer();
    const env = await syncOk(c, [{ id: 987654321, name: 'Ghost', sku: 'SKU-ghost', url: 'https://shop.example.com/ghost', originalPrice: 5 }, goodsItem('ok')]);
    expect(env).toMatchObject({ totalCount: 2, createCount: 1, updateCount: 0, failCount: 1 });
    const fail = env.results[0];
    expect(fail).toMatchObject({
      id: 987654321,
      name: 'Ghost',
      sku: 'SKU-ghost',
      url: 'https://shop.example.com/ghost',
      originalPrice: 5,
      row: 1,
      status: 'FAIL',
    });
    expect(fail.message).toMatch(/not found/i);
    expect(fail.message).toContain('987654321');
    expect(env.results[1]).toMatchObject({ row: 2, status: 'CREATE' });
    // The failing element did not create anything under its sku.
    expect((await bySku(c, 'SKU-ghost')).status).toBe(404);
    expect(await rowCount(ctx(), c)).toBe(1);
  });

  it("another customer's id is not found, and its sku does not touch that customer's item", async () => {
    const a = await ctx().createCustomer();
    const b = await ctx().createCustomer();
    const [itemA] = (await syncOk(a, [goodsItem('shared', { name: 'Of A' })])).results;
    const env = await syncOk(b, [{ id: itemA.id, name: 'Hijack' }, goodsItem('shared', { name: 'Of B' })]);
    expect(env.results[0]).toMatchObject({ status: 'FAIL' });
    expect(env.results[0].message).toMatch(/not found/i);
    expect(env.results[1]).toMatchObject({ status: 'CREATE', name: 'Of B' });
    expect(env.results[1].id).not.toBe(itemA.id);
    expect(await stored(a, 'SKU-shared')).toMatchObject({ id: itemA.id, name: 'Of A' });
    expect(await stored(b, 'SKU-shared')).toMatchObject({ id: env.results[1].id, name: 'Of B' });
  });

  it('a sku and a url that point at two different items fail with a message naming both ids', async () => {
    const c = await ctx().createCustomer();
    const [x, y] = (await syncOk(c, [goodsItem('x'), goodsItem('y')])).results;
    const env = await syncOk(c, [{ sku: 'SKU-x', url: 'https://shop.example.com/goods/y', name: 'Ambiguous' }]);
    expect(env).toMatchObject({ totalCount: 1, createCount: 0, updateCount: 0, failCount: 1 });
    const fail = env.results[0];
    expect(fail).toMatchObject({ status: 'FAIL', row: 1, sku: 'SKU-x', url: 'https://shop.example.com/goods/y', name: 'Ambiguous' });
    expect(fail.message).toEqual(expect.stringContaining(String(x.id)));
    expect(fail.message).toEqual(expect.stringContaining(String(y.id)));
    // Neither item changed.
    expect(await stored(c, 'SKU-x')).toEqual(goodsPart(x));
    expect(await stored(c, 'SKU-y')).toEqual(goodsPart(y));
  });

  it('the two items may be ones the same call created: the message names their ids (a dry run, which creates nothing, their rows)', async () => {
    const c = await ctx().createCustomer();
    const body = [goodsItem('m'), goodsItem('n'), { sku: 'SKU-m', url: 'https://shop.example.com/goods/n', name: 'Ambiguous' }];
    const tail = "url 'https://shop.example.com/goods/n' belongs to";
    const dry = await ctx().http.post(`/v1/goods/${c.accessKey}/sync?dryRun=true`).set('Authorization', c.auth()).send(body).expect(200);
    expect(dry.body.results[2]).toMatchObject({
      status: 'FAIL',
      message: `sku 'SKU-m' belongs to the goods created at row 1 but ${tail} the goods created at row 2; send the id to say which one to update`,
    });
    const env = await syncOk(c, body);
    const [m, n] = env.results;
    expect(env.results[2]).toMatchObject({
      status: 'FAIL',
      message: `sku 'SKU-m' belongs to goods ${m.id} (created at row 1) but ${tail} goods ${n.id} (created at row 2); send the id to say which one to update`,
    });
  });

  it("changing an item's sku or url to another item's fails (409-like) and leaves both unchanged", async () => {
    const c = await ctx().createCustomer();
    const [x, y] = (await syncOk(c, [goodsItem('x'), goodsItem('y')])).results;
    const env = await syncOk(c, [
      { id: x.id, sku: 'SKU-y', name: 'X took the sku of Y' },
      { id: x.id, url: 'https://shop.example.com/goods/y' },
      goodsItem('z'),
      { id: x.id, sku: 'SKU-z' }, // taken by the item created at row 3 of this batch
    ]);
    expect(env).toMatchObject({ createCount: 1, updateCount: 0, failCount: 3 });
    expect(env.results.map((r) => r.status)).toEqual(['FAIL', 'FAIL', 'CREATE', 'FAIL']);
    for (const fail of [env.results[0], env.results[1]]) {
      expect(fail.message).toMatch(/already used/i);
      expect(fail.message).toContain(String(y.id));
    }
    expect(env.results[0].message).toMatch(/sku/);
    expect(env.results[1].message).toMatch(/url/);
    expect(env.results[3].message).toMatch(/already used/i);
    expect(env.results[3].message).toBe(`sku 'SKU-z' is already used by goods ${env.results[2].id} (created at row 3)`);
    expect(env.results[0]).toMatchObject({ id: x.id, sku: 'SKU-y', name: 'X took the sku of Y' });
    expect(await stored(c, 'SKU-x')).toEqual(goodsPart(x));
    expect(await stored(c, 'SKU-y')).toEqual(goodsPart(y));
    expect(await stored(c, 'SKU-z')).toEqual(goodsPart(env.results[2]));
  });

  it('the same sku twice in one batch: first CREATE, then UPDATE of that item; one row in the database', async () => {
    const c = await ctx().createCustomer();
    const env = await syncOk(c, [
      goodsItem('dup', { name: 'First', brand: 'Kept' }),
      { sku: 'SKU-dup', name: 'Second', originalPrice: 12.5 },
      { url: 'https://shop.example.com/goods/dup', discountPercentage: 7 },
    ]);
    expect(env).toMatchObject({ totalCount: 3, createCount: 1, updateCount: 2, failCount: 0 });
    expect(env.results.map((r) => r.status)).toEqual(['CREATE', 'UPDATE', 'UPDATE']);
    const id = env.results[0].id;
    expect(typeof id).toBe('number');
    expect(env.results[1].id).toBe(id);
    expect(env.results[2].id).toBe(id);
    // Each row shows the item as it was after that element.
    expect(env.results[0]).toMatchObject({ name: 'First', brand: 'Kept', originalPrice: 0, discountPercentage: 0 });
    expect(env.results[1]).toMatchObject({ name: 'Second', brand: 'Kept', originalPrice: 12.5, discountPercentage: 0 });
    expect(env.results[2]).toMatchObject({ name: 'Second', brand: 'Kept', originalPrice: 12.5, discountPercentage: 7 });
    expect(await stored(c, 'SKU-dup')).toEqual(goodsPart(env.results[2]));
    expect(await rowCount(ctx(), c)).toBe(1);
  });

  it('an element with text that is not well-formed Unicode (a lone surrogate) is a FAIL row; the others are stored', async () => {
    const c = await ctx().createCustomer();
    const env = await syncOk(c, [
      goodsItem('ok-1'),
      goodsItem('lone-name', { name: 'Half \ud83d emoji' }),
      goodsItem('lone-desc', { description: '\udc00' }),
      goodsItem('ok-2', { name: 'Whole 😀 emoji' }),
    ]);
    expect(env).toMatchObject({ createCount: 2, failCount: 2 });
    expect(env.results.map((r) => r.status)).toEqual(['CREATE', 'FAIL', 'FAIL', 'CREATE']);
    expect(env.results[1].message).toMatch(/name must be well-formed Unicode/);
    expect(env.results[2].message).toMatch(/description must be well-formed Unicode/);
    expect(env.results[1]).toMatchObject({ sku: 'SKU-lone-name', name: 'Half \ud83d emoji' }); // the element echoed as sent
    expect((await bySku(c, 'SKU-lone-name')).status).toBe(404);
    expect((await bySku(c, 'SKU-lone-desc')).status).toBe(404);
    expect((await stored(c, 'SKU-ok-2')).name).toBe('Whole 😀 emoji');
    expect(await rowCount(ctx(), c)).toBe(2);
  });

  it('a failing element never rolls back the others', async () => {
    const c = await ctx().createCustomer();
    const [existing] = (await syncOk(c, [goodsItem('old', { originalPrice: 10 })])).results;
    const env = await syncOk(c, [
      goodsItem('v1'), // 1 CREATE
      goodsItem('bad-price', { originalPrice: 'abc' }), // 2 FAIL: ill-typed
      { sku: 'SKU-noname', url: 'https://shop.example.com/goods/noname' }, // 3 FAIL: name missing on create
      5, // 4 FAIL: not an object
      null, // 5 FAIL: not an object
      { id: existing.id, originalPrice: 11 }, // 6 UPDATE
      goodsItem('bad-name', { name: 12345 }), // 7 FAIL: ill-typed
      goodsItem('bad-url', { url: 'ftp://example.com/x' }), // 8 FAIL: not http(s)
      goodsItem('neg', { discountedPrice: -1 }), // 9 FAIL: below 0
      goodsItem('pct', { discountPercentage: 101 }), // 10 FAIL: over 100
      ['not', 'an', 'object'], // 11 FAIL
      goodsItem('v2'), // 12 CREATE
      { name: 'No key at all' }, // 13 FAIL: no id, sku or url
      { id: 'abc', name: 'bad id' }, // 14 FAIL
    ]);
    expect(env).toMatchObject({ totalCount: 14, createCount: 2, updateCount: 1, failCount: 11 });
    expect(env.results.map((r) => r.status)).toEqual([
      'CREATE',
      'FAIL',
      'FAIL',
      'FAIL',
      'FAIL',
      'UPDATE',
      'FAIL',
      'FAIL',
      'FAIL',
      'FAIL',
      'FAIL',
      'CREATE',
      'FAIL',
      'FAIL',
    ]);
    for (const r of env.results) {
      if (r.status === 'FAIL') expect(typeof r.message === 'string' && r.message.length > 0).toBe(true);
      else expect(r.message).toBeNull();
    }
    expect(env.results[1].message).toMatch(/originalPrice/);
    expect(env.results[1]).toMatchObject({ sku: 'SKU-bad-price', originalPrice: 'abc' });
    expect(env.results[2].message).toMatch(/name/);
    expect(env.results[2]).toMatchObject({ sku: 'SKU-noname' });
    expect(env.results[3].message).toMatch(/object/i);
    expect(env.results[4].message).toMatch(/object/i);
    expect(env.results[6].message).toMatch(/name/);
    expect(env.results[7].message).toMatch(/url/);
    expect(env.results[8].message).toMatch(/discountedPrice/);
    expect(env.results[9].message).toMatch(/discountPercentage/);
    expect(env.results[13].message).toMatch(/id/);

    expect(await stored(c, 'SKU-v1')).toMatchObject({ id: env.results[0].id });
    expect(await stored(c, 'SKU-v2')).toMatchObject({ id: env.results[11].id });
    expect(await stored(c, 'SKU-old')).toMatchObject({ id: existing.id, originalPrice: 11 });
    for (const sku of ['SKU-bad-price', 'SKU-noname', 'SKU-bad-name', 'SKU-bad-url', 'SKU-neg', 'SKU-pct']) {
      expect((await bySku(c, sku)).status).toBe(404);
    }
    expect(await rowCount(ctx(), c)).toBe(3);
  });

  it('keys may move between items inside one batch (swap through a free key)', async () => {
    const c = await ctx().createCustomer();
    const [x, y] = (await syncOk(c, [goodsItem('A', { name: 'X' }), goodsItem('B', { name: 'Y' })])).results;
    const env = await syncOk(c, [
      { id: x.id, sku: 'SKU-C' }, // X: A -> C
      { id: y.id, sku: 'SKU-A' }, // Y: B -> A
      { id: x.id, sku: 'SKU-B' }, // X: C -> B
    ]);
    expect(env).toMatchObject({ totalCount: 3, createCount: 0, updateCount: 3, failCount: 0 });
    expect(env.results.map((r) => [r.id, r.sku])).toEqual([
      [x.id, 'SKU-C'],
      [y.id, 'SKU-A'],
      [x.id, 'SKU-B'],
    ]);
    expect(await stored(c, 'SKU-B')).toMatchObject({ id: x.id, name: 'X' });
    expect(await stored(c, 'SKU-A')).toMatchObject({ id: y.id, name: 'Y' });
    expect((await bySku(c, 'SKU-C')).status).toBe(404);
    expect(await rowCount(ctx(), c)).toBe(2);

    // A url swap in the same way, and a sku freed in the batch taken by a new item.
    const env2 = await syncOk(c, [
      { id: x.id, url: 'https://shop.example.com/goods/tmp' },
      { id: y.id, url: 'https://shop.example.com/goods/A' },
      { id: x.id, url: 'https://shop.example.com/goods/B' },
      { id: y.id, sku: 'SKU-Y' },
      { name: 'Z', sku: 'SKU-A', url: 'https://shop.example.com/goods/Z' },
    ]);
    expect(env2).toMatchObject({ createCount: 1, updateCount: 4, failCount: 0 });
    expect(await stored(c, 'SKU-B')).toMatchObject({ id: x.id, url: 'https://shop.example.com/goods/B' });
    expect(await stored(c, 'SKU-Y')).toMatchObject({ id: y.id, url: 'https://shop.example.com/goods/A' });
    expect(await stored(c, 'SKU-A')).toMatchObject({ id: env2.results[4].id, name: 'Z' });
    expect(env2.results[4].id).not.toBe(x.id);
    expect(env2.results[4].id).not.toBe(y.id);
    expect(await rowCount(ctx(), c)).toBe(3);
  });

  it('a batch of several segments (500 elements each) keeps the rules across them: later elements see what earlier segments did', async () => {
    const c = await ctx().createCustomer();
    const [x, y, z] = (await syncOk(c, [goodsItem('X'), goodsItem('Y'), goodsItem('Z')])).results;
    const body: Array<Record<string, unknown>> = Array.from({ length: 2600 }, (_, i) => goodsItem(`F${i + 1}`));
    const at = (row: number, element: Record<string, unknown>) => (body[row - 1] = element);
    at(1, goodsItem('N', { name: 'N1' }));
    at(500, { id: x.id, sku: 'SKU-T' }); // X: SKU-X -> SKU-T (free)
    at(1200, { id: y.id, sku: 'SKU-X' }); // Y takes the sku X gave up in an earlier segment
    at(1300, { sku: 'SKU-N', name: 'N2' }); // the item created at row 1, updated in a later segment
    at(1400, { sku: 'SKU-N', url: 'https://shop.example.com/goods/Y' }); // two different items
    at(2100, { id: x.id, sku: 'SKU-Y' }); // X takes the sku Y gave up: a swap across three segments
    at(2200, { sku: 'SKU-Z', name: 'Z2' }); // a stored item first met in a late segment
    at(2300, { sku: 'SKU-N', name: 'N3' }); // the new item again
    at(2400, goodsItem('T', { name: 'New T' })); // SKU-T: X took it at row 500 and gave it up at row 2100
    at(2500, { id: 999999999, name: 'ghost' });
    const env = await syncOk(c, body);
    const row = (n: number) => env.results[n - 1];
    expect(env).toMatchObject({ createCount: 2592, updateCount: 6, failCount: 2 });
    expect([row(1).status, row(1300).status, row(2300).status]).toEqual(['CREATE', 'UPDATE', 'UPDATE']);
    expect(new Set([row(1).id, row(1300).id, row(2300).id]).size).toBe(1);
    expect(row(1).id).toEqual(expect.any(Number));
    expect(row(1400)).toMatchObject({
      status: 'FAIL',
      message: `sku 'SKU-N' belongs to goods ${row(1).id} (created at row 1) but url 'https://shop.example.com/goods/Y' belongs to goods ${y.id}; send the id to say which one to update`,
    });
    expect(row(2500)).toMatchObject({ status: 'FAIL', message: 'Goods not found: id 999999999' });
    expect([row(500), row(1200), row(2100)].map((r) => [r.status, r.id, r.sku])).toEqual([
      ['UPDATE', x.id, 'SKU-T'],
      ['UPDATE', y.id, 'SKU-X'],
      ['UPDATE', x.id, 'SKU-Y'],
    ]);
    expect(row(2400)).toMatchObject({ status: 'CREATE', sku: 'SKU-T', name: 'New T' });
    expect(await stored(c, 'SKU-Y')).toMatchObject({ id: x.id, name: 'Item X' });
    expect(await stored(c, 'SKU-X')).toMatchObject({ id: y.id, name: 'Item Y' });
    expect(await stored(c, 'SKU-Z')).toMatchObject({ id: z.id, name: 'Z2' });
    expect(await stored(c, 'SKU-N')).toMatchObject({ id: row(1).id, name: 'N3' });
    expect(await stored(c, 'SKU-T')).toMatchObject({ id: row(2400).id, name: 'New T' });
    expect(await stored(c, 'SKU-F2599')).toMatchObject({ id: row(2599).id });
    expect(await rowCount(ctx(), c)).toBe(3 + 2592);
  });

  it('an item created in one segment is the same item in every later one, whichever key names it (its old keys are free)', async () => {
    const c = await ctx().createCustomer();
    const body: Array<Record<string, unknown>> = Array.from({ length: 3000 }, (_, i) => goodsItem(`G${i + 1}`));
    const at = (row: number, element: Record<string, unknown>) => (body[row - 1] = element);
    at(1, goodsItem('C', { name: 'C1' })); // created in the first segment
    at(1500, { url: 'https://shop.example.com/goods/C', sku: 'SKU-C2', name: 'C2' }); // its sku moves, a later segment
    at(2500, goodsItem('C', { url: 'https://shop.example.com/goods/C-new', name: 'Another C' })); // the old sku is free: a new item
    at(2600, { sku: 'SKU-C2', name: 'C3' }); // the first item again, by its new sku
    at(2700, { url: 'https://shop.example.com/goods/C', brand: 'by url' }); // and by its url
    const env = await syncOk(c, body);
    const row = (n: number) => env.results[n - 1];
    expect(env).toMatchObject({ createCount: 2997, updateCount: 3, failCount: 0 });
    const first = row(1).id;
    expect([row(1500), row(2600), row(2700)].map((r) => [r.status, r.id])).toEqual([
      ['UPDATE', first],
      ['UPDATE', first],
      ['UPDATE', first],
    ]);
    expect(row(2500)).toMatchObject({ status: 'CREATE', sku: 'SKU-C', name: 'Another C' });
    expect(row(2500).id).not.toBe(first);
    expect(await stored(c, 'SKU-C2')).toMatchObject({ id: first, name: 'C3', brand: 'by url', url: 'https://shop.example.com/goods/C' });
    expect(await stored(c, 'SKU-C')).toMatchObject({ id: row(2500).id, name: 'Another C', url: 'https://shop.example.com/goods/C-new' });
    expect(await rowCount(ctx(), c)).toBe(2997);
  });

  it('keeps decimal prices exactly (19.99, 1234567.8901, numeric text, the 1e12 maximum)', async () => {
    const c = await ctx().createCustomer();
    const env = await syncOk(c, [
      goodsItem('d1', { originalPrice: 19.99, discountedPrice: 1234567.8901, discountPercentage: 12.3456 }),
      goodsItem('d2', { originalPrice: '0.0001', discountedPrice: 1e12, discountPercentage: 100 }),
    ]);
    expect(env.createCount).toBe(2);
    expect(env.results[0]).toMatchObject({ originalPrice: 19.99, discountedPrice: 1234567.8901, discountPercentage: 12.3456 });
    expect(await stored(c, 'SKU-d1')).toMatchObject({ originalPrice: 19.99, discountedPrice: 1234567.8901, discountPercentage: 12.3456 });
    expect(await stored(c, 'SKU-d2')).toMatchObject({ originalPrice: 0.0001, discountedPrice: 1e12, discountPercentage: 100 });

    // What the database holds, read as text, is the exact decimal.
    const [raw] = await ctx().dataSource.query('SELECT originalPrice, discountedPrice FROM goods WHERE customerId = ? AND sku = ?', [c.id, 'SKU-d1']);
    expect(Number(raw.originalPrice)).toBe(19.99);
    expect(Number(raw.discountedPrice)).toBe(1234567.8901);
    if (ctx().engine === 'mysql') {
      expect(String(raw.originalPrice)).toBe('19.9900');
      expect(String(raw.discountedPrice)).toBe('1234567.8901');
    }

    // Updating with the same values is an UPDATE that changes nothing.
    const again = await syncOk(c, [{ sku: 'SKU-d1', originalPrice: 19.99, discountedPrice: 1234567.8901 }]);
    expect(again.results[0]).toMatchObject({ status: 'UPDATE', originalPrice: 19.99, discountedPrice: 1234567.8901 });
  });

  it('a price with more than 4 decimals is rounded half away from zero, and the row reports the stored value', async () => {
    const c = await ctx().createCustomer();
    const env = await syncOk(c, [goodsItem('r', { originalPrice: 1.00005, discountedPrice: 9.99995 })]);
    expect(env.results[0].status).toBe('CREATE');
    const item = await stored(c, 'SKU-r');
    expect(item).toMatchObject({ originalPrice: 1.0001, discountedPrice: 10 });
    // A row result is the stored Goods.
    expect(goodsPart(env.results[0])).toEqual(item);
  });

  it('ignores unknown fields (currency, medias, anything else) and never stores them', async () => {
    const c = await ctx().createCustomer('Shop', 'KRW');
    const env = await syncOk(c, [goodsItem('u', { currency: 'USD', medias: [{ id: 1, url: 'x' }], row: 99, status: 'FAIL', foo: 'bar', createdAt: 1 })]);
    expect(env.results[0]).toMatchObject({ status: 'CREATE', row: 1, currency: 'KRW', medias: [], message: null });
    expect(env.results[0]).not.toHaveProperty('foo');
    expect(env.results[0]).not.toHaveProperty('createdAt');
    const item = await stored(c, 'SKU-u');
    expect(item.currency).toBe('KRW');
    expect(item).not.toHaveProperty('foo');

    // A whole row result echoed back (as clients do) updates the item.
    const echoed = { ...env.results[0], name: 'Echoed back' };
    const env2 = await syncOk(c, [echoed]);
    expect(env2.results[0]).toMatchObject({ status: 'UPDATE', id: env.results[0].id, name: 'Echoed back' });
  });

  it('a name whose search form is longer than the name itself is stored (NFKC expands ㎒ to mhz)', async () => {
    const c = await ctx().createCustomer();
    const name = '㎒'.repeat(255);
    const env = await syncOk(c, [goodsItem('nfkc', { name, brand: 'Ａ'.repeat(255) }), goodsItem('after')]);
    expect(env.results.map((r) => r.status)).toEqual(['CREATE', 'CREATE']);
    expect(await stored(c, 'SKU-nfkc')).toMatchObject({ name });
    const found = await ctx().http.get(`/v1/goods/${c.accessKey}`).query({ searchKeyword: 'MHZMHZ' }).set('Authorization', c.auth()).expect(200);
    expect(found.body.totalCount).toBe(1);
  });

  it('a body that is not an array is 400 -510', async () => {
    const c = await ctx().createCustomer();
    for (const body of [goodsItem(1), { results: [goodsItem(1)] }]) {
      const res = await sync(c, body).expect(400);
      expect(res.body._s).toBe(-510);
      expect(typeof res.body._e).toBe('string');
    }
    const malformed = await ctx()
      .http.post(`/v1/goods/${c.accessKey}/sync`)
      .set('Authorization', c.auth())
      .set('Content-Type', 'application/json')
      .send('[{"sku": ')
      .expect(400);
    expect(malformed.body._s).toBe(-510);
    expect(await rowCount(ctx(), c)).toBe(0);
  });

  it('an empty array is 200 with zero counts', async () => {
    const c = await ctx().createCustomer();
    const res = await sync(c, []).expect(200);
    expect(res.body).toEqual({ results: [], totalCount: 0, createCount: 0, updateCount: 0, failCount: 0, _s: 0 });
  });

  it('more than 10,000 elements is 413 -413 and nothing is written', async () => {
    const c = await ctx().createCustomer();
    const body = Array.from({ length: 10_001 }, (_, i) => goodsItem(`big-${i}`));
    const res = await sync(c, body).expect(413);
    expect(res.body._s).toBe(-413);
    expect(res.body._e).toMatch(/10,?000/);
    expect(await rowCount(ctx(), c)).toBe(0);
    expect(await totalOf(c)).toBe(0);
  });

  it('10,000 new elements in one call are all created, then all updated', async () => {
    const c = await ctx().createCustomer();
    const N = 10_000;
    const body = Array.from({ length: N }, (_, i) => goodsItem(`bulk-${i}`, { originalPrice: i + 0.5 }));
    const created = await syncOk(c, body);
    expect(created).toMatchObject({ totalCount: N, createCount: N, updateCount: 0, failCount: 0 });
    const ids = created.results.map((r) => r.id as number);
    expect(ids.every((id) => Number.isInteger(id) && id > 0)).toBe(true);
    expect(new Set(ids).size).toBe(N);
    created.results.forEach((r, i) => {
      if (r.sku !== `SKU-bulk-${i}` || r.status !== 'CREATE') throw new Error(`row ${i + 1}: ${JSON.stringify(r)}`);
    });
    expect(await totalOf(c)).toBe(N);
    expect(await rowCount(ctx(), c)).toBe(N);
    for (const i of [0, 1, 4321, N - 1]) {
      expect(await stored(c, `SKU-bulk-${i}`)).toEqual(goodsPart(created.results[i]));
    }

    const renamed = body.map((g, i) => ({ ...g, name: `Renamed ${i}` }));
    const updated = await syncOk(c, renamed);
    expect(updated).toMatchObject({ totalCount: N, createCount: 0, updateCount: N, failCount: 0 });
    updated.results.forEach((r, i) => {
      if (r.status !== 'UPDATE' || r.id !== ids[i] || r.name !== `Renamed ${i}`) throw new Error(`row ${i + 1}: ${JSON.stringify(r)}`);
    });
    for (const i of [0, 2, 5000, N - 1]) {
      expect(await stored(c, `SKU-bulk-${i}`)).toMatchObject({ id: ids[i], name: `Renamed ${i}`, originalPrice: i + 0.5 });
    }
    expect(await totalOf(c)).toBe(N);
  }, 180_000);
});
