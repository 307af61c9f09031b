import ipaddr from 'ipaddr.js'

/**
 * IPv6 clients are counted by network, as @fastify/rate-limit's own key does by default: a subscriber
 * is given a /64 at least, each address of which would otherwise have a budget of its own.
 */
const IPV6_PREFIX_BITS = 64

/** `[2001:db8::1]:443` or `203.0.113.1:5001`: an address with a port, as some proxies write them. */
const WITH_PORT = /^\[([^\]]+)\](?::\d+)?$|^(\d+\.\d+\.\d+\.\d+):\d+$/

/**
 * What a request's client is counted under for per-address limits: its address (`request.ip`, which
 * from a trusted proxy is the one X-Forwarded-For names, as written) as an address, not as text: no
 * port, an IPv4-mapped IPv6 address as IPv4, an IPv6 address as its /64 network. A value that is no
 * address counts as the connection's own (`socketAddress`, the proxy's): as text, each spelling of an
 * address, or any string up to the header's size, would be a counter of its own.
 */
export function clientNetwork (ip: string, socketAddress: string | undefined): string {
  return networkOf(ip) ?? networkOf(socketAddress ?? '') ?? ''
}

/**
 * Whether `text` is an IP address as written by people and proxies: IPv4 as four decimal numbers
 * (ipaddr.js also takes octal, hexadecimal and fewer parts: `127.0.0.010` is 127.0.0.8), or IPv6,
 * whose IPv4 ending, if any, is written so too.
 */
export function isAddress (text: string): boolean {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return true
  return ipaddr.IPv6.isValid(text) && (!text.includes('.') || ipaddr.IPv4.isValidFourPartDecimal(text.slice(text.lastIndexOf(':') + 1)))
}

function networkOf (written: string): string | undefined {
  const match = WITH_PORT.exec(written)
  const address = match?.[1] ?? match?.[2] ?? written
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return address
  if (!isAddress(address)) return undefined
  const ipv6 = ipaddr.IPv6.parse(address)
  if (ipv6.isIPv4MappedAddress()) return ipv6.toIPv4Address().toString()
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${ipv6.toString()}/${IPV6_PREFIX_BITS}`)
  return `${network.toString()}/${IPV6_PREFIX_BITS}`
}
