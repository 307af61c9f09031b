import ipaddr from 'ipaddr.js'

// IPv6 addresses are public only in the global unicast block: ::/96 (IPv4-compatible) and the other
// special blocks ipaddr.js counts as unicast could carry a packet to an IPv4 address inside.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')

/**
 * Whether an IP address is a public unicast one: not loopback, private, link-local (cloud metadata
 * at 169.254.169.254 among them), CGNAT, unique-local, multicast, reserved, documentation or an IPv6
 * form that embeds an IPv4 address elsewhere (IPv4-compatible, NAT64, 6to4, Teredo). IPv4-mapped
 * IPv6 is judged as the IPv4 address it maps.
 */
export function isPublicAddress (address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast'
  const v6 = parsed as ipaddr.IPv6
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast'
  return v6.range() === 'unicast' && v6.match(GLOBAL_UNICAST_V6)
}

/** Whether a host as written in a URL is an IP literal (brackets of IPv6 included) rather than a name. */
export function ipLiteralOf (hostname: string): string | undefined {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(host) ? host : undefined
}
