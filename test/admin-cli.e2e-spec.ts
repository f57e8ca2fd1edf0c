import { execFile } from 'node:child_process';
import Database from 'better-sqlite3';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { decode, JwtPayload, verify } from 'jsonwebtoken';
import request from 'supertest';
import { AppModule } from '../src/app.module';
import { configureApp } from '../src/app.setup';
import { AppConfig } from '../src/config/app-config';

const ROOT = resolve(__dirname, '..');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the admin CLI from source, as `npm run admin` would run its build. */
function admin(dataDir: string, ...args: string[]): Promise<CliResult> {
  return adminWith({}, dataDir, ...args);
}

/** The same, with some settings of its own. */
function adminWith(settings: Record<string, string>, dataDir: string, ...args: string[]): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, DB_TYPE: 'sqlite', LOG_LEVEL: 'error', ...settings };
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', 'src/cli/admin.ts', ...args],
      { cwd: ROOT, env, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return fail(new Error(`the admin CLI did not run: ${err.message}`));
        done({ code: err ? (err.code as number) : 0, stdout, stderr });
      },
    );
  });
}

describe('admin CLI [sqlite]', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'livegoods-admin-'));
  let created: { accessKey: string; secretKey: string; name: string; currency: string };
  let token = '';
  let other: { accessKey: string; secretKey: string; currency: string };
  let otherOldToken = '';
  let rotatedSecret = '';
  let tokenAfterRotation = '';

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('customer create prints exactly one JSON line with the new keys', async () => {
    const res = await admin(dataDir, 'customer', 'create', '--name', 'Shop', '--currency', 'usd');
    expect(res.code).toBe(0);
    expect(res.stdout.endsWith('\n')).toBe(true);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    created = JSON.parse(lines[0]);
    expect(Object.keys(created).sort()).toEqual(['accessKey', 'currency', 'name', 'secretKey']);
    expect(created).toEqual({
      accessKey: expect.stringMatching(/^[A-Za-z0-9_-]{20,32}$/),
      secretKey: expect.any(String),
      name: 'Shop',
      currency: 'USD',
    });
    const secret = Buffer.from(created.secretKey, 'base64');
    expect(secret).toHaveLength(32);
    expect(secret.toString('base64')).toBe(created.secretKey); // canonical base64, nothing else
  });

  it('a second customer gets different keys', async () => {
    const res = await admin(dataDir, 'customer', 'create', '--name', 'Other shop');
    expect(res.code).toBe(0);
    other = JSON.parse(res.stdout);
    expect(other.currency).toBe('KRW');
    expect(other.accessKey).not.toBe(created.accessKey);
    expect(other.secretKey).not.toBe(created.secretKey);
  });

  it('customer list prints the customers without their secrets', async () => {
    const res = await admin(dataDir, 'customer', 'list');
    expect(res.code).toBe(0);
    const rows = res.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual({ accessKey: created.accessKey, name: 'Shop', currency: 'USD' });
    expect(res.stdout).not.toContain(created.secretKey);
  });

  it('token prints an HS256 JWT for the customer, valid for the given ttl', async () => {
    const res = await admin(dataDir, 'token', '--access-key', created.accessKey, '--ttl', '10m');
    expect(res.code).toBe(0);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    token = lines[0];
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);

    const decoded = decode(token, { complete: true });
    expect(decoded?.header.alg).toBe('HS256');
    const payload = decoded?.payload as JwtPayload;
    expect(payload.accessKey).toBe(created.accessKey);
    expect(typeof payload.iat).toBe('number');
    expect(payload.exp).toBe((payload.iat as number) + 600);
    expect(Math.abs((payload.iat as number) - Date.now() / 1000)).toBeLessThan(120);

    const verified = verify(token, Buffer.from(created.secretKey, 'base64'), { algorithms: ['HS256'] }) as JwtPayload;
    expect(verified.accessKey).toBe(created.accessKey);
    expect(() => verify(token, Buffer.alloc(32, 1), { algorithms: ['HS256'] })).toThrow();
  });

  it('an unknown command exits with code 2', async () => {
    const res = await admin(dataDir, 'customer', 'explode');
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/unknown command/i);
    expect(res.stdout).toBe('');
  });

  it('customer create refuses a currency that is not an ISO 4217 code (XYZ, DOLLARS) and creates nothing', async () => {
    const before = (await admin(dataDir, 'customer', 'list')).stdout;
    for (const currency of ['XYZ', 'DOLLARS', 'kr']) {
      const res = await admin(dataDir, 'customer', 'create', '--name', 'Bad currency', '--currency', currency);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/currency must be an ISO 4217 code/);
      expect(res.stdout).toBe('');
    }
    expect((await admin(dataDir, 'customer', 'list')).stdout).toBe(before);
  });

  it('customer create without --name fails with a message on stderr', async () => {
    const res = await admin(dataDir, 'customer', 'create');
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/--name/);
    expect(res.stdout).toBe('');
  });

  it('takes any access key, also one starting with "-" (issued before keys started with a letter or digit)', async () => {
    const made = await admin(dataDir, 'customer', 'create', '--name', 'Dashed');
    const { accessKey } = JSON.parse(made.stdout) as { accessKey: string };
    const dashed = `-${accessKey.slice(1)}`;
    const db = new Database(join(dataDir, 'livegoods.sqlite'));
    db.prepare('UPDATE customers SET accessKey = ? WHERE accessKey = ?').run(dashed, accessKey);
    db.close();
    const res = await admin(dataDir, 'token', '--access-key', dashed, '--ttl', '10m');
    expect(res.code).toBe(0);
    expect((decode(res.stdout.trim()) as JwtPayload).accessKey).toBe(dashed);
  });

  it('token for an unknown access key fails', async () => {
    const res = await admin(dataDir, 'token', '--access-key', 'no-such-access-key-0000');
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('no-such-access-key-0000');
    expect(res.stdout).toBe('');
  });

  it('a bad --ttl fails without printing a token', async () => {
    const res = await admin(dataDir, 'token', '--access-key', created.accessKey, '--ttl', 'soon');
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/ttl/);
    expect(res.stdout).toBe('');
  });

  it('token refuses a --ttl longer than TOKEN_MAX_TTL (default 30d): the service would refuse that token', async () => {
    const tooLong = await admin(dataDir, 'token', '--access-key', created.accessKey, '--ttl', '31d');
    expect(tooLong.code).not.toBe(0);
    expect(tooLong.stderr).toMatch(/--ttl must be at most TOKEN_MAX_TTL \(30d\)/);
    expect(tooLong.stdout).toBe('');
    const longest = await admin(dataDir, 'token', '--access-key', created.accessKey, '--ttl', '30d');
    expect(longest.code).toBe(0);
    const payload = decode(longest.stdout.trim()) as JwtPayload;
    expect((payload.exp as number) - (payload.iat as number)).toBe(30 * 86400);

    const limited = await adminWith({ TOKEN_MAX_TTL: '1h' }, dataDir, 'token', '--access-key', created.accessKey, '--ttl', '2h');
    expect(limited.code).not.toBe(0);
    expect(limited.stderr).toMatch(/TOKEN_MAX_TTL \(1h\)/);
    expect(limited.stdout).toBe('');
    expect((await adminWith({ TOKEN_MAX_TTL: '1h' }, dataDir, 'token', '--access-key', created.accessKey, '--ttl', '3600')).code).toBe(0);
  });

  it('customer rotate-secret prints one JSON line: the new secret key and until when the old one is accepted (default 24h)', async () => {
    const before = Date.now();
    const res = await admin(dataDir, 'customer', 'rotate-secret', '--access-key', created.accessKey);
    expect(res.code).toBe(0);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const rotated = JSON.parse(lines[0]);
    expect(Object.keys(rotated).sort()).toEqual(['accessKey', 'previousKeyValidUntil', 'secretKey']);
    expect(rotated.accessKey).toBe(created.accessKey);
    expect(rotated.secretKey).not.toBe(created.secretKey);
    expect(Buffer.from(rotated.secretKey, 'base64')).toHaveLength(32);
    expect(Buffer.from(rotated.secretKey, 'base64').toString('base64')).toBe(rotated.secretKey);
    expect(rotated.previousKeyValidUntil).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const until = Date.parse(rotated.previousKeyValidUntil);
    expect(until).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 1000);
    rotatedSecret = rotated.secretKey;

    // The token command now signs with the new key.
    const minted = await admin(dataDir, 'token', '--access-key', created.accessKey, '--ttl', '10m');
    expect(minted.code).toBe(0);
    tokenAfterRotation = minted.stdout.trim();
    expect(() => verify(tokenAfterRotation, Buffer.from(rotatedSecret, 'base64'), { algorithms: ['HS256'] })).not.toThrow();
    expect(() => verify(tokenAfterRotation, Buffer.from(created.secretKey, 'base64'), { algorithms: ['HS256'] })).toThrow();
  });

  it('customer rotate-secret --grace 2h / --grace 0 (the old key stops at once: previousKeyValidUntil is the rotation)', async () => {
    otherOldToken = (await admin(dataDir, 'token', '--access-key', other.accessKey)).stdout.trim();
    const twoHours = JSON.parse((await admin(dataDir, 'customer', 'rotate-secret', '--access-key', other.accessKey, '--grace', '2h')).stdout);
    expect(Math.abs(Date.parse(twoHours.previousKeyValidUntil) - (Date.now() + 7200_000))).toBeLessThan(60_000);
    const res = await admin(dataDir, 'customer', 'rotate-secret', '--access-key', other.accessKey, '--grace', '0');
    expect(res.code).toBe(0);
    const now = JSON.parse(res.stdout);
    expect(now).toEqual({ accessKey: other.accessKey, secretKey: expect.any(String), previousKeyValidUntil: expect.any(String) });
    expect(Math.abs(Date.parse(now.previousKeyValidUntil) - Date.now())).toBeLessThan(60_000);
    expect(now.secretKey).not.toBe(twoHours.secretKey);
  });

  it('customer rotate-secret refuses an unknown access key, a missing --access-key and a bad --grace', async () => {
    const unknown = await admin(dataDir, 'customer', 'rotate-secret', '--access-key', 'no-such-access-key-0000');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('no-such-access-key-0000');
    expect(unknown.stdout).toBe('');
    const missing = await admin(dataDir, 'customer', 'rotate-secret');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--access-key/);
    const bad = await admin(dataDir, 'customer', 'rotate-secret', '--access-key', created.accessKey, '--grace', 'a while');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--grace/);
    expect(bad.stdout).toBe('');
  });

  describe('the app started on the same DATA_DIR', () => {
    let app: NestExpressApplication | undefined;

    beforeAll(async () => {
      const config = AppConfig.fromEnv({ DATA_DIR: dataDir, DB_TYPE: 'sqlite', LOG_LEVEL: 'error' });
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
        .overrideProvider(AppConfig)
        .useValue(config)
        .compile();
      app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: ['error'] });
      configureApp(app);
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
    });

    it('accepts the token minted before the rotation (old key, within the grace period) and the one minted after', async () => {
      for (const t of [token, tokenAfterRotation]) {
        await request(app!.getHttpServer()).get(`/v1/goods/${created.accessKey}`).set('Authorization', `Bearer ${t}`).expect(200);
      }
    });

    it('refuses the old key of a customer rotated with --grace 0', async () => {
      expect(otherOldToken).not.toBe('');
      const res = await request(app!.getHttpServer()).get(`/v1/goods/${other.accessKey}`).set('Authorization', `Bearer ${otherOldToken}`).expect(401);
      expect(res.body._s).toBe(-102);
      // Signed with the key --grace 0 replaced: told so (the key before it, replaced by --grace 2h, reads as a bad signature).
      expect(res.body._e).toMatch(/^Invalid token: its signature does not match/);
    });

    it('accepts the token minted by the CLI', async () => {
      expect(token).not.toBe('');
      const res = await request(app!.getHttpServer()).get(`/v1/goods/${created.accessKey}`).set('Authorization', `Bearer ${token}`).expect(200);
      expect(res.body).toEqual({ results: [], totalCount: 0, _s: 0 });
    });

    it('answers goods in the currency given to the CLI', async () => {
      const res = await request(app!.getHttpServer())
        .post(`/v1/goods/${created.accessKey}/sync`)
        .set('Authorization', `Bearer ${token}`)
        .send([{ name: 'n', sku: 'cli-1', url: 'https://shop.example.com/cli-1' }])
        .expect(200);
      expect(res.body.results[0]).toMatchObject({ status: 'CREATE', currency: 'USD' });
    });

    it('backup --to copies the database whole while the app writes, then the media files; a later backup copies only new media', async () => {
      const server = app!.getHttpServer();
      const sync = (from: number) =>
        request(server)
          .post(`/v1/goods/${created.accessKey}/sync`)
          .set('Authorization', `Bearer ${token}`)
          .send(Array.from({ length: 500 }, (_, i) => ({ name: `b${from + i}`, sku: `bk-${from + i}`, url: `https://shop.example.com/bk-${from + i}` })))
          .expect(200);
      await sync(0);
      mkdirSync(join(dataDir, 'media', 'ab'), { recursive: true });
      writeFileSync(join(dataDir, 'media', 'ab', `ab${'0'.repeat(62)}.png`), 'first');
      // Writes go on while the backup runs: what it copies is one instant, whole.
      let writing = true;
      const writes = (async () => {
        for (let from = 500; writing; from += 500) await sync(from);
      })();
      const target = mkdtempSync(join(tmpdir(), 'livegoods-backup-'));
      const res = await admin(dataDir, 'backup', '--to', join(target, 'one'));
      writing = false;
      await writes;
      expect([res.code, res.stderr]).toEqual([0, '']);
      expect(JSON.parse(res.stdout)).toEqual({ database: join(target, 'one', 'livegoods.sqlite'), mediaCopied: 1, mediaKept: 0 });
      // The database holds the customers' secret keys: the service's and the backup's copy are this user's only.
      expect(statSync(join(target, 'one')).mode & 0o777).toBe(0o700);
      expect(statSync(join(target, 'one', 'livegoods.sqlite')).mode & 0o777).toBe(0o600);
      for (const file of ['livegoods.sqlite', 'livegoods.sqlite-wal']) expect(statSync(join(dataDir, file)).mode & 0o077).toBe(0);
      const copy = new Database(join(target, 'one', 'livegoods.sqlite'), { readonly: true });
      try {
        expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
        const { n } = copy.prepare("SELECT COUNT(*) AS n FROM goods WHERE sku LIKE 'bk-%'").get() as { n: number };
        // Whole syncs only (each is one transaction), at least the one before the backup.
        expect(n % 500).toBe(0);
        expect(n).toBeGreaterThanOrEqual(500);
      } finally {
        copy.close();
      }
      expect(readFileSync(join(target, 'one', 'media', 'ab', `ab${'0'.repeat(62)}.png`), 'utf8')).toBe('first');
      // Into a new directory holding the previous media (hardlinked): only the new file is copied.
      writeFileSync(join(dataDir, 'media', 'ab', `ab${'1'.repeat(62)}.png`), 'second');
      mkdirSync(join(target, 'two'));
      cpSync(join(target, 'one', 'media'), join(target, 'two', 'media'), { recursive: true });
      const again = await admin(dataDir, 'backup', '--to', join(target, 'two'));
      expect(JSON.parse(again.stdout)).toMatchObject({ mediaCopied: 1, mediaKept: 1 });
      const refused = await admin(dataDir, 'backup', '--to', join(target, 'two'));
      expect([refused.code, refused.stdout]).toEqual([1, '']);
      expect(refused.stderr).toMatch(/livegoods\.sqlite exists already: back up into a new directory/);
      rmSync(target, { recursive: true, force: true });
    });

    it('refuses the token on another path accessKey, and without a token', async () => {
      const server = app!.getHttpServer();
      const other = await request(server).get('/v1/goods/someoneelseskey0000000').set('Authorization', `Bearer ${token}`).expect(401);
      expect(other.body._s).toBe(-102);
      await request(server).get(`/v1/goods/${created.accessKey}`).expect(401);
    });
  });
});

