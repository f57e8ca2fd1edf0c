import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppConfig } from './app-config';
import { DERIVED_MAX_CONNECTIONS_CEILING, FALLBACK_MAX_CONNECTIONS, maxConnectionsFor, openFileLimit } from './connection-limits';
import { ConfigValidationError, validateEnv } from './env.validation';

function refusal(raw: Record<string, unknown>): string {
  try {
    validateEnv(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigValidationError);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                40000                files
Max locked memory         8388608              8388608              bytes
`;

describe('open-file limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'limits-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  it('reads the soft limit of /proc/self/limits', () => {
    expect(openFileLimit(file('a', LIMITS))).toBe(20000);
    expect(openFileLimit(file('b', LIMITS.replace('20000  ', 'unlimited')))).toBe(Infinity);
    expect(openFileLimit(join(dir, 'missing'))).toBeUndefined();
    expect(openFileLimit(file('c', 'nothing here'))).toBeUndefined();
  });

  it('this process has one on Linux', () => {
    if (process.platform === 'linux') expect(openFileLimit()).toBeGreaterThan(0);
  });

  it.each([
    [20000, 18000],
    [40000, 36000],
    [1024, 768],
    [256, 128],
    [1_048_576, DERIVED_MAX_CONNECTIONS_CEILING],
    [Infinity, DERIVED_MAX_CONNECTIONS_CEILING],
    [undefined, FALLBACK_MAX_CONNECTIONS],
  ])('MAX_CONNECTIONS for an open-file limit of %p is %p', (limit, expected) => {
    expect(maxConnectionsFor(limit)).toBe(expected);
  });
});

describe('connection settings', () => {
  it('defaults: MAX_CONNECTIONS from the open-file limit, 1000 per IP, 10 s headers, 10 min requests, 60 s sends, 10 s to join /live', () => {
    expect(validateEnv({})).toMatchObject({
      HEADERS_TIMEOUT_MS: 10_000,
      REQUEST_TIMEOUT_MS: 600_000,
      SEND_TIMEOUT_MS: 60_000,
      LIVE_CONNECT_TIMEOUT_MS: 10_000,
    });
    expect(validateEnv({}).MAX_CONNECTIONS).toBeUndefined();
    const { server } = AppConfig.fromEnv({}, () => 20000);
    expect(server).toMatchObject({
      maxConnections: 18000,
      maxConnectionsPerIp: 1000,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 600_000,
      sendTimeoutMs: 60_000,
      liveConnectTimeoutMs: 10_000,
    });
    expect(AppConfig.fromEnv({}, () => undefined).server.maxConnections).toBe(FALLBACK_MAX_CONNECTIONS);
  });

  it('behind a trusted proxy the per-IP cap is off unless set (every connection comes from the proxy)', () => {
    expect(AppConfig.fromEnv({ TRUST_PROXY: 'true' }).server.maxConnectionsPerIp).toBe(0);
    expect(AppConfig.fromEnv({ TRUST_PROXY: 'true', MAX_CONNECTIONS_PER_IP: '5000' }).server.maxConnectionsPerIp).toBe(5000);
  });

  it('reads set values; empty means the derived default', () => {
    const { server } = AppConfig.fromEnv(
      {
        MAX_CONNECTIONS: ' 5000 ',
        MAX_CONNECTIONS_PER_IP: '0',
        HEADERS_TIMEOUT_MS: '15000',
        REQUEST_TIMEOUT_MS: '0',
        SEND_TIMEOUT_MS: '0',
        LIVE_CONNECT_TIMEOUT_MS: '2000',
      },
      () => 20000,
    );
    expect(server).toMatchObject({
      maxConnections: 5000,
      maxConnectionsPerIp: 0,
      headersTimeoutMs: 15000,
      requestTimeoutMs: 0,
      sendTimeoutMs: 0,
      liveConnectTimeoutMs: 2000,
    });
    expect(AppConfig.fromEnv({ SEND_TIMEOUT_MS: '1000' }, () => 20000).server.sendTimeoutMs).toBe(1000);
    expect(AppConfig.fromEnv({ MAX_CONNECTIONS: '', MAX_CONNECTIONS_PER_IP: ' ' }, () => 20000).server).toMatchObject({
      maxConnections: 18000,
      maxConnectionsPerIp: 1000,
    });
  });

  it.each([
    ['MAX_CONNECTIONS', '0'],
    ['MAX_CONNECTIONS', 'many'],
    ['MAX_CONNECTIONS', '1.5'],
    ['MAX_CONNECTIONS_PER_IP', '-1'],
    ['MAX_CONNECTIONS_PER_IP', 'lots'],
    ['HEADERS_TIMEOUT_MS', '999'],
    ['HEADERS_TIMEOUT_MS', '300001'],
    ['REQUEST_TIMEOUT_MS', '-1'],
    ['SEND_TIMEOUT_MS', '-1'],
    ['SEND_TIMEOUT_MS', '999'],
    ['SEND_TIMEOUT_MS', 'a minute'],
    ['LIVE_CONNECT_TIMEOUT_MS', '500'],
    ['LIVE_CONNECT_TIMEOUT_MS', 'soon'],
  ])('refuses %s=%p naming it', (name, value) => {
    expect(refusal({ [name]: value })).toContain(name);
  });

  it('refuses a request deadline shorter than the headers deadline (0, no limit, is fine)', () => {
    const message = refusal({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '15000' });
    expect(message).toContain('REQUEST_TIMEOUT_MS=15000');
    expect(message).toContain('at least HEADERS_TIMEOUT_MS (20000)');
    expect(validateEnv({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '0' }).REQUEST_TIMEOUT_MS).toBe(0);
    expect(validateEnv({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '20000' }).REQUEST_TIMEOUT_MS).toBe(20000);
  });
});
