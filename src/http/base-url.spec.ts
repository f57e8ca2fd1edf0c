import { AppConfig } from '../config/app-config';
import { AdmittedBases, KEPT_BASES, NEW_BASES_PER_MINUTE, requestBaseUrl } from './base-url';

describe('the base URL of links in answers', () => {
  it('PUBLIC_BASE_URL is used whatever the Host', () => {
    const config = AppConfig.fromEnv({ PUBLIC_BASE_URL: 'https://shop.example.com', DATA_DIR: '/tmp/x' });
    for (let i = 0; i < NEW_BASES_PER_MINUTE * 3; i += 1) expect(requestBaseUrl(config, 'http', `h${i}.example`)).toBe('https://shop.example.com');
  });

  it(`without it, the Host as sent (lower-cased) until ${NEW_BASES_PER_MINUTE} new ones a minute; then the node's own base for new ones, while admitted ones stay`, () => {
    const config = AppConfig.fromEnv({ PORT: '4321', DATA_DIR: '/tmp/x' });
    expect(requestBaseUrl(config, 'https', 'Shop.Example.com:8443')).toBe('https://shop.example.com:8443');
    for (let i = 1; i < NEW_BASES_PER_MINUTE; i += 1) expect(requestBaseUrl(config, 'http', `h${i}.example`)).toBe(`http://h${i}.example`);
    expect(requestBaseUrl(config, 'http', 'one-too-many.example')).toBe('http://localhost:4321');
    expect(requestBaseUrl(config, 'https', 'shop.example.com:8443')).toBe('https://shop.example.com:8443');
    expect(requestBaseUrl(config, 'http', 'h5.example')).toBe('http://h5.example');
    expect(requestBaseUrl(config, 'http', undefined)).toBe('http://localhost:4321');
    // Another app (another configuration) counts its own.
    expect(requestBaseUrl(AppConfig.fromEnv({ DATA_DIR: '/tmp/x' }), 'http', 'one-too-many.example')).toBe('http://one-too-many.example');
  });

  it("a Host that is no host name or address, or a scheme other than http and https, gets the node's own base", () => {
    const config = AppConfig.fromEnv({ PORT: '4321', DATA_DIR: '/tmp/x' });
    for (const host of ['"><script>', 'a b.example', 'shop.example.com/path', 'user@shop.example', 'shop.example:80:80', '[::1', 'shop.example:port', '']) {
      expect(requestBaseUrl(config, 'http', host)).toBe('http://localhost:4321');
    }
    expect(requestBaseUrl(config, 'javascript', 'shop.example.com')).toBe('http://localhost:4321');
    for (const host of ['shop.example.com', 'SHOP.example.com.', '127.0.0.1:8080', '[::1]:3000', '[2001:db8::1]', 'my_host.internal']) {
      expect(requestBaseUrl(config, 'https', host)).toBe(`https://${host.toLowerCase()}`);
    }
  });

  it('a Host naming the port the connection came in on counts as its host name alone; another port is another base', () => {
    const config = AppConfig.fromEnv({ PORT: '4321', DATA_DIR: '/tmp/x' });
    for (let port = 40_000; port < 40_000 + NEW_BASES_PER_MINUTE * 2; port += 1) {
      expect(requestBaseUrl(config, 'http', `127.0.0.1:${port}`, port)).toBe(`http://127.0.0.1:${port}`);
    }
    for (let i = 1; i < NEW_BASES_PER_MINUTE; i += 1) expect(requestBaseUrl(config, 'http', `127.0.0.1:${i}`, 3000)).toBe(`http://127.0.0.1:${i}`);
    expect(requestBaseUrl(config, 'http', '127.0.0.1:9999', 3000)).toBe('http://localhost:4321');
    expect(requestBaseUrl(config, 'http', '127.0.0.1:50000', 50000)).toBe('http://127.0.0.1:50000');
  });

  it('the budget is per minute, and the most recently used bases are kept', () => {
    const bases = new AdmittedBases();
    let now = 1_000_000;
    for (let i = 0; i < NEW_BASES_PER_MINUTE; i += 1) expect(bases.admit(`http://a${i}`, now)).toBe(true);
    expect(bases.admit('http://late', now + 59_999)).toBe(false);
    now += 60_000;
    expect(bases.admit('http://late', now)).toBe(true);
    // Fill the kept list over many minutes while one base keeps being used: it stays; an unused one goes.
    for (let i = 0; i < KEPT_BASES * 2; i += 1) {
      if (i % NEW_BASES_PER_MINUTE === 0) now += 60_000;
      expect(bases.admit(`http://b${i}`, now)).toBe(true);
      expect(bases.admit('http://a1', now)).toBe(true);
    }
    now += 60_000;
    for (let i = 0; i < NEW_BASES_PER_MINUTE; i += 1) bases.admit(`http://c${i}`, now);
    expect(bases.admit('http://a1', now)).toBe(true);
    expect(bases.admit('http://a2', now)).toBe(false);
  });
});
