import { rmSync } from 'node:fs';
import { DataSource, QueryRunner } from 'typeorm';
import { AppConfig } from '../src/config/app-config';
import { openDataSource, openDataSourceWithRetry, resolveDataSourceOptions, runMigrations } from '../src/database/data-source-options';
import { MIGRATIONS } from '../src/database/migrations';
import { ENTITIES } from '../src/schema';
import { unpackResults } from '../src/excel/job-results';
import { dropDatabase, Engine, ENGINES, engineUnavailable, testConfig } from './support/test-app';

/**
 * The one known, documented difference between entities and migration: on SQLite the migration
 * declares generated primary keys INTEGER (SQLite only auto-increments INTEGER PRIMARY KEY) where the
 * entities say bigint. Align the metadata before asking the schema builder for a diff.
 */
function alignSqliteGeneratedKeys(ds: DataSource): void {
  if (ds.options.type !== 'better-sqlite3') return;
  for (const metadata of ds.entityMetadatas) {
    for (const column of metadata.primaryColumns) {
      if (column.isGenerated) column.type = 'integer';
    }
  }
}

async function pendingSchemaChanges(ds: DataSource): Promise<string[]> {
  const log = await ds.driver.createSchemaBuilder().log();
  return log.upQueries.map((q) => q.query);
}

const MIGRATION_NAMES = MIGRATIONS.map((m) => m.name);

async function tablesPresent(ds: DataSource): Promise<Record<string, boolean>> {
  const runner = ds.createQueryRunner();
  try {
    const present: Record<string, boolean> = {};
    for (const metadata of ds.entityMetadatas) present[metadata.tableName] = await runner.hasTable(metadata.tableName);
    return present;
  } finally {
    await runner.release();
  }
}

const TABLES_IN_SCHEMA = [
  'customers',
  'goods',
  'media',
  'campaigns',
  'campaign_goods',
  'campaign_chat',
  'campaign_events',
  'idempotency_keys',
  'idempotency_key_parts',
  'import_jobs',
  'import_job_results',
  'webhook_endpoints',
  'webhook_deliveries',
];
const allTables = (present: boolean) => Object.fromEntries(TABLES_IN_SCHEMA.map((t) => [t, present]));

async function appliedMigrations(ds: DataSource): Promise<string[]> {
  const rows: Array<{ name: string }> = await ds.query('SELECT name FROM migrations ORDER BY id');
  return rows.map((r) => r.name);
}

/** The schema as the engine tells it: SHOW CREATE TABLE of every table (MySQL), the stored SQL of every table and index (SQLite). */
async function schemaOf(ds: DataSource): Promise<Record<string, string>> {
  const schema: Record<string, string> = {};
  if (ds.options.type === 'better-sqlite3') {
    const rows: Array<{ name: string; sql: string | null }> = await ds.query(
      "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
    );
    for (const r of rows) schema[r.name] = String(r.sql);
    return schema;
  }
  const tables: Array<{ name: string }> = await ds.query(
    'SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME',
  );
  for (const { name } of tables) {
    const [row] = await ds.query(`SHOW CREATE TABLE \`${name}\``);
    schema[name] = String(row['Create Table']).replace(/ AUTO_INCREMENT=\d+/, '');
  }
  return schema;
}

const CUT = 'cut short by the test';

/**
 * A query runner that lets `allowed` statements that change something through (anything but SELECT,
 * SHOW and PRAGMA) and throws before the next: a migration cut there, as by a kill, without being recorded.
 */
function cutAfter(runner: QueryRunner, allowed: number, state: { done: number; cut: boolean }): QueryRunner {
  return new Proxy(runner, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
      return async (sql: string, ...rest: unknown[]) => {
        if (!/^\s*(SELECT|SHOW|PRAGMA)\b/i.test(sql)) {
          if (state.done >= allowed) {
            state.cut = true;
            throw new Error(CUT);
          }
          state.done += 1;
        }
        return (target.query as (...args: unknown[]) => Promise<unknown>).call(receiver, sql, ...rest);
      };
    },
  });
}

