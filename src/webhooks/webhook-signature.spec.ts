import { createHmac } from 'node:crypto';
import { newSigningSecret, signatureHeader, verifySignature } from './webhook-signature';

describe('webhook signatures', () => {
  const secret = 'whsec_test-secret';
  const body = '{"id":"evt_1","type":"goods.salesStatus","data":{"goodsId":"7"}}';

  it('signs `${t}.${body}` with HMAC-SHA256 in hex, as t=…,v1=…', () => {
    const expected = createHmac('sha256', secret).update(`1764000000.${body}`).digest('hex');
    expect(signatureHeader(secret, 1764000000, body)).toBe(`t=1764000000,v1=${expected}`);
  });

  it('verifies its own signature within the tolerance', () => {
    const header = signatureHeader(secret, 1764000000, body);
    expect(verifySignature(secret, header, body, 300, 1764000000)).toBe(true);
    expect(verifySignature(secret, header, body, 300, 1764000300)).toBe(true);
    expect(verifySignature(secret, header, body, 300, 1763999700)).toBe(true);
  });

  it('refuses a stale or future timestamp (replay)', () => {
    const header = signatureHeader(secret, 1764000000, body);
    expect(verifySignature(secret, header, body, 300, 1764000301)).toBe(false);
    expect(verifySignature(secret, header, body, 300, 1763999699)).toBe(false);
  });

  it('refuses another body, another secret, a changed timestamp and malformed headers', () => {
    const header = signatureHeader(secret, 1764000000, body);
    expect(verifySignature(secret, header, body.replace('7', '8'), 300, 1764000000)).toBe(false);
    expect(verifySignature('whsec_other', header, body, 300, 1764000000)).toBe(false);
    expect(verifySignature(secret, header.replace('t=1764000000', 't=1764000001'), body, 300, 1764000000)).toBe(false);
    expect(verifySignature(secret, undefined, body, 300, 1764000000)).toBe(false);
    expect(verifySignature(secret, 'v1=abc', body, 300, 1764000000)).toBe(false);
    expect(verifySignature(secret, 't=1764000000,v1=zz', body, 300, 1764000000)).toBe(false);
  });

  it('accepts the header when any of several v1 signatures matches', () => {
    const good = signatureHeader(secret, 1764000000, body).split(',v1=')[1];
    expect(verifySignature(secret, `t=1764000000,v1=${'0'.repeat(64)},v1=${good}`, body, 300, 1764000000)).toBe(true);
  });

  it('makes a fresh 32-byte secret each time', () => {
    const a = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newSigningSecret()).not.toBe(a);
  });
});
