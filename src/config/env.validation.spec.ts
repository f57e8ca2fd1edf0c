import { AppConfig } from './app-config';
import { ConfigValidationError, unknownSettings, validateEnv } from './env.validation';

function refusal(raw: Record<string, unknown>): ConfigValidationError {
  try {
    validateEnv(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigValidationError);
    return err as ConfigValidationError;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

describe('validateEnv', () => {
  it('applies the documented defaults when nothing is set', () => {
    const env = validateEnv({});
    expect(env).toMatchObject({
      PORT: 3000,
      DATA_DIR: './data',
      DB_TYPE: 'sqlite',
      DB_HOST: '127.0.0.1',
      DB_PORT: 3306,
      DB_USER: 'root',
      DB_PASSWORD: '',
      DB_NAME: 'livegoods',
      MEDIA_ALLOW_PRIVATE_HOSTS: false,
      SYNC_MAX_ITEMS: 10000,
      LOG_LEVEL: 'log',
      REDIS_PREFIX: 'livegoods',
    });
    expect(env.REDIS_URL).toBeUndefined();
    expect(env.PUBLIC_BASE_URL).toBeUndefined();
  });

  it('reads numbers and strings from their text', () => {
    const env = validateEnv({
      PORT: '8080',
      DB_TYPE: 'mysql',
      DB_PORT: ' 3307 ',
      DB_NAME: 'shop_1',
      SYNC_MAX_ITEMS: '500',
      REDIS_URL: 'redis://cache:6379',
      PUBLIC_BASE_URL: 'https://live.example.com',
    });
    expect(env).toMatchObject({
      PORT: 8080,
      DB_TYPE: 'mysql',
      DB_PORT: 3307,
      DB_NAME: 'shop_1',
      SYNC_MAX_ITEMS: 500,
      REDIS_URL: 'redis://cache:6379',
      PUBLIC_BASE_URL: 'https://live.example.com',
    });
  });

  it('ignores variables it does not know', () => {
    const env = validateEnv({ HOME: '/root', SOMETHING_ELSE: 'x' }) as unknown as Record<string, unknown>;
    expect(env.HOME).toBeUndefined();
    expect(env.SOMETHING_ELSE).toBeUndefined();
  });

  it('treats empty REDIS_URL / PUBLIC_BASE_URL as unset', () => {
    const env = validateEnv({ REDIS_URL: '', PUBLIC_BASE_URL: '  ' });
    expect(env.REDIS_URL).toBeUndefined();
    expect(env.PUBLIC_BASE_URL).toBeUndefined();
  });

  it('takes PUBLIC_BASE_URL with a path, and refuses one with a query, a fragment or a user name (each link would carry it in its middle)', () => {
    expect(validateEnv({ PUBLIC_BASE_URL: 'https://example.com/live/' }).PUBLIC_BASE_URL).toBe('https://example.com/live/');
    expect(validateEnv({ PUBLIC_BASE_URL: 'http://localhost:3000' }).PUBLIC_BASE_URL).toBe('http://localhost:3000');
    for (const bad of ['https://x.example/base?q=1', 'https://x.example/base#frag', 'https://x.example?', 'https://user:pw@x.example']) {
      expect(refusal({ PUBLIC_BASE_URL: bad }).message).toContain('PUBLIC_BASE_URL must be an http(s) address with an optional path');
    }
  });

  it('names variables that start like a setting but are none, with the setting most likely meant; others are not looked at', () => {
    expect(
      unknownSettings({ DB_PASWORD: 'x', MEDIA_MAX_BYTE: '1', RATE_LIMIT_WHATEVER_ELSE_ENTIRELY: '1', DB_HOST: 'h', PATH: '/bin', NODE_ENV: 'production' }),
    ).toEqual([
      'DB_PASWORD is not a setting (did you mean DB_PASSWORD?)',
      'MEDIA_MAX_BYTE is not a setting (did you mean MEDIA_MAX_BYTES?)',
      'RATE_LIMIT_WHATEVER_ELSE_ENTIRELY is not a setting',
    ]);
    expect(unknownSettings({ REDIS_URL: 'redis://x', PUBLIC_BASE_URL: 'https://x', METRICS_TOKEN: 't'.repeat(20), LOG_FORMAT: 'json' })).toEqual([]);
  });

  it('a refusal also names the variables that look like a setting but are none (their warning would never come)', () => {
    const message = refusal({ PORT: 'abc', DB_PASWORD: 'x' }).message;
    expect(message.split('\n')).toEqual([
      'Invalid configuration (environment or .env):',
      expect.stringContaining('  - PORT="abc"'),
      'Also:',
      '  - DB_PASWORD is not a setting (did you mean DB_PASSWORD?): it is ignored',
    ]);
    expect(refusal({ PORT: 'abc' }).message).not.toContain('Also:');
  });

  it('refuses PORT=abc with a message naming PORT', () => {
    const err = refusal({ PORT: 'abc' });
    expect(err.message).toContain('PORT');
    expect(err.message).toContain('abc');
  });

  it('a number that is not a whole number is told so, and only so (not "too large; too small" as well)', () => {
    const line = (raw: Record<string, unknown>) => refusal(raw).message.split('\n')[1];
    expect(line({ MEDIA_MAX_BYTES: '1.5' })).toBe('  - MEDIA_MAX_BYTES="1.5": MEDIA_MAX_BYTES must be an integer number');
    expect(line({ PORT: 'abc' })).toBe('  - PORT="abc": PORT must be an integer number');
    // A whole number out of range names the range.
    expect(line({ PORT: '70000' })).toBe('  - PORT=70000: PORT must not be greater than 65535');
  });

  it('refuses out-of-range ports', () => {
    expect(refusal({ PORT: '70000' }).message).toContain('PORT');
    expect(refusal({ DB_PORT: '0' }).message).toContain('DB_PORT');
  });

  it('refuses DB_TYPE=postgres', () => {
    const err = refusal({ DB_TYPE: 'postgres' });
    expect(err.message).toContain('DB_TYPE');
    expect(err.message).toContain('postgres');
  });

  it.each([
    ['true', true],
    ['false', false],
    ['1', true],
    ['0', false],
    ['TRUE', true],
    [' yes ', true],
    ['no', false],
  ])('reads the boolean %p as %p', (text, value) => {
    expect(validateEnv({ MEDIA_ALLOW_PRIVATE_HOSTS: text }).MEDIA_ALLOW_PRIVATE_HOSTS).toBe(value);
    // TRUST_PROXY: true is one proxy in front.
    expect(validateEnv({ TRUST_PROXY: text }).TRUST_PROXY).toBe(value ? 1 : false);
  });

  it('reads TRUST_PROXY as a number of proxies (1 to 10) or a list of their addresses, and refuses anything else', () => {
    expect(validateEnv({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(validateEnv({ TRUST_PROXY: ' loopback, 10.0.0.0/8 ,fd00::1 ' }).TRUST_PROXY).toEqual(['loopback', '10.0.0.0/8', 'fd00::1']);
    expect(validateEnv({}).TRUST_PROXY).toBe(false);
    for (const bad of ['11', '-1', 'proxy.internal', '10.0.0.0/99', 'maybe']) {
      expect(refusal({ TRUST_PROXY: bad }).message).toContain('TRUST_PROXY must be true or false, a number of proxies in front (1 to 10)');
    }
  });

  it('takes a REDIS_PREFIX of letters, digits, _ . -, and refuses anything else (spaces, *, :)', () => {
    expect(validateEnv({ REDIS_PREFIX: 'shop-staging_2.eu' }).REDIS_PREFIX).toBe('shop-staging_2.eu');
    for (const bad of ['', 'has space', 'glob*', 'a:b', 'x'.repeat(65)]) expect(refusal({ REDIS_PREFIX: bad }).message).toContain('REDIS_PREFIX');
  });

  it('TOKEN_MAX_TTL: 30 days by default; a duration such as 30d, 12h, 3600s or plain seconds', () => {
    expect(validateEnv({}).TOKEN_MAX_TTL).toBe('30d');
    expect(AppConfig.fromEnv({}).auth.tokenMaxTtlSeconds).toBe(30 * 86400);
    for (const [text, seconds] of [
      ['12h', 43200],
      ['3600s', 3600],
      ['3600', 3600],
      ['90m', 5400],
      [' 7d ', 604800],
      ['366d', 366 * 86400],
      ['60', 60],
    ] as const) {
      expect(AppConfig.fromEnv({ TOKEN_MAX_TTL: text }).auth.tokenMaxTtlSeconds).toBe(seconds);
    }
  });

  it.each(['forever', '', '0', '59s', '367d', '30x', '1.5h', '-1d', '1e6'])('refuses TOKEN_MAX_TTL=%p naming it', (text) => {
    const err = refusal({ TOKEN_MAX_TTL: text });
    expect(err.message).toContain('TOKEN_MAX_TTL');
    expect(err.message).toMatch(/from 1m to 366d/);
  });

  it('reads MEDIA_MAX_SIDE (default 16384) and refuses one that is not a whole number from 1 to 1,000,000', () => {
    expect(validateEnv({}).MEDIA_MAX_SIDE).toBe(16_384);
    expect(validateEnv({ MEDIA_MAX_SIDE: '8000' }).MEDIA_MAX_SIDE).toBe(8000);
    expect(AppConfig.fromEnv({ MEDIA_MAX_SIDE: '8000' }, () => 1024).media.maxSide).toBe(8000);
    for (const bad of ['0', '-1', '1000001', '12.5', 'wide']) expect(refusal({ MEDIA_MAX_SIDE: bad }).message).toContain('MEDIA_MAX_SIDE');
  });

  it('reads LIVE_SESSIONS_PER_IP (1000; 0 = no limit), with TRUST_PROXY too, and refuses one that is not a whole number from 0 to 10,000,000', () => {
    expect(AppConfig.fromEnv({}, () => 1024).server.liveSessionsPerIp).toBe(1000);
    expect(AppConfig.fromEnv({ TRUST_PROXY: 'true' }, () => 1024).server.liveSessionsPerIp).toBe(1000);
    expect(AppConfig.fromEnv({ LIVE_SESSIONS_PER_IP: '0' }, () => 1024).server.liveSessionsPerIp).toBe(0);
    expect(AppConfig.fromEnv({ LIVE_SESSIONS_PER_IP: '250' }, () => 1024).server.liveSessionsPerIp).toBe(250);
    for (const bad of ['-1', '10000001', '2.5', 'many']) expect(refusal({ LIVE_SESSIONS_PER_IP: bad }).message).toContain('LIVE_SESSIONS_PER_IP');
  });

  it('reads MEDIA_PROCESS_CONCURRENCY (2) and MEDIA_PROCESS_TIMEOUT_MS (10000), and keeps the first below UV_THREADPOOL_SIZE', () => {
    expect(validateEnv({})).toMatchObject({ MEDIA_PROCESS_CONCURRENCY: 2, MEDIA_PROCESS_TIMEOUT_MS: 10_000 });
    expect(AppConfig.fromEnv({ MEDIA_PROCESS_CONCURRENCY: '3', MEDIA_PROCESS_TIMEOUT_MS: '5000' }, () => 1024).media).toMatchObject({
      processConcurrency: 3,
      processTimeoutMs: 5000,
    });
    expect(refusal({ MEDIA_PROCESS_CONCURRENCY: '4' }).message).toContain(
      'MEDIA_PROCESS_CONCURRENCY=4: MEDIA_PROCESS_CONCURRENCY must be below the libuv thread pool size (UV_THREADPOOL_SIZE, 4)',
    );
    expect(validateEnv({ MEDIA_PROCESS_CONCURRENCY: '7', UV_THREADPOOL_SIZE: '8' }).MEDIA_PROCESS_CONCURRENCY).toBe(7);
    expect(refusal({ MEDIA_PROCESS_CONCURRENCY: '8', UV_THREADPOOL_SIZE: '8' }).message).toContain('(UV_THREADPOOL_SIZE, 8)');
    for (const bad of ['0', '65', 'two'])
      expect(refusal({ MEDIA_PROCESS_CONCURRENCY: bad, UV_THREADPOOL_SIZE: '128' }).message).toContain('MEDIA_PROCESS_CONCURRENCY');
    for (const bad of ['999', '600001', 'soon']) expect(refusal({ MEDIA_PROCESS_TIMEOUT_MS: bad }).message).toContain('MEDIA_PROCESS_TIMEOUT_MS');
  });

  it('reads MEDIA_SWEEP_INTERVAL_MS (6 h, 0 never, else at least 1 s) and MEDIA_SWEEP_MIN_AGE_MS (a day, at least MEDIA_RELEASE_DELAY_MS)', () => {
    expect(AppConfig.fromEnv({}).media).toMatchObject({ sweepIntervalMs: 21_600_000, sweepMinAgeMs: 86_400_000 });
    expect(AppConfig.fromEnv({ MEDIA_SWEEP_INTERVAL_MS: '0', MEDIA_SWEEP_MIN_AGE_MS: '600000' }).media).toMatchObject({
      sweepIntervalMs: 0,
      sweepMinAgeMs: 600_000,
    });
    expect(refusal({ MEDIA_SWEEP_INTERVAL_MS: '999' }).message).toContain(
      'MEDIA_SWEEP_INTERVAL_MS=999: MEDIA_SWEEP_INTERVAL_MS must be 0 (never) or at least 1000',
    );
    for (const bad of ['-1', '604800001', 'daily']) expect(refusal({ MEDIA_SWEEP_INTERVAL_MS: bad }).message).toContain('MEDIA_SWEEP_INTERVAL_MS');
    for (const bad of ['999', '2592000001', 'a day']) expect(refusal({ MEDIA_SWEEP_MIN_AGE_MS: bad }).message).toContain('MEDIA_SWEEP_MIN_AGE_MS');
    expect(refusal({ MEDIA_SWEEP_MIN_AGE_MS: '599999' }).message).toContain(
      'MEDIA_SWEEP_MIN_AGE_MS=599999: MEDIA_SWEEP_MIN_AGE_MS must be at least MEDIA_RELEASE_DELAY_MS (600000)',
    );
    expect(validateEnv({ MEDIA_SWEEP_MIN_AGE_MS: '5000', MEDIA_RELEASE_DELAY_MS: '5000' }).MEDIA_SWEEP_MIN_AGE_MS).toBe(5000);
  });

  it('MEDIA_ALLOWED_HOSTS and WEBHOOK_ALLOWED_HOSTS: host names, IP addresses and CIDR ranges; anything else refused, naming it', () => {
    const list = ' images.internal, IMG-1.example.com., 10.0.0.7, [::1], fd12:3456::/32, 10.20.0.0/16 ,';
    expect(validateEnv({ MEDIA_ALLOWED_HOSTS: list, WEBHOOK_ALLOWED_HOSTS: 'hooks.internal' })).toMatchObject({ MEDIA_ALLOWED_HOSTS: list });
    for (const name of ['MEDIA_ALLOWED_HOSTS', 'WEBHOOK_ALLOWED_HOSTS']) {
      for (const bad of ['-7zz!', 'images.internal, 10.0.0.0/33', 'http://images.internal', 'a b', '-leading.example', 'x'.repeat(64) + '.example']) {
        const message = refusal({ [name]: bad }).message;
        expect(message).toContain(name);
        expect(message).toMatch(/must be comma-separated host names, IP addresses and CIDR ranges/);
      }
      expect(refusal({ [name]: 'ok.example,-7zz!' }).message).toContain("not: '-7zz!'");
    }
  });

  it('refuses a boolean it cannot read', () => {
    expect(refusal({ MEDIA_ALLOW_PRIVATE_HOSTS: 'maybe' }).message).toContain('MEDIA_ALLOW_PRIVATE_HOSTS');
  });

  it('reports several errors together', () => {
    const err = refusal({ PORT: 'abc', DB_TYPE: 'postgres', DB_NAME: 'bad-name!', LOG_LEVEL: 'loud', REDIS_URL: 'http://x' });
    for (const name of ['PORT', 'DB_TYPE', 'DB_NAME', 'LOG_LEVEL', 'REDIS_URL']) expect(err.message).toContain(name);
    expect(err.message.split('\n').filter((l) => l.startsWith('  - '))).toHaveLength(5);
  });

  it('never prints the credentials of a refused URL setting', () => {
    const err = refusal({ REDIS_URL: 'http://admin:r3d1s-pw@cache:6379', PUBLIC_BASE_URL: 'ftp://u:base-pw@x' });
    expect(err.message).toContain('REDIS_URL="http://***@cache:6379"');
    expect(err.message).not.toMatch(/r3d1s-pw|base-pw|admin/);
  });

  it('never prints the DB_PASSWORD value', () => {
    const withOtherError = refusal({ DB_PASSWORD: 's3cr3t-Pa55', PORT: 'abc' });
    expect(withOtherError.message).not.toContain('s3cr3t-Pa55');

    const invalidPassword = refusal({ DB_PASSWORD: 987654321 });
    expect(invalidPassword.message).toContain('DB_PASSWORD');
    expect(invalidPassword.message).not.toContain('987654321');
  });

  it('READY_REQUIRES_REDIS: true by default, false taken, anything else refused', () => {
    expect(AppConfig.fromEnv({}).redis.requiredForReadiness).toBe(true);
    expect(AppConfig.fromEnv({ READY_REQUIRES_REDIS: 'false' }).redis.requiredForReadiness).toBe(false);
    expect(refusal({ READY_REQUIRES_REDIS: 'maybe' }).message).toContain('READY_REQUIRES_REDIS');
  });

  it('LOG_FORMAT: auto, json or text; anything else refused', () => {
    expect(validateEnv({}).LOG_FORMAT).toBe('auto');
    expect(validateEnv({ LOG_FORMAT: 'json' }).LOG_FORMAT).toBe('json');
    expect(refusal({ LOG_FORMAT: 'pretty' }).message).toContain('LOG_FORMAT');
  });

  it('METRICS_TOKEN: empty is unset; a short one is refused without printing it', () => {
    expect(validateEnv({ METRICS_TOKEN: '' }).METRICS_TOKEN).toBeUndefined();
    expect(validateEnv({ METRICS_TOKEN: 'a-long-enough-metrics-token' }).METRICS_TOKEN).toBe('a-long-enough-metrics-token');
    const err = refusal({ METRICS_TOKEN: 'short-tok' });
    expect(err.message).toContain('METRICS_TOKEN');
    expect(err.message).not.toContain('short-tok');
  });
});
