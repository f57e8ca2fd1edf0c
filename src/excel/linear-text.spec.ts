import { isDeepStrictEqual } from 'node:util';
import { NUMERIC_TEXT } from '../common/validation/decorators';
import { redactCredentials } from '../common/util/redact';
import { withoutTrailing } from '../common/util/text';
import { parseDuration } from '../common/util/duration';
import { normalizeHeader } from './goods-sheet.columns';
import { fieldValue } from './goods-sheet.parser';
import { firstSheetPath } from './xlsx-archive';
import { isPercentFormat } from './xlsx-rows';

/**
 * The text handling that replaced regular expressions of more than linear time (lint's
 * regexp/no-super-linear-backtracking and no-super-linear-move keep new ones out) gives what those
 * expressions gave: each rewrite is compared with the expression it replaced on thousands of short
 * texts made of the characters that matter to it (short enough for the old expression to be quick),
 * and the inputs that took the old expressions seconds are answered.
 */

/** A small deterministic generator (mulberry32), so a failure names a text that can be tried again. */
function randomTexts(alphabet: string[], count: number, maxLength: number, seed: number): string[] {
  let state = seed;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const texts: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const length = Math.floor(next() * (maxLength + 1));
    let text = '';
    for (let j = 0; j < length; j += 1) text += alphabet[Math.floor(next() * alphabet.length)];
    texts.push(text);
  }
  return texts;
}

/** The texts for which `now` and `before` disagree, with both answers (none, when the rewrite is faithful). */
function disagreements<T>(texts: string[], now: (text: string) => T, before: (text: string) => T): Array<[string, T, T]> {
  const found: Array<[string, T, T]> = [];
  for (const text of texts) {
    const a = now(text);
    const b = before(text);
    if (!isDeepStrictEqual(a, b)) found.push([text, a, b]);
  }
  return found;
}

const BLANKS = [' ', '\t', '\n', '\u3000', '\u00a0'];