function describeEngine(engine: Engine, suite: () => void): void {
  const down = engineUnavailable(engine);
  if (down && process.env.REQUIRE_SERVICES !== '1') {
    describe.skip(`migrations [${engine}] (skipped: ${down})`, suite);
    return;
  }
  describe(`migrations [${engine}]`, () => {
    beforeAll(() => {
      if (down) throw new Error(`${engine} server required (REQUIRE_SERVICES=1) but unavailable: ${down}`);
    });
    suite();
  });
}

for (const engine of ENGINES) {
  describeEngine(engine, () => {
    let ds: DataSource | undefined;
    let dataDir = '';
    let database = '';
    let config: AppConfig | undefined;
    let env: Record<string, string> = {};

    const settings = (): AppConfig => {
      if (!config) throw new Error('no settings');
      return config;
    };
    const undoUntilPending = async (d: DataSource, name: string) => {
      while ((await appliedMigrations(d)).includes(name)) await d.undoLastMigration({ transaction: 'each' });
    };

    const current = (): DataSource => {
      if (!ds) throw new Error('data source not open');
      return ds;
    };

    beforeAll(async () => {
      const test = await testConfig(engine, __filename);
      dataDir = test.dataDir;
      database = test.database;
      config = test.config;
      env = test.env;
      ds = await openDataSource(await resolveDataSourceOptions(test.config, ENTITIES));
      alignSqliteGeneratedKeys(ds);
    });

    afterAll(async () => {
      if (ds?.isInitialized) await ds.destroy();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      if (engine === 'mysql' && database) await dropDatabase(database);
    });

    it('opening a fresh database applies the initial migration', async () => {
      expect(await tablesPresent(current())).toEqual(allTables(true));
      expect(await appliedMigrations(current())).toEqual(MIGRATION_NAMES);
    });

    it('entities and migrations do not drift (schema builder has nothing to do)', async () => {
      expect(await pendingSchemaChanges(current())).toEqual([]);
    });

    it('running migrations again is a no-op', async () => {
      expect(await current().showMigrations()).toBe(false);
      expect(await current().runMigrations({ transaction: 'each' })).toEqual([]);
      await runMigrations(current());
      expect(await appliedMigrations(current())).toEqual(MIGRATION_NAMES);
      expect(await pendingSchemaChanges(current())).toEqual([]);
    });

    it('the schema works: unique keys per customer, cascade on customer delete', async () => {
      const d = current();
      const now = '2026-01-01 00:00:00.000';
      const insertCustomer = (ak: string) =>
        d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
          ak,
          'c2VjcmV0',
          'Name',
          'KRW',
          now,
          now,
        ]);
      await insertCustomer('ak-migrations-a-000000');
      await insertCustomer('ak-migrations-b-000000');
      const customers: Array<{ id: number | string }> = await d.query('SELECT id FROM customers ORDER BY id');
      const [a, b] = customers.map((c) => Number(c.id));
      const insertGoods = (customerId: number, sku: string, url: string) =>
        d.query('INSERT INTO goods (customerId, name, url, urlHash, sku, skuHash, searchText, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
          customerId,
          'n',
          url,
          `u:${url}`,
          sku,
          `s:${sku}`,
          'n',
          now,
          now,
        ]);
      await insertGoods(a, 'S1', 'U1');
      await insertGoods(b, 'S1', 'U1'); // same keys, other customer: allowed
      await expect(insertGoods(a, 'S1', 'U2')).rejects.toThrow();
      await expect(insertGoods(a, 'S2', 'U1')).rejects.toThrow();
      await expect(insertGoods(987654, 'S9', 'U9')).rejects.toThrow(); // foreign key
      await d.query('DELETE FROM customers WHERE id = ?', [a]);
      const left: Array<{ customerId: number | string }> = await d.query('SELECT customerId FROM goods');
      expect(left.map((g) => Number(g.customerId))).toEqual([b]);
      await d.query('DELETE FROM customers');
    });

    it('the secret-rotation migration keeps existing customers and their goods (SQLite rebuilds the table)', async () => {
      const d = current();
      expect(MIGRATION_NAMES).toContain('AddPreviousSecretKey1764000000000');
      while ((await appliedMigrations(d)).includes('AddPreviousSecretKey1764000000000')) await d.undoLastMigration({ transaction: 'each' });
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-before-rotation-000',
        'c2VjcmV0',
        'Before',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-before-rotation-000']);
      await d.query('INSERT INTO goods (customerId, name, url, urlHash, sku, skuHash, searchText, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
        id,
        'n',
        'U1',
        'u:U1',
        'S1',
        's:S1',
        'n',
        now,
        now,
      ]);
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      const [customer] = await d.query('SELECT accessKey, secretKey, previousSecretKey, previousKeyValidUntil FROM customers WHERE id = ?', [id]);
      expect(customer).toEqual({ accessKey: 'ak-before-rotation-000', secretKey: 'c2VjcmV0', previousSecretKey: null, previousKeyValidUntil: null });
      const goods: Array<{ sku: string }> = await d.query('SELECT sku FROM goods WHERE customerId = ?', [id]);
      expect(goods.map((g) => g.sku)).toEqual(['S1']);
      await d.query('DELETE FROM customers WHERE id = ?', [id]);
      expect(await d.query('SELECT id FROM goods WHERE customerId = ?', [id])).toEqual([]); // the foreign key still cascades
      expect(await pendingSchemaChanges(d)).toEqual([]);
    });

    it('the stock migration keeps existing campaigns and their goods: stock and threshold null, showStock false (SQLite rebuilds the tables)', async () => {
      const d = current();
      expect(MIGRATION_NAMES).toContain('AddStock1764100000000');
      while ((await appliedMigrations(d)).includes('AddStock1764100000000')) await d.undoLastMigration({ transaction: 'each' });
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-before-stock-000000',
        'c2VjcmV0',
        'Before stock',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-before-stock-000000']);
      await d.query('INSERT INTO goods (customerId, name, url, urlHash, sku, skuHash, searchText, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
        id,
        'n',
        'U2',
        'u:U2',
        'S2',
        's:S2',
        'n',
        now,
        now,
      ]);
      const [{ id: goodsId }] = await d.query('SELECT id FROM goods WHERE customerId = ?', [id]);
      await d.query('INSERT INTO campaigns (customerId, campaignKey, title, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?)', [
        id,
        'BeforeStockKey01',
        'T',
        now,
        now,
      ]);
      const [{ id: campaignId }] = await d.query('SELECT id FROM campaigns WHERE campaignKey = ?', ['BeforeStockKey01']);
      await d.query("INSERT INTO campaign_goods (campaignId, goodsId, sortOrder, salesStatus, createdAt, updatedAt) VALUES (?, ?, 1, 'SOLD_OUT', ?, ?)", [
        campaignId,
        goodsId,
        now,
        now,
      ]);
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      const [link] = await d.query('SELECT salesStatus, stock, almostSoldOutAt FROM campaign_goods WHERE campaignId = ?', [campaignId]);
      expect(link).toEqual({ salesStatus: 'SOLD_OUT', stock: null, almostSoldOutAt: null });
      const [campaign] = await d.query('SELECT showStock FROM campaigns WHERE id = ?', [campaignId]);
      expect(Number(campaign.showStock)).toBe(0);
      await d.query('DELETE FROM customers WHERE id = ?', [id]);
      expect(await d.query('SELECT goodsId FROM campaign_goods WHERE campaignId = ?', [campaignId])).toEqual([]); // the foreign keys still cascade
      expect(await pendingSchemaChanges(d)).toEqual([]);
    });

    it('the appliedAt migration keeps existing idempotency keys and their stored answers (SQLite rebuilds the table)', async () => {
      const d = current();
      await undoUntilPending(d, 'AddIdempotencyKeyAppliedAt1765200000000');
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-before-applied-0000',
        'c2VjcmV0',
        'Before appliedAt',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-before-applied-0000']);
      const keyHash = 'b'.repeat(64);
      await d.query(
        'INSERT INTO idempotency_keys (customerId, keyHash, fingerprint, owner, statusCode, headers, bodyParts, leaseUntil, expiresAt) VALUES (?, ?, ?, ?, 200, ?, 1, ?, ?)',
        [id, keyHash, 'f'.repeat(64), 'owner-1', '{}', 1, 4_000_000_000_000],
      );
      await d.query('INSERT INTO idempotency_key_parts (customerId, keyHash, part, data) VALUES (?, ?, 0, ?)', [id, keyHash, Buffer.from('answer')]);
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      const [key] = await d.query('SELECT statusCode, appliedAt FROM idempotency_keys WHERE customerId = ?', [id]);
      expect({ statusCode: Number(key.statusCode), appliedAt: key.appliedAt }).toEqual({ statusCode: 200, appliedAt: null });
      const parts = await d.query('SELECT data FROM idempotency_key_parts WHERE customerId = ?', [id]);
      expect(parts.map((p: { data: Buffer }) => Buffer.from(p.data).toString())).toEqual(['answer']);
      await d.query('DELETE FROM idempotency_keys WHERE customerId = ?', [id]);
      expect(await d.query('SELECT part FROM idempotency_key_parts WHERE customerId = ?', [id])).toEqual([]); // the foreign key still cascades
      await d.query('DELETE FROM customers WHERE id = ?', [id]);
      expect(await pendingSchemaChanges(d)).toEqual([]);
    });

    it('the renumbering migration closes the gaps earlier removals left in campaigns (1..n per campaign, order kept)', async () => {
      const d = current();
      expect(MIGRATION_NAMES).toContain('RenumberCampaignGoods1764900000000');
      while ((await appliedMigrations(d)).includes('RenumberCampaignGoods1764900000000')) await d.undoLastMigration({ transaction: 'each' });
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-gaps-in-places-0000',
        'c2VjcmV0',
        'Gaps',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-gaps-in-places-0000']);
      const goods: number[] = [];
      for (let i = 1; i <= 4; i += 1) {
        await d.query('INSERT INTO goods (customerId, name, url, urlHash, sku, skuHash, searchText, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
          id,
          'n',
          `GU${i}`,
          `u:GU${i}`,
          `GS${i}`,
          `s:GS${i}`,
          'n',
          now,
          now,
        ]);
        const [{ id: goodsId }] = await d.query('SELECT id FROM goods WHERE customerId = ? AND sku = ?', [id, `GS${i}`]);
        goods.push(Number(goodsId));
      }
      const campaigns: number[] = [];
      for (const key of ['GapsCampaignKey1', 'GapsCampaignKey2']) {
        await d.query('INSERT INTO campaigns (customerId, campaignKey, title, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?)', [id, key, 'T', now, now]);
        const [{ id: campaignId }] = await d.query('SELECT id FROM campaigns WHERE campaignKey = ?', [key]);
        campaigns.push(Number(campaignId));
      }
      const place = (campaignId: number, goodsId: number, sortOrder: number) =>
        d.query('INSERT INTO campaign_goods (campaignId, goodsId, sortOrder, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?)', [
          campaignId,
          goodsId,
          sortOrder,
          now,
          now,
        ]);
      // Campaign 1: places 2, 5, 9 (and a tie at 9, ordered by goods id); campaign 2: already 1, 2.
      await place(campaigns[0], goods[3], 2);
      await place(campaigns[0], goods[0], 5);
      await place(campaigns[0], goods[2], 9);
      await place(campaigns[0], goods[1], 9);
      await place(campaigns[1], goods[0], 1);
      await place(campaigns[1], goods[1], 2);
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      const placesOf = async (campaignId: number) =>
        (await d.query('SELECT goodsId, sortOrder FROM campaign_goods WHERE campaignId = ? ORDER BY sortOrder', [campaignId])).map(
          (r: { goodsId: number | string; sortOrder: number | string }) => [Number(r.goodsId), Number(r.sortOrder)],
        );
      expect(await placesOf(campaigns[0])).toEqual([
        [goods[3], 1],
        [goods[0], 2],
        [goods[1], 3],
        [goods[2], 4],
      ]);
      expect(await placesOf(campaigns[1])).toEqual([
        [goods[0], 1],
        [goods[1], 2],
      ]);
      await d.query('DELETE FROM customers WHERE id = ?', [id]);
    });

    it('the payloadBytes migration gives logged events their sizes in UTF-8 bytes, as the log records them (SQLite rebuilds the table)', async () => {
      const d = current();
      expect(MIGRATION_NAMES).toContain('AddCampaignEventPayloadBytes1765100000000');
      while ((await appliedMigrations(d)).includes('AddCampaignEventPayloadBytes1765100000000')) await d.undoLastMigration({ transaction: 'each' });
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-event-sizes-00000000',
        'c2VjcmV0',
        'Sizes',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-event-sizes-00000000']);
      await d.query('INSERT INTO campaigns (customerId, campaignKey, title, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?)', [
        id,
        'SizesCampaignKey1',
        'T',
        now,
        now,
      ]);
      const [{ id: campaignId }] = await d.query('SELECT id FROM campaigns WHERE campaignKey = ?', ['SizesCampaignKey1']);
      const payloads = [JSON.stringify({ seq: 1, message: 'plain' }), JSON.stringify({ seq: 2, message: '한글 메시지 \u0001' }), ''];
      for (const [i, payload] of payloads.entries()) {
        await d.query('INSERT INTO campaign_events (campaignId, seq, type, payload, createdAt) VALUES (?, ?, ?, ?, ?)', [
          campaignId,
          i + 1,
          'chat.message',
          payload,
          now,
        ]);
      }
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      const rows: Array<{ seq: number | string; payload: string; payloadBytes: number | string }> = await d.query(
        'SELECT seq, payload, payloadBytes FROM campaign_events WHERE campaignId = ? ORDER BY seq',
        [campaignId],
      );
      expect(rows.map((r) => [Number(r.seq), r.payload, Number(r.payloadBytes)])).toEqual(payloads.map((p, i) => [i + 1, p, Buffer.byteLength(p)]));
      expect(Buffer.byteLength(payloads[1])).toBeGreaterThan(payloads[1].length);
      await d.query('DELETE FROM customers WHERE id = ?', [id]);
      expect(await d.query('SELECT seq FROM campaign_events WHERE campaignId = ?', [campaignId])).toEqual([]); // the foreign key still cascades
      expect(await pendingSchemaChanges(d)).toEqual([]);
    });

    it('the results migration packs the row results of existing jobs into groups of 1,000, and its revert unpacks them', async () => {
      const d = current();
      expect(MIGRATION_NAMES).toContain('PackImportJobResults1764600000000');
      while ((await appliedMigrations(d)).includes('PackImportJobResults1764600000000')) await d.undoLastMigration({ transaction: 'each' });
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-before-packing-0000',
        'c2VjcmV0',
        'Before packing',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-before-packing-0000']);
      await d.query(
        "INSERT INTO import_jobs (customerId, state, fileName, filePath, fileBytes, baseUrl, rowsDone, createdAt) VALUES (?, 'succeeded', 'a.csv', 'a.upload', 1, 'http://localhost', 2500, ?)",
        [id, now],
      );
      const [{ id: jobId }] = await d.query('SELECT id FROM import_jobs WHERE customerId = ?', [id]);
      // 2,500 results, a FAIL every 900th (in the first and second thousand only), texts with line breaks and Hangul.
      const results = Array.from({ length: 2500 }, (_, seq) =>
        JSON.stringify({ name: `상품 ${seq}\nline two`, row: seq + 2, status: seq % 900 === 899 ? 'FAIL' : 'CREATE', message: null }),
      );
      for (let at = 0; at < results.length; at += 500) {
        const slice = results.slice(at, at + 500);
        await d.query(
          `INSERT INTO import_job_rows (jobId, seq, row, status, result) VALUES ${slice.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
          slice.flatMap((r, n) => [jobId, at + n, at + n + 2, (JSON.parse(r) as { status: string }).status, r]),
        );
      }
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      const groups: Array<Record<string, unknown>> = await d.query(
        'SELECT seq, part, rowCount, failCount, data FROM import_job_results WHERE jobId = ? ORDER BY seq, part',
        [jobId],
      );
      expect(groups.map((g) => [Number(g.seq), Number(g.part), Number(g.rowCount), Number(g.failCount)])).toEqual([
        [0, 0, 1000, 1],
        [1000, 0, 1000, 1],
        [2000, 0, 500, 0],
      ]);
      const unpacked: string[] = [];
      for (const g of groups) unpacked.push(...(await unpackResults([g.data as Buffer])));
      expect(unpacked).toEqual(results);

      // Later migrations first, then this one.
      while ((await appliedMigrations(d)).includes('PackImportJobResults1764600000000')) await d.undoLastMigration({ transaction: 'each' });
      const rows: Array<{ seq: number; row: number; status: string; result: string }> = await d.query(
        'SELECT seq, row, status, result FROM import_job_rows WHERE jobId = ? ORDER BY seq',
        [jobId],
      );
      expect(rows.map((r) => r.result)).toEqual(results);
      expect(rows.filter((r) => r.status === 'FAIL').map((r) => Number(r.row))).toEqual([901, 1801]);
      await runMigrations(d);
      await d.query('DELETE FROM customers WHERE id = ?', [id]);
      expect(await d.query('SELECT seq FROM import_job_results WHERE jobId = ?', [jobId])).toEqual([]); // the foreign keys still cascade
      expect(await pendingSchemaChanges(d)).toEqual([]);
    });

    it('a migration cut after any of its statements (as by a kill) is completed by the next start, to the same schema', async () => {
      const d = current();
      const clean = await schemaOf(d);
      const cuts: string[] = [];
      for (const [index, name] of MIGRATION_NAMES.entries()) {
        for (let allowed = 1; ; allowed += 1) {
          await undoUntilPending(d, name);
          const migration = d.migrations[index];
          expect(migration.name).toBe(name);
          const up = migration.up.bind(migration);
          const state = { done: 0, cut: false };
          migration.up = (runner: QueryRunner) => up(cutAfter(runner, allowed, state));
          try {
            await d.runMigrations({ transaction: 'each' });
          } catch (err) {
            if (!state.cut) throw err;
          } finally {
            migration.up = up;
          }
          if (!state.cut) break; // the whole migration ran: no later statement to cut before
          expect(await appliedMigrations(d)).not.toContain(name);
          cuts.push(`${name} after ${allowed}`);
          // The next start.
          const next = await openDataSource(await resolveDataSourceOptions(settings(), ENTITIES));
          try {
            expect(await appliedMigrations(next)).toEqual(MIGRATION_NAMES);
            expect(await schemaOf(next)).toEqual(clean);
          } finally {
            await next.destroy();
          }
        }
      }
      await runMigrations(d);
      expect(await schemaOf(d)).toEqual(clean);
      // Every migration of several statements was cut at least once.
      for (const name of ['InitialSchema1763700000000', 'AddCampaigns1763900000000', 'AddStock1764100000000', 'AddWebhookEndpointBreaker1764800000000']) {
        expect(cuts).toContain(`${name} after 1`);
      }
    }, 600_000);

    it('the results migration cut after some of its groups were written packs each job once on the next start', async () => {
      const d = current();
      await undoUntilPending(d, 'PackImportJobResults1764600000000');
      const now = '2026-01-01 00:00:00.000';
      await d.query('INSERT INTO customers (accessKey, secretKey, name, currency, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?)', [
        'ak-cut-packing-00000000',
        'c2VjcmV0',
        'Cut packing',
        'KRW',
        now,
        now,
      ]);
      const [{ id }] = await d.query('SELECT id FROM customers WHERE accessKey = ?', ['ak-cut-packing-00000000']);
      await d.query(
        "INSERT INTO import_jobs (customerId, state, fileName, filePath, fileBytes, baseUrl, rowsDone, createdAt) VALUES (?, 'succeeded', 'b.csv', 'b.upload', 1, 'http://localhost', 2500, ?)",
        [id, now],
      );
      const [{ id: jobId }] = await d.query('SELECT id FROM import_jobs WHERE customerId = ?', [id]);
      const results = Array.from({ length: 2500 }, (_, seq) => JSON.stringify({ name: `g${seq}`, row: seq + 2, status: 'CREATE', message: null }));
      for (let at = 0; at < results.length; at += 500) {
        const slice = results.slice(at, at + 500);
        await d.query(
          `INSERT INTO import_job_rows (jobId, seq, row, status, result) VALUES ${slice.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
          slice.flatMap((r, n) => [jobId, at + n, at + n + 2, 'CREATE', r]),
        );
      }
      const index = MIGRATION_NAMES.indexOf('PackImportJobResults1764600000000');
      const migration = d.migrations[index];
      const up = migration.up.bind(migration);
      const state = { done: 0, cut: false };
      // The table created, then two of the three groups written (after the new version's delete of the job's groups, if any).
      migration.up = (runner: QueryRunner) => up(cutAfter(runner, 4, state));
      try {
        await expect(d.runMigrations({ transaction: 'each' })).rejects.toThrow(CUT);
      } finally {
        migration.up = up;
      }
      const next = await openDataSource(await resolveDataSourceOptions(settings(), ENTITIES));
      try {
        expect(await appliedMigrations(next)).toEqual(MIGRATION_NAMES);
        const groups: Array<Record<string, unknown>> = await next.query(
          'SELECT seq, part, rowCount, data FROM import_job_results WHERE jobId = ? ORDER BY seq, part',
          [jobId],
        );
        expect(groups.map((g) => [Number(g.seq), Number(g.part), Number(g.rowCount)])).toEqual([
          [0, 0, 1000],
          [1000, 0, 1000],
          [2000, 0, 500],
        ]);
        const unpacked: string[] = [];
        for (const g of groups) unpacked.push(...(await unpackResults([g.data as Buffer])));
        expect(unpacked).toEqual(results);
        await next.query('DELETE FROM customers WHERE id = ?', [id]);
        expect(await next.query('SELECT seq FROM import_job_results WHERE jobId = ?', [jobId])).toEqual([]);
      } finally {
        await next.destroy();
      }
      // TypeORM leaves SQLite's foreign keys off on the connection of a failed run.
      if (engine === 'sqlite') await d.query('PRAGMA foreign_keys = ON');
    });

    it('a migration that fails (not for an unreachable database) ends the start at once, naming it', async () => {
      const d = current();
      await undoUntilPending(d, 'AddImportJobStalledClaims1764700000000');
      await d.query('ALTER TABLE import_jobs RENAME TO import_jobs_aside');
      const warnings: string[] = [];
      const started = Date.now();
      try {
        await expect(
          openDataSourceWithRetry(settings(), ENTITIES, (message: string, level?: string) => {
            if (level !== 'log') warnings.push(message);
          }),
        ).rejects.toThrow(/migration AddImportJobStalledClaims1764700000000 failed: /);
        expect(Date.now() - started).toBeLessThan(10_000);
        expect(warnings).toEqual([]); // not retried as "database not reachable yet"
      } finally {
        await d.query('ALTER TABLE import_jobs_aside RENAME TO import_jobs');
      }
      await runMigrations(d);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
    }, 30_000);

    it('a database migrated by a newer livegoods (a migration this build does not know) is refused at start', async () => {
      const d = current();
      await d.query('INSERT INTO migrations (timestamp, name) VALUES (?, ?)', [1799999999999, 'FromTheFuture1799999999999']);
      try {
        const started = Date.now();
        const refusal = await openDataSourceWithRetry(settings(), ENTITIES, () => undefined).then(
          async (opened) => {
            await opened.destroy();
            return 'started';
          },
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        );
        expect(refusal).toBe(
          'the database was migrated by a newer livegoods (migration FromTheFuture1799999999999); run that version or restore the backup taken before the upgrade',
        );
        expect(Date.now() - started).toBeLessThan(10_000);
      } finally {
        await d.query('DELETE FROM migrations WHERE name = ?', ['FromTheFuture1799999999999']);
      }
    }, 30_000);

    if (engine === 'mysql') {
      it('a database in another character set than utf8mb4 is refused at start at once, not retried as unreachable', async () => {
        const latin1 = `${database}_l1`.slice(0, 64);
        await current().query(`DROP DATABASE IF EXISTS \`${latin1}\``);
        await current().query(`CREATE DATABASE \`${latin1}\` CHARACTER SET latin1`);
        try {
          const warnings: string[] = [];
          const started = Date.now();
          const refusal = await openDataSourceWithRetry(AppConfig.fromEnv({ ...env, DB_NAME: latin1 }), ENTITIES, (message: string, level?: string) => {
            if (level !== 'log') warnings.push(message);
          }).then(
            async (opened) => {
              await opened.destroy();
              return 'started';
            },
            (err: unknown) => (err instanceof Error ? err.message : String(err)),
          );
          expect(refusal).toBe(`database "${latin1}" uses character set latin1; create it with CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
          expect(warnings).toEqual([]);
          expect(Date.now() - started).toBeLessThan(10_000);
        } finally {
          await current().query(`DROP DATABASE IF EXISTS \`${latin1}\``);
        }
      }, 30_000);
    }

    it('the start logs each migration it applies by name, and a summary', async () => {
      const d = current();
      await undoUntilPending(d, 'WidenCampaignEventPayload1765000000000');
      const lines: string[] = [];
      const opened = await openDataSourceWithRetry(settings(), ENTITIES, (message: string, level?: string) => lines.push(`${level}: ${message}`));
      await opened.destroy();
      expect(lines).toEqual([
        expect.stringMatching(/^log: migration WidenCampaignEventPayload1765000000000 applied \(\d+ ms\)$/),
        expect.stringMatching(/^log: migration AddCampaignEventPayloadBytes1765100000000 applied \(\d+ ms\)$/),
        expect.stringMatching(/^log: migration AddIdempotencyKeyAppliedAt1765200000000 applied \(\d+ ms\)$/),
        expect.stringMatching(/^log: 3 migration\(s\) applied in \d+ ms; the schema is at AddIdempotencyKeyAppliedAt1765200000000$/),
      ]);
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
    });

    it('revert drops the tables, and migrating again restores the same schema', async () => {
      const d = current();
      for (let i = 0; i < MIGRATIONS.length; i += 1) await d.undoLastMigration({ transaction: 'each' });
      expect(await tablesPresent(d)).toEqual(allTables(false));
      expect(await appliedMigrations(d)).toEqual([]);
      expect(await d.showMigrations()).toBe(true);

      await runMigrations(d);
      expect(await tablesPresent(d)).toEqual(allTables(true));
      expect(await appliedMigrations(d)).toEqual(MIGRATION_NAMES);
      expect(await pendingSchemaChanges(d)).toEqual([]);
    });
  });
}
