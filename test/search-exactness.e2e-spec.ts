import type { INestApplication } from '@nestjs/common';
import type request from 'supertest';
import { DataSource } from 'typeorm';
import { buildSearchText, normalizeForSearch } from '../src/goods/goods-keys';
import { readCatalogVersion } from '../src/goods/goods-list.queries';
import { GoodsSearchCorpus } from '../src/goods/goods-search-corpus';
import { Metrics } from '../src/metrics/metrics.service';
import { describeTwoNodes, expectOk } from './support/cluster-app';
import { describeEngines } from './support/test-app';

/**
 * A keyword matched in a customer's in-memory search corpus (src/goods/goods-search-corpus.ts) gives
 * exactly what `INSTR(searchText, ?) > 0` gives on the database (the same totalCount and ids), on both
 * engines, for keywords where the two could part: case and accents, `ß`/`ss` (equal on MariaDB when their
 * byte lengths agree), Hangul syllables, `\n` and the name/brand boundary, digits, supplementary
 * characters; and after writes on this node (which patch the corpus, or have it rebuilt in memory when
 * they are too many) or on another one (whose steps come over Redis), where a stale corpus would show.
 */

const NAMES = [
  'Straße Schuhe',
  'STRASSE shoes',
  'strasse',
  'Café Noir',
  'cafe latte',
  'Caffè',
  'cafè crème',
  'naïve Ærø',
  'ae aé',
  '스마트 워치 7',
  '무선 이어폰 각',
  '가나다',
  '각',
  'x가bc',
  'xx가b',
  'emoji 😀 cup',
  'emoji 😁 mug',
  'ﬁsh ligature',
  'Ｆｕｌｌ width',
  'İstanbul',
  '½ price',
  '10% off_sale',
  'Smart watch 7',
  'e x é',
  'ss',
  'ß',
];
const BRANDS = ['Acme', '한빛전자', 'Nordic Home', null, 'ÉCOLE', 'Maß'];

const KEYWORDS = [
  'strasse',
  'straße',
  'STRASSE',
  'ss',
  'ß',
  'maß',
  'mass',
  'cafe',
  'café',
  'cafè',
  'caf',
  'é',
  'e',
  'e ',
  'ae',
  'æ',
  'ærø',
  'aero',
  '스마트',
  '워치',
  '마트 워',
  '각',
  '가',
  '이',
  '빛',
  'x가',
  '가b',
  '가bc',
  'ab',
  '😀',
  '😁',
  'emoji',
  'fish',
  'ﬁ',
  'full',
  'i̇',
  'istanbul',
  '1⁄2',
  '½',
  '%',
  '_',
  '0% off_',
  '7',
  '00',
  'sku-00',
  '7\nacme',
  'watch 7\nac',
  'cup\nacme',
  'e\nécole',
  'nordic home',
  'home\nsku',
  'o',
  'zzz-none',
];

/**
 * More keywords, deterministic: substrings (1 to 5 characters) of the catalog's search texts, and the
 * same with accents stripped, upper-cased, and `ß`/`ss` swapped either way.
 */
function sampledKeywords(count: number): string[] {
  let state = 11;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const texts = catalog(NAMES.length * BRANDS.length).map((g) => buildSearchText(g.name as string, g.brand as string | null, g.sku as string));
  const out: string[] = [];
  while (out.length < count) {
    const chars = Array.from(texts[Math.floor(next() * texts.length)]);
    const length = 1 + Math.floor(next() * 5);
    const from = Math.floor(next() * Math.max(1, chars.length - length));
    const piece = chars.slice(from, from + length).join('');
    const variants = [piece, piece.normalize('NFD').replace(/\p{M}/gu, ''), piece.toUpperCase(), piece.replace(/ß/g, 'ss'), piece.replace(/ss/g, 'ß')];
    out.push(variants[Math.floor(next() * variants.length)]);
  }
  return out.filter((k) => k.trim() !== '');
}

interface Found {
  totalCount: number;
  ids: number[];
}

/** Every id a keyword lists (all pages, newest first) and its totalCount. */
async function viaApi(http: ReturnType<typeof request>, accessKey: string, auth: string, keyword: string): Promise<Found> {
  const ids: number[] = [];
  let totalCount = 0;
  for (let page = 1; ; page++) {
    const res = await http.get(`/v1/goods/${accessKey}`).query({ searchKeyword: keyword, page, count: 100 }).set('Authorization', auth);
    expectOk(res);
    totalCount = res.body.totalCount as number;
    ids.push(...(res.body.results as Array<{ id: number }>).map((r) => r.id));
    if ((res.body.results as unknown[]).length < 100) break;
  }
  return { totalCount, ids };
}

async function viaInstr(dataSource: DataSource, customerId: number, keyword: string): Promise<Found> {
  const rows: Array<{ id: number | string }> = await dataSource.query(
    'SELECT id FROM goods WHERE customerId = ? AND INSTR(searchText, ?) > 0 ORDER BY id DESC',
    [customerId, normalizeForSearch(keyword.trim())],
  );
  return { totalCount: rows.length, ids: rows.map((r) => Number(r.id)) };
}

