import { existsSync, mkdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { MediaOrphanSweep } from '../src/media/orphan-sweep';
import { useImageServer } from './support/image-server';
import { eventually } from './support/eventually';
import { describeServerProcesses, insertCustomer, ProcessCustomer } from './support/server-process';
import { describeEngines, TestApp, TestCustomer } from './support/test-app';

/**
 * The orphan sweep (MEDIA_SWEEP_INTERVAL_MS): files of images no item uses that the delayed release never
 * reached (a node killed outright) go once unused for MEDIA_SWEEP_MIN_AGE_MS; nothing else does.
 */

type Body = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DAY_MS = 86_400_000;
const images = useImageServer();

/** The storage keys of a media answer's files: the original, then its thumbnails (`ab/<checksum>...`). */
function keysOf(media: Body): string[] {
  return [media.url, ...media.thumbnails.map((th: Body) => th.imageUrl)].map((url: string) => new URL(url).pathname.replace(/^\/media\//, ''));
}

/** Sets the files' modification time `ageMs` back: as if last written or reused then. */
function age(mediaDir: string, keys: string[], ageMs: number): void {
  const then = new Date(Date.now() - ageMs);
  for (const key of keys) utimesSync(join(mediaDir, key), then, then);
}

const present = (mediaDir: string, keys: string[]) => keys.map((key) => existsSync(join(mediaDir, key)));

describeEngines(
  'media orphan sweep',
  __filename,
  (ctx) => {
    const register = (t: TestApp, c: TestCustomer, n: number, mediaUrl: string) =>
      t.http
        .post(`/v1/goods/${c.accessKey}`)
        .set('Authorization', c.auth())
        .send({ name: `Item ${n}`, sku: `SKU-${n}`, url: `https://shop.example.com/goods/${n}`, mediaUrl })
        .expect(200);

    it('removes old files no row refers to and half-written files; keeps used, recent, waiting and foreign files', async () => {
      const t = ctx();
      const c = await t.createCustomer();
      const dir = join(t.config.dataDir, 'media');
      const used = keysOf((await register(t, c, 1, images().url1(`/v/sweep-used-${t.engine}/photo.jpg`))).body.medias[0]);
      // Files of an image whose item is gone and whose release no node holds (its node was killed).
      const orphanItem = await register(t, c, 2, images().url1(`/v/sweep-orphan-${t.engine}/photo.jpg`));
      const orphan = keysOf(orphanItem.body.medias[0]);
      await t.dataSource.query('DELETE FROM media WHERE goodsId = ?', [orphanItem.body.id]);
      // Released on this node and waiting for MEDIA_RELEASE_DELAY_MS: still served until then.
      const waitingItem = await register(t, c, 3, images().url1(`/v/sweep-waiting-${t.engine}/photo.jpg`));
      const waiting = keysOf(waitingItem.body.medias[0]);
      await t.http
        .delete(`/v1/goods/${c.accessKey}/${waitingItem.body.id as number}`)
        .set('Authorization', c.auth())
        .expect(200);
      // Unused but written an hour ago: within MEDIA_SWEEP_MIN_AGE_MS (a day).
      const recentItem = await register(t, c, 4, images().url1(`/v/sweep-recent-${t.engine}/photo.jpg`));
      const recent = keysOf(recentItem.body.medias[0]);
      await t.dataSource.query('DELETE FROM media WHERE goodsId = ?', [recentItem.body.id]);
      // A file a killed put left half-written, and files the service never names.
      const partial = `${used[0].slice(0, 2)}/.0123456789ab.tmp`;
      writeFileSync(join(dir, partial), 'half');
      mkdirSync(join(dir, 'zz'), { recursive: true });
      const foreign = ['zz/notes.txt', `${used[0].slice(0, 2)}/README`];
      for (const key of foreign) writeFileSync(join(dir, key), 'kept');

      age(dir, [...used, ...orphan, ...waiting, partial, ...foreign], 2 * DAY_MS);
      age(dir, recent, 3_600_000);

      const outcome = await t.app.get(MediaOrphanSweep).sweep();
      expect(outcome.removed).toBe(orphan.length + 1);
      expect(present(dir, orphan)).toEqual(orphan.map(() => false));
      expect(present(dir, [partial])).toEqual([false]);
      expect(present(dir, [...used, ...waiting, ...recent, ...foreign])).toEqual([...used, ...waiting, ...recent, ...foreign].map(() => true));
      // The used image is still served whole.
      for (const key of used) await t.http.get(`/media/${key}`).expect(200);
    });

    it('counts the bytes it removed', async () => {
      const t = ctx();
      const c = await t.createCustomer();
      const dir = join(t.config.dataDir, 'media');
      const item = await register(t, c, 10, images().url1(`/v/sweep-bytes-${t.engine}/photo.jpg`));
      const keys = keysOf(item.body.medias[0]);
      const bytes = keys.reduce((sum, key) => sum + statSync(join(dir, key)).size, 0);
      await t.dataSource.query('DELETE FROM media WHERE goodsId = ?', [item.body.id]);
      age(dir, keys, 2 * DAY_MS);
      const outcome = await t.app.get(MediaOrphanSweep).sweep();
      expect(outcome).toEqual({ removed: keys.length, bytes, refused: false });
    });

    it("a write reusing an image's files marks them used: the sweep leaves them although they were stored long ago", async () => {
      const t = ctx();
      const [a, b] = [await t.createCustomer(), await t.createCustomer()];
      const dir = join(t.config.dataDir, 'media');
      const mediaUrl = images().url1(`/v/sweep-reuse-${t.engine}/photo.jpg`);
      const first = await register(t, a, 20, mediaUrl);
      const keys = keysOf(first.body.medias[0]);
      age(dir, keys, 2 * DAY_MS);
      // B's write finds the stored files and reuses them. Then no row names the image, as when A's item
      // is deleted while a slower write of B's has reused the files and not committed yet.
      const second = await register(t, b, 21, mediaUrl);
      expect(keysOf(second.body.medias[0])).toEqual(keys);
      await t.dataSource.query('DELETE FROM media WHERE checksum = ?', [keys[0].slice(3, 67)]);
      const outcome = await t.app.get(MediaOrphanSweep).sweep();
      expect(outcome.removed).toBe(0);
      expect(present(dir, keys)).toEqual(keys.map(() => true));
    });

    it('removes nothing when more than half of the images stored are unknown to the database (DATA_DIR shared with another one)', async () => {
      const t = ctx();
      const c = await t.createCustomer();
      const dir = join(t.config.dataDir, 'media');
      const items = [];
      for (let n = 30; n < 33; n += 1) items.push(await register(t, c, n, images().url1(`/v/sweep-foreign-db-${t.engine}-${n}/photo.jpg`)));
      const keys = items.flatMap((item) => keysOf(item.body.medias[0]));
      // As if this node read another database: none of these images is known to it.
      await t.dataSource.query('DELETE FROM media');
      age(dir, keys, 2 * DAY_MS);
      const warn = jest.spyOn(Logger.prototype, 'warn');
      try {
        expect(await t.app.get(MediaOrphanSweep).sweep()).toEqual({ removed: 0, bytes: 0, refused: true });
        expect(warn.mock.calls.map((call) => String(call[0]))).toContainEqual(
          expect.stringMatching(/unused by this node's database; more than half, so none was removed/),
        );
      } finally {
        warn.mockRestore();
      }
      expect(present(dir, keys)).toEqual(keys.map(() => true));
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', MEDIA_RELEASE_DELAY_MS: '600000', MEDIA_SWEEP_INTERVAL_MS: '0' },
);

/**
 * A node killed (SIGKILL) while an image's files wait for their delayed release leaves them on disk and
 * lists them nowhere; the next start's sweep removes them once unused for MEDIA_SWEEP_MIN_AGE_MS.
 */
describeServerProcesses(
  'media left by a killed node',
  `${__filename.replace(/\.e2e-spec\.ts$/, '')}-kill.e2e-spec.ts`,
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', MEDIA_RELEASE_DELAY_MS: '600000' },
  (ctx) => {
    it('the next start sweeps the files the killed node was holding for release', async () => {
      const { engine, env, dataDir } = ctx();
      let server = await ctx().start();
      const c: ProcessCustomer = await insertCustomer(env);
      const post = async (n: number) => {
        const res = await fetch(`${server.base}/v1/goods/${c.accessKey}`, {
          method: 'POST',
          headers: { Authorization: c.auth, 'Content-Type': 'application/json' },
          body: JSON.stringify({
            name: `Item ${n}`,
            sku: `K-${n}`,
            url: `https://shop.example.com/k/${n}`,
            mediaUrl: images().url1(`/v/killed-${engine}-${n}/photo.jpg`),
          }),
        });
        expect(res.status).toBe(200);
        return (await res.json()) as Body;
      };
      const kept = await post(1);
      const released = await post(2);
      const del = await fetch(`${server.base}/v1/goods/${c.accessKey}/${released.id as number}`, { method: 'DELETE', headers: { Authorization: c.auth } });
      expect(del.status).toBe(200);
      server.signal('SIGKILL');
      await server.stopped();

      const dir = join(dataDir, 'media');
      const [keptKeys, releasedKeys] = [keysOf(kept.medias[0]), keysOf(released.medias[0])];
      // Nothing listed the waiting release (only a clean stop writes DATA_DIR/media-releases).
      expect(existsSync(join(dataDir, 'media-releases'))).toBe(false);
      expect(present(dir, releasedKeys)).toEqual(releasedKeys.map(() => true));
      age(dir, [...keptKeys, ...releasedKeys], 2 * DAY_MS);

      server = await ctx().start({ MEDIA_SWEEP_INTERVAL_MS: '1000', LOG_LEVEL: 'log' });
      await eventually(
        async () => present(dir, releasedKeys),
        (states) => states.every((s) => !s),
        30_000,
        200,
      );
      expect(server.output).toMatch(new RegExp(`media sweep: ${releasedKeys.length} unused file\\(s\\) removed`));
      expect(present(dir, keptKeys)).toEqual(keptKeys.map(() => true));
      for (const key of keptKeys) expect((await fetch(`${server.base}/media/${key}`)).status).toBe(200);
    }, 240_000);
  },
);