describe('npm run admin, as written in the contract', () => {
  const dir = mkdtempSync(join(tmpdir(), 'livegoods-npmrc-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("prints only the CLI's output on stdout: the project's npm settings keep npm's banner off it", async () => {
    // The project's .npmrc, with stand-ins for the CLI and its build step (one prints to stdout, one to stderr).
    copyFileSync(join(ROOT, '.npmrc'), join(dir, '.npmrc'));
    const print = (text: string, stream: string) => `node -e "process.${stream}.write(process.argv[1] + '\\n')" '${text}'`;
    const manifest = {
      name: 'npmrc-check',
      version: '1.0.0',
      private: true,
      scripts: { preadmin: print('built', 'stderr'), admin: print('{"accessKey":"a"}', 'stdout') },
    };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest));
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const { code, stdout, stderr } = await new Promise<CliResult>((done, fail) =>
      execFile(npm, ['run', 'admin', '--', 'customer', 'create', '--name', 'X'], { cwd: dir, timeout: 60_000 }, (err, out, errOut) => {
        if (err && typeof err.code !== 'number') return fail(new Error(`npm did not run: ${err.message}`));
        done({ code: err ? (err.code as number) : 0, stdout: out, stderr: errOut });
      }),
    );
    expect({ code, stdout }).toEqual({ code: 0, stdout: '{"accessKey":"a"}\n' });
    expect(stderr).toBe('built\n');
  });
});
