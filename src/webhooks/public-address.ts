import ipaddr from 'ipaddr.js'

/**
 * Whether an IP address is a public unicast one: not loopback, private, link-local (cloud metadata
 * at 169.254.169.254 among them), CGNAT, unique-local, multicast, reserved, documentation or an IPv6
 * form that embeds an IPv4 address elsewhere (NAT64, 6to4, Teredo). IPv4-mapped IPv6 is judged as
 * the IPv4 address it maps.
 */
export function isPublicAddress (address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  return parsed.range() === 'unicast'
}

/** Whether a host as written in a URL is an IP literal (brackets of IPv6 included) rather than a name. */
export function ipLiteralOf (hostname: string): string | undefined {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(host) ? host : undefined
}