describe('linear text handling gives what the regular expressions it replaced gave', () => {
  it('normalizeHeader: a trailing (note) or [note] and required marks go', () => {
    const old = (text: string) =>
      text
        .normalize('NFKC')
        .toLowerCase()
        .replace(/\s*[([][^)\]]*[)\]]\s*$/u, '')
        .replace(/\*+\s*$/u, '')
        .replace(/[\s_-]+/gu, '');
    const texts = randomTexts(['a', '가', '(', ')', '[', ']', '*', '_', '-', ...BLANKS], 20_000, 12, 1);
    texts.push('상품명 (필수)', 'price (KRW)', 'name*', 'name *  ', 'a (b) (c)', 'a (b] c)', 'a ( ) ', ' (x)', '(x)', '**', 'a[b(c)');
    expect(disagreements(texts, normalizeHeader, old)).toEqual([]);
  });

  it('amounts: currency marks before and after, grouped or plain digits, a percent sign', () => {
    const oldCurrency = /^(?:[₩￦$€£¥]|[A-Z]{3}(?=[\s\d]))\s*|\s*(?:원|[₩￦$€£¥]|[A-Z]{3})$/gu;
    const oldPlain = /^-?(?:\d+\.?\d*|\.\d+)$/;
    const oldAmount = (text: string) => {
      const bare = text.trim().replace(oldCurrency, '').trim();
      if (/^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(bare)) return bare.replace(/,/g, '');
      return oldPlain.test(bare) ? bare : undefined;
    };
    const oldField = (percent: boolean, value: string) => {
      if (value.trim() === '') return undefined;
      const m = percent ? /^(.*?)\s*%$/u.exec(value.trim()) : null;
      return oldAmount(m ? m[1] : value) ?? value;
    };
    const texts = randomTexts(['1', '0', '.', ',', '-', '%', '$', '₩', '원', 'K', 'R', 'W', 'x', ' ', '\n'], 30_000, 10, 2);
    texts.push('₩39,000', '39,000원', 'KRW 39000', '$1,234.50', 'USD5', '5 USD', '$', '$$', 'KRW 5 KRW', '12.5 %', '12\n%', '1\n2%', '.5', '5.', '-0.5%');
    expect(
      disagreements(
        texts,
        (text) => fieldValue('originalPrice', { value: text }),
        (text) => oldField(false, text),
      ),
    ).toEqual([]);
    expect(
      disagreements(
        texts,
        (text) => fieldValue('discountPercentage', { value: text }),
        (text) => oldField(true, text),
      ),
    ).toEqual([]);
  });

  it('isPercentFormat: a % outside quoted text, [brackets] and escapes', () => {
    const old = (format: string) => format.replace(/"[^"]*"|\[[^\]]*]|\\./g, '').includes('%');
    const texts = randomTexts(['%', '"', '[', ']', '\\', '0', '\n'], 30_000, 10, 3);
    texts.push('0%', '0.00%', '"%"0', '[%]0', '\\%0', '[Red]0.0%', '"a"%', '[', '"');
    expect(disagreements(texts, isPercentFormat, old)).toEqual([]);
  });

  it('numeric text, trailing characters, durations and redacted URLs', () => {
    const oldNumeric = /^\s*-?(\d+\.?\d*|\.\d+)\s*$/;
    const numbers = randomTexts(['1', '0', '.', '-', ' ', 'e', '\t'], 20_000, 8, 4);
    expect(
      disagreements(
        numbers,
        (text) => NUMERIC_TEXT.test(text),
        (text) => oldNumeric.test(text),
      ),
    ).toEqual([]);
    const runs = randomTexts(['/', '0', 'a'], 5_000, 8, 5);
    expect(
      disagreements(
        runs,
        (text) => withoutTrailing(text, '/'),
        (text) => text.replace(/\/+$/, ''),
      ),
    ).toEqual([]);
    expect(
      disagreements(
        runs,
        (text) => withoutTrailing(text, '0'),
        (text) => text.replace(/0+$/, ''),
      ),
    ).toEqual([]);
    const oldDuration = (text: string) => /^\s*(\d{1,12})\s*([smhd]?)\s*$/i.exec(text);
    const durations = randomTexts(['1', 's', 'M', 'x', ' ', '\t'], 5_000, 6, 6);
    expect(
      disagreements(
        durations,
        (text) => parseDuration(text) === undefined,
        (text) => oldDuration(text) === null,
      ),
    ).toEqual([]);
    const oldUserinfo = /((?:\b[a-z][a-z0-9+.-]*:)?\/\/)[^/?#\s]*@/gi;
    const urls = randomTexts(['h', 't', 'p', ':', '/', '@', 'u', ' ', '?', '#', '+'], 20_000, 14, 7);
    urls.push('https://user:secret@cdn.example/a', 'http://u:p@ss@host/x', '//a//b@c', 'x://@', 'git+ssh://me@host');
    // (The query-parameter half of redactCredentials is unchanged, and idempotent on what the old half left.)
    expect(disagreements(urls, redactCredentials, (text) => redactCredentials(text.replace(oldUserinfo, '$1***@')))).toEqual([]);
  });

  it('firstSheetPath reads prefixed, single-quoted and entity-encoded attributes, and stops at a tag without its end', () => {
    const rels = `<Relationships xmlns="r"><Relationship Id="rId2" Target="x.xml"/><Relationship Target='/xl/a&amp;b.xml' Type = 't' Id = 'rId1' /></Relationships>`;
    const workbook = `<x:workbook xmlns:x="m"><x:workbookPr date1904="1"/><x:sheets><x:sheet name="A" sheetId="1" r:id="rId1"/><x:sheet r:id="rId2"/></x:sheets></x:workbook>`;
    expect(firstSheetPath(workbook, rels)).toBe('xl/a&b.xml');
    expect(firstSheetPath(`<workbook><sheet r:id="rId2"/><sheets></sheets></workbook>`, rels)).toBeUndefined();
    expect(firstSheetPath(`<workbook><sheets><sheet r:id="rId2"`, rels)).toBeUndefined();
    // What took seconds (quadratic) answers at once: tags that never end, attributes without values.
    expect(firstSheetPath(workbook, '<Relationship '.repeat(50_000))).toBeUndefined();
    expect(firstSheetPath('<sheets>'.repeat(10) + '<sheet '.repeat(50_000), rels)).toBeUndefined();
    expect(firstSheetPath(`<sheets><sheet ${'a'.repeat(300_000)} r:id="rId1"/></sheets>`, rels)).toBe('xl/a&b.xml');
    expect(firstSheetPath(`<sheets><sheet ${'a="'.repeat(100_000)}/></sheets>`, rels)).toBeUndefined();
  });
});
