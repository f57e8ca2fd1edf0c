import http from 'node:http';
import net, { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { AppConfig } from '../config/app-config';
import { AddressPolicy } from '../media/address-policy';
import { ResolveAll, targetRefusal, WebhookSender } from './webhook-sender';

/** A sender whose DNS answers every name with 127.0.0.1 (a name that now points at a private address). */
class RebindingSender extends WebhookSender {
  protected override resolveAll: ResolveAll = (_hostname, _family, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }]);
}

describe('targetRefusal', () => {
  const strict = new AddressPolicy(false);
  const open = new AddressPolicy(true);

  it.each([
    ['https://shop.example.com/hooks', null],
    ['https://93.184.215.14/hook', null],
    ['http://shop.example.com/hooks', 'url must be an https URL'],
    ['ftp://shop.example.com/hooks', 'url must be an https URL'],
    ['https://user:pw@shop.example.com/hooks', 'url may not carry credentials'],
    ['https://127.0.0.1/hook', 'url may not point at a loopback address'],
    ['https://localhost:8443/hook', 'url may not point at a loopback address'],
    ['https://localhost./hook', 'url may not point at a loopback address'],
    ['https://api.localhost../hook', 'url may not point at a loopback address'],
    ['https://shop.example.com./hooks', null],
    ['https://10.0.0.5/hook', 'url may not point at a private address'],
    ['https://169.254.169.254/latest', 'url may not point at a link-local address'],
    ['https://[::1]/hook', 'url may not point at a loopback address'],
    ['https://[::ffff:10.0.0.1]/hook', 'url may not point at a private address'],
    ['not a url', 'url must be an absolute URL'],
  ])('%s → %p (private hosts not allowed)', (url, why) => {
    expect(targetRefusal(url, strict, false)).toBe(why);
  });

  it('allows http and private addresses where private hosts are allowed', () => {
    expect(targetRefusal('http://127.0.0.1:8080/hook', open, true)).toBeNull();
    expect(targetRefusal('https://localhost/hook', open, true)).toBeNull();
    expect(targetRefusal('ftp://127.0.0.1/hook', open, true)).toBe('url must be an http or https URL');
    // The cloud metadata service stays closed.
    expect(targetRefusal('http://169.254.169.254/latest', open, true)).toMatch(/^url may not point at a link-local address/);
    expect(targetRefusal('http://100.100.100.200/latest', open, true)).toMatch(/^url may not point at a cloud metadata address/);
  });

  it('lets an allow-listed private range through, still https only', () => {
    const listed = new AddressPolicy(false, ['10.20.0.0/16']);
    expect(targetRefusal('https://10.20.1.2/hook', listed, false)).toBeNull();
    expect(targetRefusal('https://10.21.1.2/hook', listed, false)).toBe('url may not point at a private address');
    expect(targetRefusal('http://10.20.1.2/hook', listed, false)).toBe('url must be an https URL');
  });
});

