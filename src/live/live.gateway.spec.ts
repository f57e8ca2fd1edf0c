import { sinceSeqOf } from './live.gateway';

describe('sinceSeqOf (the resync body)', () => {
  it('takes a non-negative integer', () => {
    expect(sinceSeqOf({ sinceSeq: 0 })).toBe(0);
    expect(sinceSeqOf({ sinceSeq: 41 })).toBe(41);
    expect(sinceSeqOf({ sinceSeq: Number.MAX_SAFE_INTEGER })).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses anything else instead of coercing it', () => {
    for (const sinceSeq of [-1, 1.5, NaN, Infinity, Number.MAX_SAFE_INTEGER + 1, '5', '', null, true, false, [], [3], {}, undefined]) {
      expect(sinceSeqOf({ sinceSeq })).toBeNull();
    }
    for (const body of [null, undefined, 5, 'abc', [], [{ sinceSeq: 1 }]]) expect(sinceSeqOf(body)).toBeNull();
  });
});
