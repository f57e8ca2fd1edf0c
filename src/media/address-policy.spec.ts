import { AddressPolicy } from './address-policy';

describe('AddressPolicy', () => {
  describe('with private hosts not allowed and an empty allow list', () => {
    const policy = new AddressPolicy(false);

    it.each([
      ['127.0.0.1', 'a loopback'],
      ['127.5.6.7', 'a loopback'],
      ['10.0.0.1', 'a private'],
      ['10.255.255.255', 'a private'],
      ['172.16.0.1', 'a private'],
      ['172.31.255.254', 'a private'],
      ['192.168.1.10', 'a private'],
      ['169.254.169.254', 'a link-local'],
      ['169.254.0.1', 'a link-local'],
      ['100.64.0.1', 'a carrier-grade NAT'],
      ['100.100.100.200', 'a carrier-grade NAT'],
      ['0.0.0.0', 'an unspecified'],
      ['0.1.2.3', 'an unspecified'],
      ['224.0.0.1', 'a multicast'],
      ['255.255.255.255', 'a broadcast'],
      ['240.0.0.1', 'a reserved'],
      ['192.0.2.1', 'a reserved'],
      ['198.18.0.1', 'a reserved'],
      ['::1', 'a loopback'],
      ['::', 'an unspecified'],
      ['fe80::1', 'a link-local'],
      ['fc00::1', 'a unique-local'],
      ['fd00:ec2::254', 'a unique-local'],
      ['ff02::1', 'a multicast'],
      ['2001:db8::1', 'a reserved'],
      ['64:ff9b::a00:1', 'a NAT64 (RFC 6052)'],
      ['2002:7f00:1::', 'a 6to4'],
    ])('refuses %s (%s) and names the range', (address, range) => {
      const why = policy.refusal(address, address);
      expect(why).toBe(`${address} is ${range} address`);
    });

    it.each([
      ['::ffff:127.0.0.1', '127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', '127.0.0.1', 'loopback'],
      ['::ffff:10.0.0.1', '10.0.0.1', 'private'],
      ['::ffff:169.254.169.254', '169.254.169.254', 'link-local'],
      ['::ffff:192.168.0.1', '192.168.0.1', 'private'],
      ['::ffff:0.0.0.0', '0.0.0.0', 'unspecified'],
    ])('refuses the IPv4-mapped IPv6 address %s like %s', (address, _v4, range) => {
      const why = policy.refusal(address, 'images.example.com');
      expect(why).not.toBeNull();
      expect(why).toContain(range);
    });

    it.each([
      '8.8.8.8',
      '93.184.216.34',
      '172.32.0.1',
      '172.15.255.255',
      '100.63.255.255',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      '::ffff:8.8.8.8',
    ])('allows the public unicast address %s', (address) => {
      expect(policy.refusal(address, 'images.example.com')).toBeNull();
    });

    it('refuses something that is not an IP address', () => {
      expect(policy.refusal('images.example.com', 'images.example.com')).toBe('images.example.com is not an IP address');
      expect(policy.refusal('', 'x')).not.toBeNull();
    });

    it('does not let the host name alone open a private address', () => {
      expect(policy.refusal('10.0.0.1', 'images.example.com')).not.toBeNull();
      expect(policy.refusal('127.0.0.1', 'localhost')).toBe('127.0.0.1 is a loopback address');
    });
  });

  describe('with private hosts allowed (tests, closed networks)', () => {
    const policy = new AddressPolicy(true);

    it.each(['127.0.0.1', '10.0.0.1', '192.168.1.10', '100.64.0.1', 'fc00::1', '::1', '::ffff:127.0.0.1', '8.8.8.8'])('allows %s', (address) => {
      expect(policy.refusal(address, address)).toBeNull();
    });

    it.each([
      ['169.254.169.254', /link-local/],
      ['169.254.170.2', /link-local/],
      ['fe80::a9fe:a9fe', /link-local/],
      ['::ffff:169.254.169.254', /link-local/],
      ['fd00:ec2::254', /cloud metadata address/],
      ['100.100.100.200', /cloud metadata address/],
    ])('still refuses the cloud metadata service at %s', (address, why) => {
      expect(policy.refusal(address, 'metadata.google.internal')).toMatch(why);
    });

    it('opens a metadata address only through the allow list', () => {
      expect(new AddressPolicy(true, ['169.254.0.0/16']).refusal('169.254.169.254', 'x')).toBeNull();
      expect(new AddressPolicy(true, ['100.100.100.200']).refusal('100.100.100.200', '100.100.100.200')).toBeNull();
    });
  });

  describe('with an allow list', () => {
    const policy = new AddressPolicy(false, ['10.20.0.0/16', 'fd12:3456::/32', '127.0.0.2', 'Images.Internal', '[::1]']);

    it('allows addresses inside an IPv4 CIDR range, also when IPv4-mapped', () => {
      expect(policy.refusal('10.20.0.1', 'a.example')).toBeNull();
      expect(policy.refusal('10.20.255.254', 'a.example')).toBeNull();
      expect(policy.refusal('::ffff:10.20.3.4', 'a.example')).toBeNull();
    });

    it('refuses private addresses just outside the CIDR range', () => {
      expect(policy.refusal('10.21.0.1', 'a.example')).toBe('10.21.0.1 is a private address');
      expect(policy.refusal('10.19.255.255', 'a.example')).toBe('10.19.255.255 is a private address');
      expect(policy.refusal('::ffff:10.21.0.1', 'a.example')).toContain('private');
    });

    it('allows addresses inside an IPv6 CIDR range only', () => {
      expect(policy.refusal('fd12:3456::9', 'a.example')).toBeNull();
      expect(policy.refusal('fd12:3457::9', 'a.example')).toBe('fd12:3457::9 is a unique-local address');
    });

    it('an IPv4 range never matches an IPv6 address and the other way round', () => {
      const v4only = new AddressPolicy(false, ['0.0.0.0/0']);
      expect(v4only.refusal('::1', '::1')).toBe('::1 is a loopback address');
      expect(v4only.refusal('127.0.0.1', '127.0.0.1')).toBeNull();
      const v6only = new AddressPolicy(false, ['::/0']);
      expect(v6only.refusal('127.0.0.1', '127.0.0.1')).toBe('127.0.0.1 is a loopback address');
    });

    it('allows a listed host (IP literal or name, case-insensitive) whatever it resolves to', () => {
      expect(policy.refusal('127.0.0.2', '127.0.0.2')).toBeNull();
      expect(policy.refusal('10.9.9.9', 'images.internal')).toBeNull();
      expect(policy.refusal('10.9.9.9', 'IMAGES.INTERNAL')).toBeNull();
      expect(policy.refusal('::1', '[::1]')).toBeNull();
      expect(policy.refusal('::1', '::1')).toBeNull();
    });

    it('allows a listed address also when a name resolves to it, IPv4-mapped too', () => {
      expect(policy.refusal('127.0.0.2', 'localhost')).toBeNull();
      expect(policy.refusal('::ffff:127.0.0.2', 'images.example')).toBeNull();
      expect(policy.refusal('::1', 'localhost')).toBeNull();
      expect(policy.refusal('127.0.0.1', 'localhost')).toBe('127.0.0.1 is a loopback address');
    });

    it('does not extend a listed host to its neighbours', () => {
      expect(policy.refusal('127.0.0.1', '127.0.0.1')).toBe('127.0.0.1 is a loopback address');
      expect(policy.refusal('127.0.0.3', '127.0.0.3')).toBe('127.0.0.3 is a loopback address');
      expect(policy.refusal('10.9.9.9', 'other.internal')).toBe('10.9.9.9 is a private address');
      expect(policy.refusal('10.9.9.9', 'images.internal.evil.example')).not.toBeNull();
    });

    it('treats an entry that is not a valid CIDR as a host name, not as a range', () => {
      const odd = new AddressPolicy(false, ['10.0.0.0/33']);
      expect(odd.refusal('10.0.0.1', '10.0.0.1')).toBe('10.0.0.1 is a private address');
    });
  });
});

describe('AddressPolicy: IPv4-compatible IPv6', () => {
  it('refuses ::/96 addresses, which embed an IPv4 address', () => {
    const { AddressPolicy: Policy } = jest.requireActual<typeof import('./address-policy')>('./address-policy');
    const policy = new Policy(false);
    expect(policy.refusal('::127.0.0.1', 'x')).not.toBeNull();
    expect(policy.refusal('::7f00:1', 'x')).toMatch(/IPv4-compatible|loopback|reserved/);
    expect(policy.refusal('::a00:1', 'x')).toMatch(/IPv4-compatible|private|reserved/);
    expect(policy.refusal('2606:4700::1111', 'x')).toBeNull();
  });
});