async function memorySearches(app: INestApplication): Promise<number> {
  const metric = await app.get(Metrics).searches.get();
  return metric.values.find((v) => v.labels.path === 'memory')?.value ?? 0;
}

/** Searches fresh keywords until one is answered from the corpus (it loads in the background after a search). */
async function untilCorpusUsed(app: INestApplication, search: (keyword: string) => Promise<unknown>): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const before = await memorySearches(app);
    await search(`warm-up ${attempt} ${Math.random()}`);
    if ((await memorySearches(app)) > before) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the search corpus was never used');
}

function catalog(count: number, variant = ''): Array<Record<string, unknown>> {
  return Array.from({ length: count }, (_, i) => ({
    name: `${NAMES[i % NAMES.length]}${variant}`,
    brand: BRANDS[i % BRANDS.length],
    sku: `SKU-${String(i).padStart(5, '0')}`,
    url: `https://shop.example.com/goods/${i}`,
  }));
}

/** Keywords the in-memory match leaves to the database on MariaDB (their weights hold the replacement weight). */
const scannedOnMysql = (keyword: string) => /[\u{10000}-\u{10FFFF}]/u.test(keyword);

describeEngines('keyword search in memory matches INSTR on the database', __filename, (ctx) => {
  it('gives the same totalCount and ids as INSTR for every keyword, before and after writes', async () => {
    const t = ctx();
    const c = await t.createCustomer('Search exactness');
    const sync = async (elements: Array<Record<string, unknown>>) =>
      expectOk(await t.http.post(`/v1/goods/${c.accessKey}/sync`).set('Authorization', c.auth()).send(elements));
    await sync(catalog(260));
    const search = (keyword: string) => viaApi(t.http, c.accessKey, c.auth(), keyword);

    const keywords = [...KEYWORDS, ...sampledKeywords(250)];
    const compareAll = async (expectMemory: boolean) => {
      const seen = new Set<string>();
      for (const keyword of keywords) {
        const before = await memorySearches(t.app);
        const found = await search(keyword);
        expect({ keyword, ...found }).toEqual({ keyword, ...(await viaInstr(t.dataSource, c.id, keyword)) });
        // A keyword equal to an earlier one once normalized (STRASSE, ½) comes from the list cache.
        const fresh = !seen.has(normalizeForSearch(keyword.trim()));
        seen.add(normalizeForSearch(keyword.trim()));
        if (expectMemory && fresh && !(t.engine === 'mysql' && scannedOnMysql(keyword))) {
          expect({ keyword, memory: (await memorySearches(t.app)) - before }).toEqual({ keyword, memory: 1 });
        }
      }
    };

    // From memory once the corpus is loaded (every keyword is new at this catalog version).
    await untilCorpusUsed(t.app, search);
    await compareAll(true);

    // Writes: a rename through the API, a delete, a new item, a sync renaming a third of the catalog.
    const renamed = (await search('strasse')).ids[0];
    expectOk(await t.http.put(`/v1/goods/${c.accessKey}`).set('Authorization', c.auth()).send({ id: renamed, name: 'Maße 각 7' }));
    const deleted = (await search('café')).ids[0];
    expectOk(await t.http.delete(`/v1/goods/${c.accessKey}/${deleted}`).set('Authorization', c.auth()));
    await sync(catalog(80, ' v2 ß'));
    expectOk(
      await t.http
        .post(`/v1/goods/${c.accessKey}`)
        .set('Authorization', c.auth())
        .send({ name: 'Neue Straße', brand: 'Acme', sku: 'NEW-1', url: 'https://shop.example.com/new' }),
    );
    // Right after the writes, still from memory: each write on this node patched the corpus it had
    // loaded (the renamed item's new text, the deleted id, the synced texts, the new item).
    await compareAll(true);

    // A batch over the bound of items a corpus keeps patched (2,000 for a small catalog): the corpus is
    // rebuilt in memory with it (no search is needed to start that, as it would be for a reload), and
    // keywords come from memory again.
    await sync(catalog(2100, ' 가 e'));
    await untilCorpusAt(t.app, c.id, t.dataSource);
    for (const keyword of ['strasse', '가', 'zzz-none', 'straß', '가 e', 'Maße', 'café', 'ae']) {
      const before = await memorySearches(t.app);
      expect({ keyword, ...(await search(keyword)) }).toEqual({ keyword, ...(await viaInstr(t.dataSource, c.id, keyword)) });
      expect({ keyword, memory: (await memorySearches(t.app)) - before }).toEqual({ keyword, memory: 1 });
    }
  });
});

