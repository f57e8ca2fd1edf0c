import type { AppConfig } from '../config/app-config';
import type { Transactions } from '../database/transactions';
import type { Metrics } from '../metrics/metrics.service';
import type { RedisConnection } from '../redis/redis.module';
import { GoodsSearchCorpus, searchSlicing } from './goods-search-corpus';
import { pairSegmenting } from './search-pairs';

/**
 * The corpus against a fake SQLite catalog (the two queries a load makes), to drive what the e2e tests
 * cannot time: steps told out of order, a load that writes on this node overtake, a corpus ahead of the
 * request. The e2e test (test/search-exactness.e2e-spec.ts) holds the matching itself to INSTR on both engines.
 */
class FakeCatalog {
  version = 1;
  readonly rows = new Map<number, string>();
  /** Pages of rows read so far (by loads). */
  pagesRead = 0;
  /** Runs once, when the load reads its first page (a write committing during the load). */
  duringLoad?: () => void;

  manager = {
    query: (sql: string, params: unknown[]): Promise<unknown[]> => {
      if (sql.startsWith('SELECT catalogVersion')) return Promise.resolve([{ v: this.version }]);
      if (sql.startsWith('SELECT id, searchText FROM goods')) {
        const [, after, limit] = params as number[];
        const page = [...this.rows]
          .filter(([id]) => id > after)
          .sort((a, b) => a[0] - b[0])
          .slice(0, limit)
          .map(([id, searchText]) => ({ id, searchText }));
        this.pagesRead++;
        const during = this.duringLoad;
        this.duringLoad = undefined;
        during?.();
        return Promise.resolve(page);
      }
      throw new Error(`unexpected query: ${sql}`);
    },
  };

  /** A write on this node: the catalog moves on, and the corpus is told after the "commit". */
  write(corpus: GoodsSearchCorpus, written: Array<[number, string]>, deleted: number[] = []): { version: number; tell: () => void } {
    for (const [id, text] of written) this.rows.set(id, text);
    for (const id of deleted) this.rows.delete(id);
    const version = ++this.version;
    return {
      version,
      tell: () =>
        corpus.patch(
          1,
          version,
          written.map(([id, searchText]) => ({ id, searchText })),
          deleted,
        ),
    };
  }

  /** What INSTR would give: ids newest first. */
  instr(keyword: string): number[] {
    return [...this.rows]
      .filter(([, text]) => text.includes(keyword))
      .map(([id]) => id)
      .sort((a, b) => b - a);
  }
}

function corpusOver(catalog: FakeCatalog, redisClient: unknown = null): GoodsSearchCorpus {
  const gauge = { inc: () => undefined, dec: () => undefined };
  const metrics = { searches: gauge, searchCorpusGoods: gauge, searchCorpusBytes: gauge } as unknown as Metrics;
  const transactions = { manager: catalog.manager, isMysql: false } as unknown as Transactions;
  const config = { limits: { searchMemoryBytes: 64 * 1024 * 1024 } } as unknown as AppConfig;
  return new GoodsSearchCorpus(transactions, config, metrics, { client: redisClient } as unknown as RedisConnection);
}

/** The corpus's internals the tests look at: its corpora, and a message from the channel. */
const internals = (corpus: GoodsSearchCorpus) =>
  corpus as unknown as {
    corpora: Map<number, { version: number; patched?: Map<number, unknown>; ids: Float64Array }>;
    received(message: string): void;
    channel?: string;
  };

/** Searches until the background load has installed a corpus at `version` (or later). */
async function loaded(corpus: GoodsSearchCorpus, version: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await corpus.match(1, 'warm-up', version)) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('the corpus never loaded');
}

/** The background load under way, if any, once it has ended. */
async function loadUnderWay(corpus: GoodsSearchCorpus): Promise<void> {
  const states = (corpus as unknown as { states: Map<number, { loading?: Promise<void> }> }).states;
  await states.get(1)?.loading;
}

