import { tenantOf } from '../src/auth/decorators';
import { Customer } from '../src/customers/entities/customer.entity';
import { Transactions } from '../src/database/transactions';
import { SyncService } from '../src/sync/sync.service';
import { describeEngines, TestApp } from './support/test-app';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function goods(i: number, variant = 0): Record<string, unknown> {
  return { sku: `FAIR-${i}`, url: `https://shop.example.com/fair/${i}`, name: `Fair item ${i} v${variant}`, brand: 'Fairness', originalPrice: 1000 + variant };
}

/** Counts turns of the event loop (setImmediate callbacks) until `stop()`. */
function loopTurns(): { stop(): number } {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop() {
      running = false;
      return turns;
    },
  };
}

async function tenant(t: TestApp, name: string) {
  const c = await t.createCustomer(name);
  const customer = await t.dataSource.manager.findOneOrFail(Customer, { where: { id: c.id } });
  return { c, tenant: tenantOf(customer, 'http://localhost') };
}

describeEngines('one customer does not hold up the others', __filename, (ctx) => {
  it('reads outside a transaction see only committed writes, also while a write transaction waits between two of its statements', async () => {
    const t = ctx();
    const db = t.app.get(Transactions);
    const { c } = await tenant(t, 'Isolation');
    const nameOutside = async () => {
      const rows: Array<{ name: string }> = await db.manager.query('SELECT name FROM customers WHERE id = ?', [c.id]);
      return rows[0].name;
    };
    let seenMeanwhile = '';
    await db.run(async (em) => {
      await em.query('UPDATE customers SET name = ? WHERE id = ?', ['Isolation (renamed)', c.id]);
      // What a long write does between its slices: let the event loop run other requests' work.
      await turn();
      seenMeanwhile = await nameOutside();
    });
    expect(seenMeanwhile).toBe('Isolation');
    expect(await nameOutside()).toBe('Isolation (renamed)');
  });

  it('a 5,000-element sync lets the event loop turn many times while it runs, and another customer reads its list meanwhile', async () => {
    const t = ctx();
    const sync = t.app.get(SyncService);
    const { tenant: writer } = await tenant(t, 'Bulk writer');
    const reader = await t.createCustomer('Reader');
    await t.http
      .post(`/v1/goods/${reader.accessKey}/sync`)
      .set('Authorization', reader.auth())
      .send([goods(1), goods(2)])
      .expect(200);

    for (const variant of [0, 1]) {
      const turns = loopTurns();
      const listed: number[] = [];
      let done = false;
      const bulk = sync.sync(
        writer,
        Array.from({ length: 5000 }, (_, i) => goods(i, variant)),
      );
      void bulk.finally(() => (done = true));
      // The other customer's list, read through the app's services while the bulk write runs.
      while (!done) {
        const res = await t.http.get(`/v1/goods/${reader.accessKey}`).set('Authorization', reader.auth()).expect(200);
        if (!done) listed.push(res.body.totalCount as number);
      }
      const result = await bulk;
      const turned = turns.stop();
      expect(result.failCount).toBe(0);
      expect(variant ? result.updateCount : result.createCount).toBe(5000);
      // Held for the whole call, the loop would turn once or twice at most; in slices it turns at every one.
      expect(turned).toBeGreaterThan(20);
      expect(listed.length).toBeGreaterThan(0);
      expect(new Set(listed)).toEqual(new Set([2]));
    }
  });
});
