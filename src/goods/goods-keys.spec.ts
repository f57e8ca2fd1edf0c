import { createHash } from 'node:crypto';
import { buildSearchText, keyHash, normalizeForSearch } from './goods-keys';

describe('keyHash', () => {
  it('is the sha256 hex digest of the UTF-8 key', () => {
    expect(keyHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(keyHash('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('is stable across calls and always 64 lower-case hex characters', () => {
    for (const key of ['SW-7', '상품-001', 'https://shop.example.com/goods/1?x=y', '😀']) {
      expect(keyHash(key)).toBe(keyHash(key));
      expect(keyHash(key)).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('is the digest of the key as UTF-8 bytes, as the stored hashes were made (lone surrogates included)', () => {
    for (const key of ['SW-7', '상품-001', '😀', 'a\ud800b', '\udfff', 'x'.repeat(255), 'https://shop.example.com/goods/1?x=y#z']) {
      expect(keyHash(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
    }
  });

  it('is case-sensitive and tells different keys apart', () => {
    expect(keyHash('SKU-a')).not.toBe(keyHash('SKU-A'));
    expect(keyHash('https://Shop.example.com/a')).not.toBe(keyHash('https://shop.example.com/a'));
    expect(keyHash('a ')).not.toBe(keyHash('a'));
  });
});

describe('normalizeForSearch', () => {
  it('lower-cases', () => {
    expect(normalizeForSearch('Smart WATCH')).toBe('smart watch');
  });

  it('NFKC-normalises: decomposed Hangul (NFD) equals composed', () => {
    const composed = '스마트 워치';
    const decomposed = composed.normalize('NFD');
    expect(decomposed).not.toBe(composed);
    expect(normalizeForSearch(decomposed)).toBe(composed);
    expect(normalizeForSearch(decomposed)).toBe(normalizeForSearch(composed));
  });

  it('folds compatibility forms (full-width letters, unit symbols)', () => {
    expect(normalizeForSearch('ＡＢＣ１２３')).toBe('abc123');
    expect(normalizeForSearch('㎒')).toBe('mhz');
    expect(normalizeForSearch('ﬁne')).toBe('fine');
  });
});

describe('buildSearchText', () => {
  it('joins normalised name, brand and sku, one per line', () => {
    expect(buildSearchText('Smart Watch', 'SampleTech', 'SW-7')).toBe('smart watch\nsampletech\nsw-7');
  });

  it('uses an empty line for a missing brand', () => {
    expect(buildSearchText('Name', null, 'SKU')).toBe('name\n\nsku');
    expect(buildSearchText('Name', undefined, 'SKU')).toBe('name\n\nsku');
  });

  it('normalises every part', () => {
    const text = buildSearchText('워치'.normalize('NFD'), 'ＢＲＡＮＤ', 'Ab-1');
    expect(text).toBe('워치\nbrand\nab-1');
    expect(text.includes(normalizeForSearch('워치'))).toBe(true);
  });
});
