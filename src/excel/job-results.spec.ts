import { randomBytes } from 'node:crypto';
import { packResults, RESULT_PART_BYTES, unpackResults } from './job-results';

describe('job results packing', () => {
  it('packs JSON lines into pieces a MySQL BLOB holds and unpacks them in order', async () => {
    // Incompressible texts, so that the group needs several pieces.
    const lines = Array.from({ length: 200 }, (_, n) =>
      JSON.stringify({ row: n + 2, status: 'FAIL', name: randomBytes(750).toString('base64'), note: '줄\n바꿈' }),
    );
    const parts = await packResults(lines);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(RESULT_PART_BYTES);
    expect(await unpackResults(parts)).toEqual(lines);
  });

  it('a compressible group takes a fifth of its text or less; one line and no line round-trip too', async () => {
    const lines = Array.from({ length: 1000 }, (_, n) =>
      JSON.stringify({ id: n + 1, name: `상품 ${n}`, url: `https://shop.example.com/goods/${n}`, row: n + 2, status: 'CREATE' }),
    );
    const parts = await packResults(lines);
    expect(parts).toHaveLength(1);
    expect(parts[0].length).toBeLessThan(lines.join('\n').length / 5);
    expect(await unpackResults(parts)).toEqual(lines);
    expect(await unpackResults(await packResults(['{"row":2}']))).toEqual(['{"row":2}']);
    expect(await unpackResults(await packResults([]))).toEqual([]);
  });
});
