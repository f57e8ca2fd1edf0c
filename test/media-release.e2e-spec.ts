import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { MediaService } from '../src/media/media.service';
import { ImageServer, startImageServer } from './support/image-server';
import { buildApp, describeEngines, TestApp, TestCustomer } from './support/test-app';

/**
 * Identical images are stored once for every customer. A write that found the files and reuses them
 * commits its row after another customer's delete released them: the release waits
 * MEDIA_RELEASE_DELAY_MS, then deletes only what no row refers to.
 */

type Body = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DELAY_MS = 1500;
let images: ImageServer;

beforeAll(async () => {
  images = await startImageServer();
});

afterAll(async () => {
  await images?.close();
});

function register(t: TestApp, c: TestCustomer, n: number, mediaUrl: string) {
  return t.http
    .post(`/v1/goods/${c.accessKey}`)
    .set('Authorization', c.auth())
    .send({ name: `Item ${n}`, sku: `SKU-${n}`, url: `https://shop.example.com/goods/${n}`, mediaUrl });
}

/** The status of every file of a media answer: the original, then its thumbnails. */
async function served(t: TestApp, media: Body): Promise<number[]> {
  const urls: string[] = [media.url, ...media.thumbnails.map((th: Body) => th.imageUrl)];
  return Promise.all(urls.map(async (url) => (await t.http.get(new URL(url).pathname)).status));
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeEngines(
  'media files released while another customer reuses them',
  __filename,
  (ctx) => {
    it("a delete that releases the files while another customer's write reuses them does not take them from it", async () => {
      const t = ctx();
      const [a, b] = [await t.createCustomer(), await t.createCustomer()];
      const mediaUrl = images.url1(`/v/release-race-${t.engine}/photo.jpg`);
      const first = await register(t, a, 1, mediaUrl).expect(200);

      // B's write: its image is prepared (the stored files are found and reused), then it waits, before
      // its transaction, until A's delete has released the files.
      const media = t.app.get(MediaService);
      const prepare = media.prepare.bind(media);
      let prepared!: () => void;
      const reused = new Promise<void>((resolve) => (prepared = resolve));
      let proceed!: () => void;
      const gate = new Promise<void>((resolve) => (proceed = resolve));
      const spy = jest.spyOn(media, 'prepare').mockImplementationOnce(async (customerId: number, url: string) => {
        const result = await prepare(customerId, url);
        prepared();
        await gate;
        return result;
      });
      try {
        const second = register(t, b, 1, mediaUrl).then((res) => res);
        await reused;
        await t.http
          .delete(`/v1/goods/${a.accessKey}/${first.body.id as number}`)
          .set('Authorization', a.auth())
          .expect(200);
        proceed();
        const res = await second;
        expect(res.status).toBe(200);
        const kept = res.body.medias[0] as Body;
        expect(new URL(kept.url).pathname).toBe(new URL(first.body.medias[0].url as string).pathname);

        // Past the delay, B's row is there: its files stay.
        await wait(DELAY_MS + 1000);
        expect(await served(t, kept)).toEqual([200, 200, 200, 200]);

        // Once B's item goes too, the files go, after the delay.
        await t.http
          .delete(`/v1/goods/${b.accessKey}/${res.body.id as number}`)
          .set('Authorization', b.auth())
          .expect(200);
        expect(await served(t, kept)).toEqual([200, 200, 200, 200]);
        await wait(DELAY_MS + 1000);
        expect(await served(t, kept)).toEqual([404, 404, 404, 404]);
      } finally {
        spy.mockRestore();
        proceed();
      }
    });

    it('files still waiting for their delay when a node stops are released by the next node that starts on the same DATA_DIR', async () => {
      const t = ctx();
      const a = await t.createCustomer();
      const created = await register(t, a, 2, images.url1(`/v/left-at-stop-${t.engine}/photo.jpg`)).expect(200);
      const files = created.body.medias[0] as Body;
      await t.http
        .delete(`/v1/goods/${a.accessKey}/${created.body.id as number}`)
        .set('Authorization', a.auth())
        .expect(200);
      // The node stops (its media service shuts down) before the delay has run out: the files stay for now.
      t.app.get(MediaService).onModuleDestroy();
      const left = join(t.config.dataDir, 'media-releases');
      expect(readdirSync(left).filter((name) => name.endsWith('.json'))).toHaveLength(1);
      await wait(DELAY_MS + 1000);
      expect(await served(t, files)).toEqual([200, 200, 200, 200]);
      // Another node starts on the same DATA_DIR and database: it takes the list over and releases the files.
      const next = await buildApp(t.config);
      await next.init();
      try {
        expect(readdirSync(left)).toEqual([]);
        await wait(DELAY_MS + 1000);
        expect(await served(t, files)).toEqual([404, 404, 404, 404]);
      } finally {
        await next.close();
      }
      expect(existsSync(left) ? readdirSync(left) : []).toEqual([]);
    });
  },
  { MEDIA_ALLOW_PRIVATE_HOSTS: 'true', MEDIA_RELEASE_DELAY_MS: String(DELAY_MS) },
);
