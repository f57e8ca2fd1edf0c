import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses the media fetcher may connect to. Only globally routable unicast addresses, unless
 * private hosts are allowed outright (tests, closed networks) or the host name / a CIDR range is on the
 * allow list. Loopback, private (10/8, 172.16/12, 192.168/16), link-local (169.254/16, the cloud
 * metadata address among them), unique-local (fc00::/7), carrier-grade NAT (100.64/10, e.g. Alibaba's
 * metadata), multicast, reserved and unspecified ranges are refused, and so are IPv4-mapped IPv6
 * addresses of any of those.
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
      this.hosts.add(entry.toLowerCase().replace(/^\[|\]$/g, ''));
    }
  }

  /** Why `address` (reached for `hostname`) is refused, or null when it is allowed. */
  refusal(address: string, hostname: string): string | null {
    if (this.allowPrivate || this.hosts.has(hostname.toLowerCase().replace(/^\[|\]$/g, ''))) return null;
    if (!isIP(address)) return `${address} is not an IP address`;
    let parsed = ipaddr.parse(address);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    }
    for (const [range, bits] of this.ranges) {
      if (range.kind() === parsed.kind() && parsed.match(range, bits)) return null;
    }
    const kind = parsed.range();
    if (kind === 'unicast' && parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) {
      return `${address} is an IPv4-compatible IPv6 address`;
    }
    return kind === 'unicast' ? null : `${address} is a ${kind} address`;
  }
}
