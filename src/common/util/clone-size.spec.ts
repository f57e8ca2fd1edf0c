import { cloneSize, groupsByCloneSize } from './clone-size';

describe('cloneSize', () => {
  it('counts strings by their length, keys too, and 8 for any other value, however nested', () => {
    expect(cloneSize('abc')).toBe(3);
    expect(cloneSize(12)).toBe(8);
    expect(cloneSize(null)).toBe(8);
    expect(cloneSize({ sku: 'x'.repeat(100), n: 1 })).toBe(3 + 100 + 1 + 8);
    expect(cloneSize([['ab'], { c: ['de', 3] }])).toBe(2 + 1 + 2 + 8);
  });
});

describe('groupsByCloneSize', () => {
  it('cuts a list into consecutive runs of at most maxBytes; an item bigger than that alone', () => {
    const items = ['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(40), 'd'.repeat(500), 'e'.repeat(10)];
    const groups = groupsByCloneSize(items, 100);
    expect(groups.map((g) => g.map((s) => s[0]).join(''))).toEqual(['ab', 'c', 'd', 'e']);
    expect(groups.flat()).toEqual(items);
    expect(groupsByCloneSize([], 100)).toEqual([]);
  });
});
