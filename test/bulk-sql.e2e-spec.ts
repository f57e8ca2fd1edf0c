import { hydrateRows, insertRows, updateRowsById } from '../src/database/bulk-sql';
import { mysqlGuardOf, PREPARED_STATEMENTS_PER_CONNECTION } from '../src/database/mysql-guard';
import { Transactions } from '../src/database/transactions';
import { Goods } from '../src/goods/entities/goods.entity';
import { newGoods } from '../src/goods/goods-write';
import { describeEngines } from './support/test-app';

describeEngines('plain multi-row statements of the bulk path', __filename, (ctx) => {
  const item = (customerId: number, i: number, price: number | null) =>
    newGoods(
      customerId,
      { sku: `BULK-${i}`, url: `https://shop.example.com/bulk/${i}`, name: `Bulk ${i}`, originalPrice: price },
      new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)),
    );

  async function stored(customerId: number): Promise<Goods[]> {
    const db = ctx().app.get(Transactions);
    const raw: Array<Record<string, unknown>> = await db.manager.query('SELECT * FROM goods WHERE customerId = ? ORDER BY id', [customerId]);
    return hydrateRows(db.manager, Goods, raw);
  }

  it('insertRows writes what TypeORM would read back: decimals, nulls, dates, hashes', async () => {
    const t = ctx();
    const c = await t.createCustomer('Bulk insert');
    const rows = [item(c.id, 1, 19.99), item(c.id, 2, null), item(c.id, 3, 1234567.8901)];
    await t.app.get(Transactions).run((em) => insertRows(em, Goods, rows));
    const back = await stored(c.id);
    expect(back.map((g) => [g.sku, g.originalPrice, g.brand, g.createdAt.toISOString(), g.skuHash === rows[back.indexOf(g)].skuHash])).toEqual([
      ['BULK-1', 19.99, null, '2026-01-02T03:04:05.678Z', true],
      ['BULK-2', null, null, '2026-01-02T03:04:05.678Z', true],
      ['BULK-3', 1234567.8901, null, '2026-01-02T03:04:05.678Z', true],
    ]);
    // The same rows through TypeORM's own reader.
    const viaFind = await t.dataSource.manager.find(Goods, { where: { customerId: c.id }, order: { id: 'ASC' } });
    expect(viaFind).toEqual(back);
  });

  it("updateRowsById sets each row's own values, and never touches a row outside the scope", async () => {
    const t = ctx();
    const db = t.app.get(Transactions);
    const mine = await t.createCustomer('Bulk mine');
    const other = await t.createCustomer('Bulk other');
    await db.run(async (em) => {
      await insertRows(em, Goods, [item(mine.id, 10, 1), item(mine.id, 11, 2)]);
      await insertRows(em, Goods, [item(other.id, 12, 3)]);
    });
    const [a, b] = await stored(mine.id);
    const [foreign] = await stored(other.id);
    a.name = 'Renamed A';
    a.originalPrice = 10.5;
    b.name = 'Renamed B';
    b.originalPrice = null;
    // A row of another customer named in the same call (as a bug or a forged id would): left alone.
    const forged = Object.assign(new Goods(), foreign, { customerId: mine.id, name: 'Hijacked' });
    await db.run((em) => updateRowsById(em, Goods, [a, b, forged], ['name', 'originalPrice'], { property: 'customerId', value: mine.id }));
    const after = await stored(mine.id);
    expect(after.map((g) => [g.id, g.name, g.originalPrice])).toEqual([
      [a.id, 'Renamed A', 10.5],
      [b.id, 'Renamed B', null],
    ]);
    expect((await stored(other.id)).map((g) => [g.id, g.name, g.customerId])).toEqual([[foreign.id, 'Bulk 12', other.id]]);
  });

  it('MySQL/MariaDB: in a transaction they run as prepared statements, and a connection keeps at most PREPARED_STATEMENTS_PER_CONNECTION of them', async () => {
    const t = ctx();
    const c = await t.createCustomer('Bulk prepared');
    const guard = mysqlGuardOf(t.dataSource);
    if (t.dataSource.options.type === 'better-sqlite3') {
      // SQLite: plain statements (better-sqlite3 keeps its own statement cache).
      expect(guard).toBeUndefined();
      return;
    }
    const execute = jest.spyOn(guard as NonNullable<typeof guard>, 'execute');
    try {
      // 40 shapes (1 to 40 rows per statement): more than a connection keeps.
      const shapes = Array.from({ length: 40 }, (_, k) => k + 1);
      let kept = -1;
      await t.app.get(Transactions).run(async (em) => {
        let next = 100;
        for (const rows of shapes)
          await insertRows(
            em,
            Goods,
            Array.from({ length: rows }, () => item(c.id, next++, 1.5)),
          );
        const connection = (await em.queryRunner?.connect()) as { _statements: { size: number } };
        kept = connection._statements.size;
      });
      expect(execute).toHaveBeenCalledTimes(40);
      expect(kept).toBe(PREPARED_STATEMENTS_PER_CONNECTION);
      const back = await stored(c.id);
      expect(back).toHaveLength(shapes.reduce((a, b) => a + b, 0));
      expect(new Set(back.map((g) => g.originalPrice))).toEqual(new Set([1.5]));
    } finally {
      execute.mockRestore();
    }
  });
});
