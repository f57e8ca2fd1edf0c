import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses the media fetcher (and the webhook sender) may connect to. Only globally routable unicast
 * addresses, unless private hosts are allowed outright (tests, closed networks) or the host name / a CIDR
 * range is on the allow list. Loopback, private (10/8, 172.16/12, 192.168/16), link-local (169.254/16,
 * the cloud metadata address among them), unique-local (fc00::/7), carrier-grade NAT (100.64/10, e.g.
 * Alibaba's metadata), multicast, reserved and unspecified ranges are refused, and so are IPv4-mapped
 * IPv6 addresses of any of those.
 *
 * Allowing private hosts outright still leaves the cloud metadata services closed (link-local addresses,
 * and the metadata addresses outside that range): a node with that setting on must not hand an image or
 * webhook URL the credentials of the machine it runs on. Only the allow list opens them.
 */
export class AddressPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];

  constructor(
    private readonly allowPrivate: boolean,
    allowList: string[] = [],
  ) {
    for (const entry of allowList) {
      if (entry.includes('/')) {
        try {
          this.ranges.push(ipaddr.parseCIDR(entry));
          continue;
        } catch {
          /* not a CIDR: treat as a host name */
        }
      }
      const host = entry.toLowerCase().replace(/^\[|\]$/g, '');
      this.hosts.add(host);
      // An address is allowed as such: also when a listed name's DNS answer, or another name's, is that address.
      const version = isIP(host);
      if (version) this.ranges.push([ipaddr.parse(host), version === 4 ? 32 : 128]);
    }
  }

  /** Why `address` (reached for `hostname`) is refused, or null when it is allowed. */
  refusal(address: string, hostname: string): string | null {
    if (this.hosts.has(hostname.toLowerCase().replace(/^\[|\]$/g, ''))) return null;
    if (!isIP(address)) return `${address} is not an IP address`;
    let parsed = ipaddr.parse(address);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    }
    for (const [range, bits] of this.ranges) {
      if (range.kind() === parsed.kind() && parsed.match(range, bits)) return null;
    }
    const kind = parsed.range();
    if (this.allowPrivate) {
      if (kind === 'linkLocal') return `${address} is a link-local address (the cloud metadata range; list it in the allowed hosts to reach it)`;
      if (METADATA_ADDRESSES.has(parsed.toNormalizedString())) {
        return `${address} is a cloud metadata address (list it in the allowed hosts to reach it)`;
      }
      return null;
    }
    if (kind === 'unicast' && parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) {
      return `${address} is an IPv4-compatible IPv6 address`;
    }
    return kind === 'unicast' ? null : `${address} is ${rangeName(kind)} address`;
  }
}

/**
 * Cloud metadata services outside the link-local ranges (which hold AWS's, GCP's and Azure's 169.254.169.254
 * and fe80:: ones): AWS's IPv6 one and Alibaba Cloud's, as ipaddr.js normalizes them.
 */
const METADATA_ADDRESSES = new Set(['fd00:ec2:0:0:0:0:0:254', '100.100.100.200']);

/** An address range (ipaddr.js's names) in words, with its article: "a link-local", "an unspecified". */
function rangeName(kind: string): string {
  const words: Record<string, string> = {
    linkLocal: 'a link-local',
    uniqueLocal: 'a unique-local',
    carrierGradeNat: 'a carrier-grade NAT',
    rfc6052: 'a NAT64 (RFC 6052)',
    rfc6145: 'an IPv4-translated (RFC 6145)',
    ipv4Mapped: 'an IPv4-mapped',
  };
  return words[kind] ?? `${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind}`;
}
