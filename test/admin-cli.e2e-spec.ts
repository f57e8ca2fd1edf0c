import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, DB_TYPE: 'sqlite', LOG_LEVEL: 'error' };
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', 'src/cli/admin.ts', ...args],
      { cwd: ROOT, env, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return fail(err);
        done({ code: err ? (err.code as number) : 0, stdout, stderr });
      },
    );
  });
}

describe('admin CLI [sqlite]', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'livegoods-admin-'));
  let created: { accessKey: string; secretKey: string; name: string; currency: string };
  let token = '';

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
    const other = JSON.parse(res.stdout);
    expect(other.currency).toBe('KRW');
    expect(other.accessKey).not.toBe(created.accessKey);
    expect(other.secretKey).not.toBe(created.secretKey);
  });

  it('customer list prints the customers without their secrets', async () => {
    const res = await admin(dataDir, 'customer', 'list');
    expect(res.code).toBe(0);
    const rows = res.stdout.trimEnd().split('\n').map((l) => JSON.parse(l));
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

  it('customer create without --name fails with a message on stderr', async () => {
    const res = await admin(dataDir, 'customer', 'create');
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/--name/);
    expect(res.stdout).toBe('');
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

    it('accepts the token minted by the CLI', async () => {
      expect(token).not.toBe('');
      const res = await request(app!.getHttpServer())
        .get(`/v1/goods/${created.accessKey}`)
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
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

    it('refuses the token on another path accessKey, and without a token', async () => {
      const server = app!.getHttpServer();
      const other = await request(server).get('/v1/goods/someoneelseskey0000000').set('Authorization', `Bearer ${token}`).expect(401);
      expect(other.body._s).toBe(-102);
      await request(server).get(`/v1/goods/${created.accessKey}`).expect(401);
    });
  });
});
