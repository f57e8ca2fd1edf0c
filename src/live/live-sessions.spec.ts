import { Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { compileProxyTrust } from '../common/util/proxy-trust';
import type { IncomingMessage } from 'node:http';
import type { AppConfig } from '../config/app-config';
import type { Metrics } from '../metrics/metrics.service';
import { clientIpOf, RateLimiter } from '../rate-limit/rate-limiter';
import { LiveSessionLimits, SESSIONS_PER_IP_LIMIT } from './live-sessions';

function requestFrom(remoteAddress: string, headers: Record<string, string> = {}): IncomingMessage {
  return { headers, socket: { remoteAddress, writable: true } } as unknown as IncomingMessage;
}

function setUp(cap: number, allowed = true) {
  const config = {
    server: { liveSessionsPerIp: cap, proxyTrust: compileProxyTrust(false), liveConnectTimeoutMs: 10_000 },
  } as unknown as AppConfig;
  const limiter = {
    hitIp: jest.fn(() => Promise.resolve({ allowed, retryAfterSeconds: 3 })),
    ipRefusal: (s: number) => `retry after ${s} s`,
  } as unknown as RateLimiter;
  const refused = { rate: 0, sessions: 0 };
  const metrics = {
    rateLimitRefusals: { inc: () => (refused.rate += 1) },
    connectionsRefused: { inc: ({ limit }: { limit: string }) => limit === SESSIONS_PER_IP_LIMIT && (refused.sessions += 1) },
  } as unknown as Metrics;
  const limits = new LiveSessionLimits(config, limiter, metrics);
  const engine = new EventEmitter();
  limits.attach(engine);
  const allow = (req: IncomingMessage) =>
    new Promise<{ err: string | null | undefined; success: boolean }>((resolve) => limits.allowRequest(req, (err, success) => resolve({ err, success })));
  /** An Engine.IO session opened for `req` (as Engine.IO's 'connection' event gives it). */
  const open = (req: IncomingMessage, readyState = 'open') => {
    const session = Object.assign(new EventEmitter(), { request: req, readyState });
    engine.emit('connection', session);
    return session;
  };
  return { limits, allow, open, refused, limiter };
}

const nextTurn = () => new Promise((r) => setImmediate(r));

/** A ServerResponse as far as a refusal uses it. */
function response() {
  const res: { headersSent: boolean; writeHead: jest.Mock; end: jest.Mock } = { headersSent: false, writeHead: jest.fn(), end: jest.fn() };
  res.writeHead.mockReturnValue(res);
  return res;
}

describe('LiveSessionLimits', () => {
  beforeAll(() => Logger.overrideLogger(false));
  it('holds a place from the handshake to the close of its session, and refuses past the cap', async () => {
    const { limits, allow, open, refused } = setUp(2);
    const a = requestFrom('203.0.113.5');
    const b = requestFrom('::ffff:203.0.113.5');
    expect((await allow(a)).success).toBe(true);
    expect((await allow(b)).success).toBe(true);
    const sessionA = open(a);
    open(b);
    await nextTurn();
    expect(limits.sessionsOf('203.0.113.5')).toBe(2);
    const res = response();
    const third = Object.assign(requestFrom('203.0.113.5'), { res });
    expect(await allow(third)).toEqual({ err: expect.stringMatching(/at most 2/), success: false });
    expect(res.writeHead).toHaveBeenCalledWith(429, expect.objectContaining({ 'Retry-After': '10' }));
    expect(refused.sessions).toBe(1);
    // Another address has its own places.
    expect((await allow(requestFrom('203.0.113.6'))).success).toBe(true);
    sessionA.emit('close');
    expect(limits.sessionsOf('203.0.113.5')).toBe(1);
    expect((await allow(requestFrom('203.0.113.5'))).success).toBe(true);
  });

  it('a handshake whose session never opens gives its place back; one that opens after that is counted then', async () => {
    const { limits, allow, open } = setUp(5);
    const req = requestFrom('198.51.100.1');
    await allow(req);
    expect(limits.sessionsOf('198.51.100.1')).toBe(1);
    await nextTurn();
    expect(limits.sessionsOf('198.51.100.1')).toBe(0);
    const late = open(req);
    expect(limits.sessionsOf('198.51.100.1')).toBe(1);
    late.emit('close');
    // A session already closed when it is announced holds nothing.
    const closed = requestFrom('198.51.100.1');
    await allow(closed);
    open(closed, 'closed');
    await nextTurn();
    expect(limits.sessionsOf('198.51.100.1')).toBe(0);
  });

  it('a handshake refused by the per-IP rate is answered 429 and counted as an ip refusal; with LIVE_SESSIONS_PER_IP=0 nothing is held', async () => {
    const limited = setUp(5, false);
    const res = response();
    expect(await limited.allow(Object.assign(requestFrom('192.0.2.1'), { res }))).toEqual({ err: 'retry after 3 s', success: false });
    expect(res.writeHead).toHaveBeenCalledWith(429, expect.objectContaining({ 'Retry-After': '3' }));
    expect(limited.refused.rate).toBe(1);
    const off = setUp(0);
    const req = requestFrom('192.0.2.2');
    expect((await off.allow(req)).success).toBe(true);
    off.open(req);
    expect(off.limits.sessionsOf('192.0.2.2')).toBe(0);
  });
});

describe('clientIpOf', () => {
  it("is the socket's address, or behind trusted proxies the address the outermost one forwarded (as Express's req.ip); IPv6 as its /64", () => {
    const req = requestFrom('10.0.0.1', { 'x-forwarded-for': '2001:db8:1:2::7, 10.0.0.9' });
    expect(clientIpOf(req, compileProxyTrust(false))).toBe('10.0.0.1');
    // One proxy (TRUST_PROXY=true): the entry it appended, the last one.
    expect(clientIpOf(req, compileProxyTrust(1))).toBe('10.0.0.9');
    expect(clientIpOf(req, compileProxyTrust(2))).toBe('2001:db8:1:2::/64');
    expect(clientIpOf(req, compileProxyTrust(['10.0.0.0/8']))).toBe('2001:db8:1:2::/64');
    expect(clientIpOf(requestFrom('::ffff:10.0.0.2'), compileProxyTrust(1))).toBe('10.0.0.2');
  });

  it('never takes what the client wrote into X-Forwarded-For itself for its address', () => {
    // The client sent `X-Forwarded-For: 203.0.113.1`; its proxy (10.0.0.1) appended the address it came from.
    const req = requestFrom('10.0.0.1', { 'x-forwarded-for': '203.0.113.1, 198.51.100.7' });
    expect(clientIpOf(req, compileProxyTrust(1))).toBe('198.51.100.7');
    expect(clientIpOf(req, compileProxyTrust(['loopback', '10.0.0.1']))).toBe('198.51.100.7');
  });
});
