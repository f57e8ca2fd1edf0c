import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { io, Socket } from 'socket.io-client';
import { closeAllViewers, Payload } from './support/live-client';
import { expectOk, liveHarness } from './support/live-harness';
import { describeEngines } from './support/test-app';

/**
 * The minimal client of docs/live-protocol.md, run as it is written there (its code block, read from the
 * file; only the address and the keys replaced, as a reader would), against the real server: what a player
 * copied from the docs ends up showing must be what the campaign is, through events, a reconnect with its
 * resync, and the campaign's deletion.
 */

/** Retries `check` (its expectations) until it passes, or throws its last failure after `timeoutMs`. */
async function eventually(check: () => unknown, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

interface MinimalClient {
  socket: Socket;
  state: Payload | null;
  current: number;
  rendered: number;
  errors: string[];
}

/** The code block under "## Minimal client". */
function minimalClientSource(): string {
  const doc = readFileSync(join(__dirname, '..', 'docs', 'live-protocol.md'), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Minimal client'));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/live-protocol.md has no minimal client code block');
  return block[1];
}

/** Runs the docs' client for this campaign; its state, seq and socket read through the returned object. */
function runMinimalClient(base: string, accessKey: string, campaignKey: string): MinimalClient {
  let source = minimalClientSource();
  for (const [from, to] of [
    ["'https://live.example.com/live'", JSON.stringify(`${base}/live`)],
    ["'YOUR_ACCESS_KEY'", JSON.stringify(accessKey)],
    ["'k7Qw2ZbX9mN4pR8s'", JSON.stringify(campaignKey)],
  ]) {
    if (!source.includes(from)) throw new Error(`the docs' client no longer holds ${from}`);
    source = source.replace(from, to);
  }
  const client = { rendered: 0, errors: [] as string[] } as unknown as MinimalClient;
  const fakeConsole = {
    log: () => (client.rendered += 1),
    error: (...args: unknown[]) => client.errors.push(args.map(String).join(' ')),
  };
  const fakeRequire = (name: string) => {
    if (name !== 'socket.io-client') throw new Error(`the docs' client requires ${name}`);
    return { io };
  };
  // The block's own top-level names, read back through accessors.
  const run = runInThisContext(
    `(function (require, console) {\n${source}\nreturn { socket, get state() { return state; }, get current() { return current; } };\n})`,
    { filename: 'docs/live-protocol.md#minimal-client' },
  ) as (r: typeof fakeRequire, c: typeof fakeConsole) => { socket: Socket; state: Payload | null; current: number };
  const inner = run(fakeRequire, fakeConsole);
  Object.defineProperties(client, {
    socket: { get: () => inner.socket },
    state: { get: () => inner.state },
    current: { get: () => inner.current },
  });
  return client;
}

describeEngines('the docs’ minimal live client, as written', __filename, (ctx) => {
  const live = liveHarness(ctx);
  const { con, salesStatus, stock, liveCampaign, register, viewer, campaignRow } = live;
  const clients: MinimalClient[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.socket.disconnect();
    closeAllViewers();
  });

  /** What a fresh join shows now (a second, plain viewer's snapshot). */
  async function snapshotNow(key: string): Promise<Payload> {
    const v = await viewer(live.A, key);
    const snapshot = await v.next('campaign.snapshot');
    v.close();
    return snapshot;
  }

  /** The parts of a state both a snapshot and the events keep up to date. */
  const shown = (s: Payload) => ({
    status: s.campaign.campaignStatus,
    goods: s.goods.map((g: Payload) => [g.goodsId, g.name, g.salesStatus, g.stock]),
    notice: s.notice?.message ?? null,
    chat: s.chat.map((c: Payload) => c.message),
  });

  it('follows the campaign through events and a reconnect (its resync brings what it missed); shows a deletion and stays away', async () => {
    const { key, goods } = await liveCampaign(live.A, 2, { operatorName: 'Desk' });
    const client = runMinimalClient(live.base, live.A.accessKey, key);
    clients.push(client);
    await eventually(() => expect(client.state).not.toBeNull());
    expect(client.current).toBe(Number((await campaignRow(key)).lastSeq));

    expectOk(await con(live.A).status(key, 'ONAIR'));
    expectOk(await salesStatus(live.A, key, 'id', { goodsId: goods[0].id, salesStatus: 'SOLD_OUT' }));
    expectOk(await con(live.A).chat(key, { message: 'Welcome' }));
    expectOk(await con(live.A).chat(key, { message: 'Pinned', pinned: true }));
    const extra = await register(live.A);
    expectOk(await con(live.A).addGoods(key, { goodsIds: [extra.id] }));
    await eventually(async () => expect(client.current).toBe(Number((await campaignRow(key)).lastSeq)));
    expect(shown(client.state as Payload)).toEqual(shown(await snapshotNow(key)));

    // The transport drops (a network change); socket.io comes back by itself, after 2 s here, and the
    // client resyncs from the seq it had: what happened meanwhile arrives with the join snapshot.
    const before = client.current;
    client.socket.io.reconnectionDelay(2000).reconnectionDelayMax(2000).randomizationFactor(0);
    client.socket.io.engine.close();
    await eventually(() => expect(client.socket.connected).toBe(false));
    expectOk(await salesStatus(live.A, key, 'id', { goodsId: goods[1].id, salesStatus: 'ALMOST_SOLD_OUT' }));
    expectOk(await con(live.A).chat(key, { message: 'While you were away' }));
    expectOk(await stock(live.A, key, 'id', 'set', { goodsId: goods[0].id, stock: 7 }));
    await eventually(() => expect(client.socket.connected).toBe(true), 10_000);
    await eventually(async () => expect(client.current).toBe(Number((await campaignRow(key)).lastSeq)));
    expect(client.current).toBe(before + 3);
    expect(shown(client.state as Payload)).toEqual(shown(await snapshotNow(key)));
    expect(client.state?.chat.map((c: Payload) => c.message)).toContain('While you were away');

    // Deleted: the last campaign.status says so, the server disconnects it, and it does not come back.
    expectOk(await con(live.A).remove(key));
    await eventually(() => expect(client.state?.campaign.campaignStatus).toBe('NOT_EXIST'));
    await eventually(() => expect(client.socket.connected).toBe(false));
    await new Promise((r) => setTimeout(r, 3500)); // longer than its 1-3 s come-back after other server disconnects
    expect(client.socket.connected).toBe(false);
    expect(client.errors).toEqual([]);
    expect(client.rendered).toBeGreaterThan(5);
  });

  it('applies a NOT_EXIST whatever its seq: one below what it has (from a node that missed the last events) too', async () => {
    const { key } = await liveCampaign(live.A, 1);
    expectOk(await con(live.A).chat(key, { message: 'one' }));
    expectOk(await con(live.A).chat(key, { message: 'two' }));
    const client = runMinimalClient(live.base, live.A.accessKey, key);
    clients.push(client);
    await eventually(() => expect(client.state).not.toBeNull());
    expect(client.current).toBeGreaterThanOrEqual(3);
    // An old event is skipped; a NOT_EXIST with a seq it is already past is not (the listener the docs'
    // code registered, called as a node would have it called).
    const [onStatus] = client.socket.listeners('campaign.status');
    onStatus({ seq: 1, campaignKey: key, campaignStatus: 'ONAIR' });
    expect(client.state?.campaign.campaignStatus).toBe('READY');
    onStatus({ seq: 2, campaignKey: key, campaignStatus: 'NOT_EXIST', startedAt: null, endedAt: null });
    expect(client.state?.campaign.campaignStatus).toBe('NOT_EXIST');
  });
});