describe('WebhookSender', () => {
  let server: http.Server;
  let base = '';
  const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        if (req.url === '/ok') res.writeHead(204).end();
        else if (req.url === '/redirect') res.writeHead(302, { location: '/ok' }).end();
        else if (req.url === '/error') res.writeHead(500).end('nope');
        // '/hang': never answered
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const sender = (env: Record<string, string> = {}) =>
    new WebhookSender(AppConfig.fromEnv({ DATA_DIR: tmpdir(), WEBHOOK_ALLOW_PRIVATE_HOSTS: 'true', WEBHOOK_TIMEOUT_MS: '300', ...env }));

  it('POSTs the body with the given headers; 2xx is delivered', async () => {
    const s = sender();
    const outcome = await s.send(`${base}/ok`, { 'Livegoods-Event-Id': 'evt_1' }, '{"a":1}');
    s.onApplicationShutdown();
    expect(outcome).toMatchObject({ statusCode: 204, error: null });
    const last = seen[seen.length - 1];
    expect(last.body).toBe('{"a":1}');
    expect(last.headers['livegoods-event-id']).toBe('evt_1');
    expect(last.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('does not follow a redirect, and reports other statuses', async () => {
    const s = sender();
    const before = seen.length;
    expect(await s.send(`${base}/redirect`, {}, '{}')).toMatchObject({ statusCode: 302, error: 'HTTP 302 (redirects are not followed)' });
    expect(seen.length).toBe(before + 1);
    expect(await s.send(`${base}/error`, {}, '{}')).toMatchObject({ statusCode: 500, error: 'HTTP 500' });
    s.onApplicationShutdown();
  });

  it('gives up on a receiver that does not answer within WEBHOOK_TIMEOUT_MS', async () => {
    const s = sender();
    expect(await s.send(`${base}/hang`, {}, '{}')).toMatchObject({ statusCode: null, error: 'no answer within 300 ms' });
    s.onApplicationShutdown();
  });

  it('checks the addresses a name resolves to at send time: a name now pointing at loopback is refused', async () => {
    const config = AppConfig.fromEnv({ DATA_DIR: tmpdir(), WEBHOOK_TIMEOUT_MS: '300' });
    const s = new RebindingSender(config);
    const before = seen.length;
    const port = new URL(base).port;
    const outcome = await s.send(`https://hooks.example.com:${port}/ok`, {}, '{}');
    expect(outcome).toMatchObject({ statusCode: null, error: 'refused: hooks.example.com resolves to a loopback address (127.0.0.1)' });
    expect(seen.length).toBe(before);
    s.onApplicationShutdown();
  });

  it('sends once more at once on a new connection when the receiver closed a kept-alive one just as it was reused', async () => {
    // A raw receiver: answers the first request of a connection (keeping it open), drops any later one.
    let connections = 0;
    let answered = 0;
    const raw = net.createServer((socket) => {
      connections += 1;
      let requests = 0;
      socket.on('data', () => {
        requests += 1;
        if (requests > 1) return void socket.destroy();
        answered += 1;
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n');
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/hook`;
    const s = sender();
    try {
      expect(await s.send(url, {}, '{}')).toMatchObject({ statusCode: 200, error: null });
      expect(await s.send(url, {}, '{}')).toMatchObject({ statusCode: 200, error: null });
      expect(answered).toBe(2);
      expect(connections).toBe(2);
    } finally {
      s.onApplicationShutdown();
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  it('closes the connection of a receiver that trickles its answer after the status, long before WEBHOOK_TIMEOUT_MS', async () => {
    // A raw receiver: a 200 whose announced body comes a byte at a time, never all of it.
    let trickle: NodeJS.Timeout | undefined;
    let closed!: () => void;
    const socketClosed = new Promise<void>((resolve) => (closed = resolve));
    const raw = net.createServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: keep-alive\r\n\r\n');
        trickle = setInterval(() => socket.write('x'), 100);
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(trickle);
        closed();
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const s = sender({ WEBHOOK_TIMEOUT_MS: '60000' });
    try {
      const outcome = await s.send(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/hook`, {}, '{}');
      expect(outcome).toMatchObject({ statusCode: 200, error: null });
      // Held for the whole timeout (60 s), the socket would still be open when this gives up.
      let guard: NodeJS.Timeout | undefined;
      const outcomeOfWait = await Promise.race([
        socketClosed.then(() => 'closed'),
        new Promise<string>((resolve) => (guard = setTimeout(() => resolve('still open'), 8000))),
      ]);
      clearTimeout(guard);
      expect(outcomeOfWait).toBe('closed');
    } finally {
      clearInterval(trickle);
      s.onApplicationShutdown();
      await new Promise((resolve) => raw.close(resolve));
    }
  }, 15_000);

  it('refuses a loopback target when private hosts are not allowed, without connecting', async () => {
    const s = sender({ WEBHOOK_ALLOW_PRIVATE_HOSTS: 'false' });
    const before = seen.length;
    const outcome = await s.send(`${base.replace('http:', 'https:')}/ok`, {}, '{}');
    expect(outcome.error).toBe('refused: url may not point at a loopback address');
    expect(seen.length).toBe(before);
    s.onApplicationShutdown();
  });
});
