import type { EntityManager } from 'typeorm';
import { CollationWeights } from './goods-search-corpus';

/**
 * CollationWeights#instr against MariaDB's INSTR semantics written out plainly: at each character
 * boundary of the text, the window that reaches the keyword's byte length is compared by its weights.
 * The weights here are made up (learnt from a fake server) so that every case the fast path must hand
 * over or get right occurs: equal weights of different byte lengths, one character weighing as two, an
 * ignorable character, two-unit weights, a supplementary character. test/search-exactness.e2e-spec.ts
 * holds the whole search to the real server's INSTR.
 */
const WEIGHTS: Record<string, number[]> = {
  a: [0x0e33],
  A: [0x0e33],
  ä: [0x0e33], // two bytes, weighs as `a`
  s: [0x0fea],
  ß: [0x0fea, 0x0fea], // weighs as `ss`
  x: [0x105a],
  ' ': [0x0209],
  '\n': [0x0202],
  '\u00ad': [], // ignorable (soft hyphen)
  한: [0xfbc1, 0xd55c], // three bytes, two weights
  '€': [0x0e1f], // three bytes, one weight
  '😀': [0xfffd], // supplementary
};
const CHARS = Object.keys(WEIGHTS);

/** Answers WEIGHT_STRING for the characters asked (as learn's query does), noting them in `asked`. */
function fakeServer(asked: string[] = []): EntityManager {
  const hex = (ch: string) => (WEIGHTS[ch] ?? []).map((w) => w.toString(16).padStart(4, '0').toUpperCase()).join('');
  return {
    query: (_sql: string, params: string[]) => {
      asked.push(...params);
      return Promise.resolve([Object.fromEntries(params.map((ch, i) => [`w${i}`, hex(ch)]))]);
    },
  } as unknown as EntityManager;
}

const fold = (text: string) => Array.from(text, (ch) => String.fromCharCode(...WEIGHTS[ch])).join('');

/** INSTR(text, keyword) > 0 as MariaDB computes it (see CollationWeights#instr). */
function reference(text: string, keyword: string): boolean {
  const chars = Array.from(text);
  const bytes = Buffer.byteLength(keyword, 'utf8');
  for (let p = 0; p < chars.length; p++) {
    let length = 0;
    let q = p;
    while (q < chars.length && length < bytes) length += Buffer.byteLength(chars[q++], 'utf8');
    if (length === bytes && fold(chars.slice(p, q).join('')) === fold(keyword)) return true;
  }
  return false;
}

/** A deterministic pseudo-random sequence (xorshift), so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

describe('CollationWeights#instr', () => {
  let weights: CollationWeights;
  beforeAll(async () => {
    weights = new CollationWeights();
    await weights.learn(fakeServer(), CHARS);
  });

  it('asks the server only for the characters it does not know yet, a supplementary one as one character', async () => {
    const fresh = new CollationWeights();
    const asked: string[] = [];
    await fresh.learn(fakeServer(asked), ['aA😀', 'a\u00ad한']);
    expect(asked.sort()).toEqual(['a', 'A', '😀', '\u00ad', '한'].sort());
    asked.length = 0;
    await fresh.learn(fakeServer(asked), ['한 😀', 'xa']);
    expect(asked.sort()).toEqual([' ', 'x']);
    expect(fresh.knows('a한 😀x\u00ad')).toBe(true);
    expect(fresh.fold('😀a')).toBe(fold('😀a'));
  });

  const instr = (text: string, keyword: string) => weights.instr(text, weights.fold(text), Buffer.byteLength(keyword, 'utf8'), weights.fold(keyword));

  it.each([
    ['a', 'A', true],
    ['xä', 'a', false], // `ä` weighs as `a` but takes two bytes
    ['xa', 'ä', false],
    ['xaa', 'ä', false],
    ['ß', 'ss', true], // two bytes each way
    ['ss', 'ß', true],
    ['sß', 'ss', true],
    ['ßs', 'sss', true],
    ['xs\u00ad', 'sa', false],
    ['s\u00ada', 'sa', false], // three bytes against two
    ['s\u00ada', 's\u00ada', true],
    ['\u00ads', 's', true],
    ['a\u00ad', 'a\u00ad', true],
    ['a\u00adx', 'a\u00ad', true],
    ['a한x', '한', true],
    ['a한x', '한x', true],
    ['€x', '€', true],
    ['€', 'aaa', false],
    ['😀 a', 'a', true],
    ['a\nx', 'a\nx', true],
  ])('%j holds %j: %s', (text, keyword, expected) => {
    expect(reference(text, keyword)).toBe(expected);
    expect(instr(text, keyword)).toBe(expected);
  });

  it('agrees with the plain window comparison on random texts and keywords', () => {
    const next = random(20261128);
    const pick = (length: number) => Array.from({ length }, () => CHARS[Math.floor(next() * CHARS.length)]).join('');
    let matches = 0;
    for (let n = 0; n < 20_000; n++) {
      // Keywords from a few characters of the alphabet, so that many of them match.
      const keyword = pick(1 + Math.floor(next() * 3));
      const text = pick(Math.floor(next() * 12));
      const expected = reference(text, keyword);
      if (instr(text, keyword) !== expected) throw new Error(`instr(${JSON.stringify(text)}, ${JSON.stringify(keyword)}) should be ${expected}`);
      if (expected) matches++;
    }
    expect(matches).toBeGreaterThan(1_000);
  });
});