/** One turn of the event loop: a rebuild started by a step takes the steps waiting for it in its first turn. */
const rebuildStarted = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('GoodsSearchCorpus', () => {
  let catalog: FakeCatalog;
  let corpus: GoodsSearchCorpus;

  beforeEach(() => {
    catalog = new FakeCatalog();
    for (let id = 1; id <= 50; id++) catalog.rows.set(id, `item ${id}\nacme`);
    corpus = corpusOver(catalog);
  });
  afterEach(() => corpus.onApplicationShutdown());

  it('takes writes told out of order once the step before them has come, and matches what the catalog holds', async () => {
    await loaded(corpus, catalog.version);
    const first = catalog.write(corpus, [[7, 'renamed gadget\nacme']]);
    const second = catalog.write(corpus, [[51, 'new gadget\nzeta']], [9]);
    second.tell();
    first.tell();
    // From memory at once: no search was made meanwhile, so nothing reloaded the corpus.
    expect(await corpus.match(1, 'gadget', second.version)).toEqual([51, 7]);
    expect(await corpus.match(1, 'item 9', second.version)).toEqual(catalog.instr('item 9'));
    expect(await corpus.match(1, 'item', second.version)).toEqual(catalog.instr('item'));
    expect(await corpus.match(1, 'acme', second.version)).toEqual(catalog.instr('acme'));
  });

  it('answers a search that let other work run midway with the catalog at one version, a write taken meanwhile included', async () => {
    await loaded(corpus, catalog.version);
    const before = catalog.version;
    const write = catalog.write(
      corpus,
      [
        [7, 'renamed\nacme'],
        [51, 'item 51\nzeta'],
      ],
      [9],
    );
    const budget = searchSlicing.budgetMs;
    searchSlicing.budgetMs = 0;
    try {
      // Told in the first turn the searches give away (every check is due with no budget): each sees it,
      // the loaded items it had checked before and the patched ones after.
      setImmediate(write.tell);
      const keywords = ['item', 'item 5', 'acme', 'e'];
      const found = await Promise.all(keywords.map((keyword) => corpus.match(1, keyword, before)));
      found.forEach((ids, k) => expect(ids).toEqual(catalog.instr(keywords[k])));
    } finally {
      searchSlicing.budgetMs = budget;
    }
    // The same with the whole search in one go.
    expect(await corpus.match(1, 'item', catalog.version)).toEqual(catalog.instr('item'));
  });

  it('answers a request that read the version before a write the corpus has taken since', async () => {
    await loaded(corpus, catalog.version);
    const before = catalog.version;
    catalog.write(corpus, [[3, 'other\nacme']]).tell();
    expect(await corpus.match(1, 'item 3', before)).toEqual(catalog.instr('item 3'));
    expect(await corpus.match(1, 'other', before)).toEqual([3]);
  });

  it('installs a load that writes on this node overtook, with their steps applied', async () => {
    let write: { version: number; tell: () => void } | undefined;
    catalog.duringLoad = () => {
      write = catalog.write(corpus, [[2, 'during the load\nacme']], [4]);
      write.tell();
    };
    // The first search (at version 1) starts the load and waits for it; the write lands while it reads
    // its first page, and the corpus installed (at version 2) answers that search too.
    expect(await corpus.match(1, 'item', 1)).toEqual(catalog.instr('item'));
    expect(catalog.pagesRead).toBe(1);
    expect(write?.version).toBe(2);
    // Installed by that load (a search finding no corpus would have started another).
    expect(await corpus.match(1, 'during', 2)).toEqual([2]);
    expect(await corpus.match(1, 'item 4', 2)).toEqual(catalog.instr('item 4'));
    expect(await corpus.match(1, 'item', 2)).toEqual(catalog.instr('item'));
  });

  it('discards a load that a write it was not told of overtook', async () => {
    catalog.duringLoad = () => {
      catalog.write(corpus, [[2, 'elsewhere\nacme']]); // another node's write: never told here
    };
    // The search waited for the load, which installed nothing: it is scanned.
    expect(await corpus.match(1, 'item', 1)).toBeUndefined();
    expect(catalog.pagesRead).toBe(1);
    expect(await corpus.match(1, 'elsewhere', 2)).toBeUndefined();
  });

  it('has searches that find no corpus wait for the one load under way, not scan beside it', async () => {
    // Ten new keywords at once right after a start: one load, every search answered from it.
    const keywords = ['item 1', 'item 2', 'acme', 'item 33', 'nothing', 'item', 'm 4', '5', 'acm', 'item 50'];
    const found = await Promise.all(keywords.map((keyword) => corpus.match(1, keyword, catalog.version)));
    found.forEach((ids, k) => expect(ids).toEqual(catalog.instr(keywords[k])));
    expect(catalog.pagesRead).toBe(1);
  });

  it("takes another node's step from its message, and ignores anything else on the channel", async () => {
    await loaded(corpus, catalog.version);
    const received = (message: string) => (corpus as unknown as { received(message: string): void }).received(message);
    const write = catalog.write(corpus, [[12, 'shared text\nacme']], [13]);
    for (const garbage of [
      'not json',
      'null',
      '[]',
      JSON.stringify({ node: 'other', customerId: 1, version: write.version, written: [{ id: '12', searchText: 'x' }], deleted: [] }),
      JSON.stringify({ node: 'other', customerId: 1, version: write.version, written: [{ id: 12, searchText: 7 }], deleted: [] }),
      JSON.stringify({ node: 'other', customerId: 1, version: write.version, written: [], deleted: [-1] }),
      JSON.stringify({ node: 'other', customerId: 1.5, version: write.version, written: [], deleted: [] }),
      JSON.stringify({ customerId: 1, version: write.version, written: [], deleted: [] }),
    ]) {
      received(garbage);
    }
    const corpora = (corpus as unknown as { corpora: Map<number, { version: number }> }).corpora;
    expect(corpora.get(1)?.version).toBe(write.version - 1);
    received(JSON.stringify({ node: 'other', customerId: 1, version: write.version, written: [{ id: 12, searchText: 'shared text\nacme' }], deleted: [13] }));
    expect(corpora.get(1)?.version).toBe(write.version);
    expect(await corpus.match(1, 'shared', write.version)).toEqual([12]);
    expect(await corpus.match(1, 'item 13', write.version)).toEqual(catalog.instr('item 13'));
  });

  it('folds a step over the bound of patched items into a corpus rebuilt in memory, without reading the catalog', async () => {
    await loaded(corpus, catalog.version);
    const pagesRead = catalog.pagesRead;
    const big = catalog.write(
      corpus,
      Array.from({ length: 2001 }, (_, i): [number, string] => [1000 + i, `bulk ${i}`]),
      [5],
    );
    big.tell();
    // The overlay cannot take it (2,000 at most here): the rebuild can, and then the corpus is at its version.
    await loadUnderWay(corpus);
    const rebuilt = internals(corpus).corpora.get(1);
    expect(rebuilt?.version).toBe(big.version);
    expect(rebuilt?.patched?.size ?? 0).toBe(0);
    expect(rebuilt?.ids.length).toBe(catalog.rows.size);
    expect(catalog.pagesRead).toBe(pagesRead);
    for (const keyword of ['bulk 1999', 'bulk 1', 'item 5', 'item', 'acme'])
      expect(await corpus.match(1, keyword, big.version)).toEqual(catalog.instr(keyword));
  });

  it('rebuilds a corpus whose patched items pass half their bound, and applies the writes told meanwhile', async () => {
    // Loaded with the odd ids only; the writes bring ids between them and after them, renames and deletes.
    for (let id = 2; id <= 50; id += 2) catalog.rows.delete(id);
    await loaded(corpus, catalog.version);
    const first = catalog.write(
      corpus,
      Array.from({ length: 1001 }, (_, i): [number, string] => [i < 25 ? 2 * (i + 1) : i < 30 ? 2 * i - 49 : 1000 + i, `wave ${i}`]),
      [3],
    );
    first.tell();
    // Taken at once as patched items (1,001 of 2,000), which starts a rebuild in the background.
    expect(internals(corpus).corpora.get(1)?.version).toBe(first.version);
    await rebuildStarted();
    const meanwhile = catalog.write(
      corpus,
      [
        [7, 'told during the rebuild'],
        [5000, 'new during the rebuild'],
      ],
      [8],
    );
    meanwhile.tell();
    await loadUnderWay(corpus);
    const rebuilt = internals(corpus).corpora.get(1);
    expect(rebuilt?.version).toBe(meanwhile.version);
    expect(rebuilt?.patched?.size).toBe(3);
    for (const keyword of ['wave 1000', 'wave 2', 'wave', 'during the rebuild', 'item 8', 'item 3', 'item', 'acme'])
      expect(await corpus.match(1, keyword, meanwhile.version)).toEqual(catalog.instr(keyword));
  });

  /** A corpus of 30,000 items loaded (bound of patched items 3,000), then 999 new items written and told. */
  async function loadedWithFewWritten(): Promise<{ version: number }> {
    for (let id = 51; id <= 30_000; id++) catalog.rows.set(id, `item ${id}`);
    await loaded(corpus, catalog.version);
    const few = catalog.write(
      corpus,
      Array.from({ length: 999 }, (_, i): [number, string] => [40_000 + i, `few ${i}`]),
    );
    few.tell();
    return few;
  }

  /** Runs `search` with the clock `ms` ahead (no step taken meanwhile), then waits for what it started. */
  async function later(ms: number, search: () => Promise<void>): Promise<void> {
    const real = performance.now.bind(performance);
    const clock = jest.spyOn(performance, 'now').mockImplementation(() => real() + ms);
    try {
      await search();
      await loadUnderWay(corpus);
    } finally {
      clock.mockRestore();
    }
  }

  it('rebuilds on a search once the writes have gone quiet, with fewer patched items than a crowded corpus needs', async () => {
    await loadedWithFewWritten();
    const pagesRead = catalog.pagesRead;
    const quiet = catalog.write(corpus, [[50_000, 'quiet one']], [7]);
    quiet.tell();
    // 1,001 patched: under half the bound (3,000 for 30,000 items), and the writes may go on: no rebuild.
    expect(await corpus.match(1, 'quiet', quiet.version)).toEqual([50_000]);
    await loadUnderWay(corpus);
    expect(internals(corpus).corpora.get(1)?.patched?.size).toBe(1001);
    // Two seconds on, no step taken since: the next search starts a rebuild, and is answered meanwhile.
    await later(2_001, async () => expect(await corpus.match(1, 'few 99', quiet.version)).toEqual(catalog.instr('few 99')));
    const rebuilt = internals(corpus).corpora.get(1);
    expect(rebuilt?.version).toBe(quiet.version);
    expect(rebuilt?.patched?.size ?? 0).toBe(0);
    expect(rebuilt?.ids.length).toBe(catalog.rows.size);
    expect(catalog.pagesRead).toBe(pagesRead);
    for (const keyword of ['few 998', 'quiet', 'item 7', 'item 29999', 'acme'])
      expect(await corpus.match(1, keyword, quiet.version)).toEqual(catalog.instr(keyword));
  });

  it('leaves fewer patched items than that to the searches, however quiet the writes', async () => {
    const few = await loadedWithFewWritten();
    await later(60_000, async () => expect(await corpus.match(1, 'few 998', few.version)).toEqual([40_998]));
    expect(internals(corpus).corpora.get(1)?.patched?.size).toBe(999);
  });

  it('shares the pages and pair segments before the first item a rebuild changes with the corpus it replaces', async () => {
    const segmentItems = pairSegmenting.items;
    // Segments of one page (4,096 items) here, so that a catalog of 30,000 has several.
    pairSegmenting.items = 4096;
    try {
      for (let id = 51; id <= 30_000; id++) catalog.rows.set(id, `item ${id}`);
      await loaded(corpus, catalog.version);
      const segments = () => (internals(corpus).corpora.get(1) as unknown as { pairs: { segments: unknown[] } }).pairs.segments;
      const before = segments();
      expect(before.length).toBe(8);
      // 1,600 new goods after the others (half the bound of 3,000 passed): a rebuild, which changes nothing
      // of the 29,999 loaded items and so shares the 7 whole pages and segments (28,672 items).
      const appended = catalog.write(
        corpus,
        Array.from({ length: 1600 }, (_, i): [number, string] => [40_000 + i, `appended ${i}`]),
      );
      appended.tell();
      await loadUnderWay(corpus);
      const afterAppend = segments();
      expect(internals(corpus).corpora.get(1)?.version).toBe(appended.version);
      expect(internals(corpus).corpora.get(1)?.patched?.size ?? 0).toBe(0);
      expect(afterAppend.length).toBe(8);
      expect(afterAppend.filter((segment, s) => segment === before[s]).length).toBe(7);
      // Goods 10,000 renamed (item 9,999 of the corpus) among 1,599 more new ones (33,198 items, 9 segments): pages and segments 0 and 1 shared.
      const renamed = catalog.write(corpus, [
        [10_000, 'renamed gadget'],
        ...Array.from({ length: 1599 }, (_, i): [number, string] => [50_000 + i, `more ${i}`]),
      ]);
      renamed.tell();
      await loadUnderWay(corpus);
      const afterRename = segments();
      expect(internals(corpus).corpora.get(1)?.patched?.size ?? 0).toBe(0);
      expect(afterRename.length).toBe(9);
      expect(afterRename.filter((segment, s) => segment === afterAppend[s]).length).toBe(2);
      expect(internals(corpus).corpora.get(1)?.ids.length).toBe(catalog.rows.size);
      for (const keyword of ['item 10000', 'item 1000', 'gadget', 'item 28672', 'item 28673', 'item 8191', 'appended 1599', 'more 1', 'item', 'e'])
        expect(await corpus.match(1, keyword, renamed.version)).toEqual(catalog.instr(keyword));
    } finally {
      pairSegmenting.items = segmentItems;
    }
  });

  it('takes more than the bound of patched items while a rebuild runs, and the rebuilt corpus takes them too', async () => {
    await loaded(corpus, catalog.version);
    const batch = (from: number, count: number) => Array.from({ length: count }, (_, i): [number, string] => [from + i, `batch ${from} ${i}`]);
    catalog.write(corpus, batch(1000, 1000)).tell();
    await rebuildStarted();
    // A rebuild runs now; 2,400 more items come before it ends (the bound is 2,000).
    catalog.write(corpus, batch(3000, 1200)).tell();
    const last = catalog.write(corpus, batch(5000, 1200));
    last.tell();
    expect(internals(corpus).corpora.get(1)?.version).toBe(last.version);
    expect(await corpus.match(1, 'batch 5000 1199', last.version)).toEqual([6199]);
    await loadUnderWay(corpus);
    const rebuilt = internals(corpus).corpora.get(1);
    expect(rebuilt?.version).toBe(last.version);
    // The rebuilt corpus (the first batch folded in, the two others patched), not the one it replaced.
    expect(rebuilt?.patched?.size).toBe(2400);
    for (const keyword of ['batch 1000 999', 'batch 3000', 'batch', 'item'])
      expect(await corpus.match(1, keyword, last.version)).toEqual(catalog.instr(keyword));
  });

  it("puts another node's step back together from its parts, and drops one whose parts do not follow each other", async () => {
    await loaded(corpus, catalog.version);
    const { corpora } = internals(corpus);
    const send = (message: Record<string, unknown>) => internals(corpus).received(JSON.stringify(message));
    const write = catalog.write(
      corpus,
      [
        [60, 'part one'],
        [61, 'part two'],
      ],
      [10],
    );
    const base = { customerId: 1, version: write.version, parts: 3 };
    // A step whose second part never came, then another node's parts in between: neither is taken.
    send({ node: 'B', ...base, part: 0, written: [{ id: 60, searchText: 'part one' }], deleted: [] });
    send({ node: 'B', ...base, part: 2, written: [], deleted: [10] });
    send({ node: 'C', ...base, version: write.version + 5, part: 0, written: [], deleted: [] });
    expect(corpora.get(1)?.version).toBe(write.version - 1);
    // Parts of two nodes' steps interleaved: each node's is put together on its own.
    send({ node: 'B', ...base, part: 0, written: [{ id: 60, searchText: 'part one' }], deleted: [] });
    send({ node: 'C', ...base, version: write.version + 5, part: 1, written: [], deleted: [] });
    send({ node: 'B', ...base, part: 1, written: [{ id: 61, searchText: 'part two' }], deleted: [] });
    expect(corpora.get(1)?.version).toBe(write.version - 1);
    send({ node: 'B', ...base, part: 2, written: [], deleted: [10] });
    expect(corpora.get(1)?.version).toBe(write.version);
    for (const keyword of ['part', 'item 10', 'item']) expect(await corpus.match(1, keyword, write.version)).toEqual(catalog.instr(keyword));
    // Out of range: ignored.
    for (const bad of [{ part: 3 }, { part: -1 }, { parts: 0 }, { parts: 1000 }, { part: 0.5 }])
      send({ node: 'D', ...base, version: write.version + 1, written: [], deleted: [], part: 0, ...bad });
    expect(corpora.get(1)?.version).toBe(write.version);
  });

  it('shares a large step in parts that put it back together on another node', async () => {
    const messages: string[] = [];
    const writer = corpusOver(catalog, { publish: (_channel: string, message: string) => (messages.push(message), Promise.resolve(1)) });
    internals(writer).channel = 'test:search-steps';
    const other = corpusOver(catalog);
    try {
      await loaded(other, catalog.version);
      const written = Array.from({ length: 4500 }, (_, i): [number, string] => [2000 + i, `shared bulk ${i}`]);
      const write = catalog.write(writer, written, [11, 12]);
      write.tell();
      await (writer as unknown as { sharing: { queue: Promise<void> } }).sharing.queue;
      const parts = messages.map((m) => JSON.parse(m) as { part: number; parts: number; written: unknown[]; deleted: unknown[] });
      expect(parts.map((p) => [p.part, p.parts, p.written.length, p.deleted.length])).toEqual([
        [0, 4, 2000, 0],
        [1, 4, 2000, 0],
        [2, 4, 500, 0],
        [3, 4, 0, 2],
      ]);
      for (const message of messages) internals(other).received(message);
      await loadUnderWay(other);
      expect(internals(other).corpora.get(1)?.version).toBe(write.version);
      for (const keyword of ['shared bulk 4499', 'item 11', 'item']) expect(await other.match(1, keyword, write.version)).toEqual(catalog.instr(keyword));
    } finally {
      writer.onApplicationShutdown();
      other.onApplicationShutdown();
    }
  });
});
