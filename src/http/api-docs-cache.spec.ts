import { ApiDocsCache } from './api-docs-cache';

describe('ApiDocsCache', () => {
  it('keeps at most maxVariants base URLs, dropping the least recently asked', () => {
    const cache = new ApiDocsCache(2);
    cache.set('http://a', '/docs-json', '{"a":1}', 'application/json');
    cache.set('http://a', '/docs-yaml', 'a: 1', 'text/yaml; charset=utf-8');
    cache.set('http://b', '/docs-json', '{"b":1}', 'application/json');
    expect(cache.get('http://a', '/docs-json')).toBeDefined();
    cache.set('http://c', '/docs-json', '{"c":1}', 'application/json');
    expect(cache.variants).toBe(2);
    expect(cache.get('http://b', '/docs-json')).toBeUndefined();
    expect(cache.get('http://a', '/docs-yaml')?.body.toString()).toBe('a: 1');
    expect(cache.renders).toBe(4);
  });

  it('keeps the bytes with the type res.send gives a string and the ETag Express gives them', () => {
    const answer = new ApiDocsCache().set('http://a', '/docs-json', '{"é":1}', 'application/json');
    expect(answer.body.equals(Buffer.from('{"é":1}'))).toBe(true);
    expect(answer.type).toBe('application/json; charset=utf-8');
    expect(answer.etag).toMatch(/^W\/"8-[A-Za-z0-9+/]{27}"$/);
  });
});