describeTwoNodes('keyword search in memory with writes on another node', __filename, 'Search cluster', (cluster) => {
  it('a node whose corpus is loaded follows the writes made on the other node, and answers exactly', async () => {
    const { A, B, C } = cluster;
    const dataSource = A.app.get(DataSource);
    expectOk(await B.http.post(`/v1/goods/${C.accessKey}/sync`).set('Authorization', C.auth()).send(catalog(120)));
    const searchA = (keyword: string) => viaApi(A.http, C.accessKey, C.auth(), keyword);
    await untilCorpusUsed(A.app, searchA);
    const check = async () => {
      for (const keyword of KEYWORDS) expect({ keyword, ...(await searchA(keyword)) }).toEqual({ keyword, ...(await viaInstr(dataSource, C.id, keyword)) });
    };
    const fromMemory = async () => {
      const before = await memorySearches(A.app);
      await check();
      expect((await memorySearches(A.app)) - before).toBe(new Set(KEYWORDS.filter((k) => !scannedOnMysql(k)).map((k) => normalizeForSearch(k.trim()))).size);
    };
    await fromMemory();

    // Node B renames, deletes and adds: its steps reach A over Redis, and A's corpus follows them.
    const target = (await searchA('스마트')).ids[0];
    expectOk(await B.http.put(`/v1/goods/${C.accessKey}`).set('Authorization', C.auth()).send({ id: target, name: 'Strasse 9 가' }));
    const gone = (await searchA('cafe')).ids[0];
    expectOk(await B.http.delete(`/v1/goods/${C.accessKey}/${gone}`).set('Authorization', C.auth()));
    expectOk(await B.http.post(`/v1/goods/${C.accessKey}/sync`).set('Authorization', C.auth()).send(catalog(30, ' 워치')));
    // Waited for without a search (a search finding the corpus behind would start a reload).
    await untilCorpusAt(A.app, C.id, dataSource);
    await fromMemory();
    const renamed = await searchA('strasse 9');
    expect(renamed.ids).toContain(target);
    expect(renamed).toEqual(await viaInstr(dataSource, C.id, 'strasse 9'));
    expect((await searchA('cafe')).ids).not.toContain(gone);

    // A step of more than one message's 2,000 items reaches A in parts, and A follows it too (its
    // patched items cannot take it: A rebuilds its corpus in memory).
    expectOk(await B.http.post(`/v1/goods/${C.accessKey}/sync`).set('Authorization', C.auth()).send(catalog(2100, ' ß')));
    await untilCorpusAt(A.app, C.id, dataSource);
    await fromMemory();
    expect(await searchA('schuhe ß')).toEqual(await viaInstr(dataSource, C.id, 'schuhe ß'));
  });
});

/** Until the node's corpus of the customer is at the catalog's version (its steps applied), without searching. */
async function untilCorpusAt(app: INestApplication, customerId: number, dataSource: DataSource): Promise<void> {
  const corpus: unknown = app.get(GoodsSearchCorpus);
  const { corpora } = corpus as { corpora: Map<number, { version: number }> };
  for (let attempt = 0; attempt < 500; attempt++) {
    if ((corpora.get(customerId)?.version ?? -1) >= (await readCatalogVersion(dataSource.manager, customerId))) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the node's corpus never caught up with the catalog");
}

describeEngines(
  'keyword search with a catalog over SEARCH_MEMORY_MB',
  __filename,
  (ctx) => {
    it('keeps no corpus for a catalog that does not fit, and scans exactly', async () => {
      const t = ctx();
      const c = await t.createCustomer('Search over budget');
      // About 6,000 items of 30+ characters: more than 1 MB with their pairs.
      const elements = Array.from({ length: 6000 }, (_, i) => ({
        name: `${NAMES[i % NAMES.length]} ${i}`,
        brand: BRANDS[i % BRANDS.length],
        sku: `BIG-${String(i).padStart(6, '0')}`,
        url: `https://shop.example.com/big/${i}`,
      }));
      expectOk(await t.http.post(`/v1/goods/${c.accessKey}/sync`).set('Authorization', c.auth()).send(elements));
      const corpus: unknown = t.app.get(GoodsSearchCorpus);
      // The load a search would start in the background, awaited here: it gives up past the budget.
      await (corpus as { load(customerId: number, version: number): Promise<void> }).load(c.id, 0);
      expect(await t.app.get(Metrics).searchCorpusGoods.get()).toMatchObject({ values: [{ value: 0 }] });
      for (const keyword of ['strasse', '워치', 'sku', '12']) {
        expect(await viaApi(t.http, c.accessKey, c.auth(), keyword)).toEqual(await viaInstr(t.dataSource, c.id, keyword));
      }
      expect(await memorySearches(t.app)).toBe(0);
    });
  },
  { SEARCH_MEMORY_MB: '1' },
);

describeEngines(
  'keyword search with SEARCH_MEMORY_MB=0',
  __filename,
  (ctx) => {
    it('always scans', async () => {
      const t = ctx();
      const c = await t.createCustomer('Search off');
      expectOk(await t.http.post(`/v1/goods/${c.accessKey}/sync`).set('Authorization', c.auth()).send(catalog(60)));
      for (const keyword of KEYWORDS.slice(0, 20)) {
        expect(await viaApi(t.http, c.accessKey, c.auth(), keyword)).toEqual(await viaInstr(t.dataSource, c.id, keyword));
      }
      expect(await memorySearches(t.app)).toBe(0);
      expect(await t.app.get(Metrics).searchCorpusGoods.get()).toMatchObject({ values: [{ value: 0 }] });
    });
  },
  { SEARCH_MEMORY_MB: '0' },
);
