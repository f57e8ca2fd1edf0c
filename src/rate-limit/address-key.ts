import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * How many leading bits of an IPv6 address name one client in the per-address limits. A customer line
 * or a rented server gets a whole /64 (2^64 addresses): counted address by address, one such client
 * could send every request, failed token and connection from a fresh address and never meet a limit.
 */
export const IPV6_CLIENT_PREFIX = 64;

/**
 * The key one client's address is counted under by the per-address limits (requests, refused tokens,
 * live connections, open connections): an IPv4 address as it is (also when written IPv4-mapped,
 * `::ffff:203.0.113.7`), an IPv6 address as its /64 (`2001:db8:1:2::/64`). Text that is no address is
 * kept as it is.
 */
export function addressKey(address: string): string {
  // Most peers: a plain IPv4 address, as the socket gives it, is its own key (no parse on every request).
  if (isIPv4(address)) return address;
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return address;
  const parsed = ipaddr.process(bare);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const kept = IPV6_CLIENT_PREFIX / 16;
  const prefix = (parsed as ipaddr.IPv6).parts.map((part, i) => (i < kept ? part : 0));
  return `${new ipaddr.IPv6(prefix).toString()}/${IPV6_CLIENT_PREFIX}`;
}
