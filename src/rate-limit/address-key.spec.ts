import { addressKey, IPV6_CLIENT_PREFIX } from './address-key';

describe('addressKey', () => {
  it('keeps an IPv4 address, also one written IPv4-mapped', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::FFFF:cb00:7107')).toBe('203.0.113.7');
    // The shorter forms inet_aton reads (a forwarded header may carry one) name the same address.
    expect(addressKey('203.0.28935')).toBe('203.0.113.7');
  });

  it(`counts an IPv6 address as its /${IPV6_CLIENT_PREFIX}, however it is written`, () => {
    const key = addressKey('2001:db8:1:2:3:4:5:6');
    expect(key).toBe('2001:db8:1:2::/64');
    for (const same of [
      '2001:db8:1:2::1',
      '2001:0DB8:0001:0002:ffff:ffff:ffff:ffff',
      '[2001:db8:1:2::9]',
      'fe80::1%eth0'.replace('fe80::', '2001:db8:1:2::'),
    ]) {
      expect([same, addressKey(same)]).toEqual([same, key]);
    }
    expect(addressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressKey('::1')).toBe('::/64');
  });

  it('keeps text that is no address as it is', () => {
    for (const text of ['unknown', '', 'example.com', '1.2.3.4.5', '[::1']) expect(addressKey(text)).toBe(text);
  });
});
