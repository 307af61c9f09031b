import ipaddr from 'ipaddr.js'
import { isAddress } from './client-address.js'

/**
 * TRUST_PROXY as a list of addresses and CIDRs (`10.0.0.0/8`, `::1`), commas and spaces between them;
 * undefined when an entry is neither, or is wider than an IPv4 /8 (10.0.0.0/8, the widest private
 * range) or an IPv6 /7 (fc00::/7, the unique local addresses): a /0, or two /1s together, would trust
 * every address, and let any client choose the address it is counted under.
 */
export function parseTrustedProxies (text: string): string[] | undefined {
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  const valid = (entry: string) => entry.includes('/') ? isCidr(entry) : isAddress(entry)
  return entries.length > 0 && entries.every(valid) ? entries : undefined
}

function isCidr (entry: string): boolean {
  const slash = entry.indexOf('/')
  if (!isAddress(entry.slice(0, slash))) return false
  try {
    const [address, prefix] = ipaddr.parseCIDR(entry)
    if (address.kind() === 'ipv4') return prefix >= 8
    // proxy-addr matches IPv4 clients against an IPv4-mapped range of /96 or longer, as IPv4 /(prefix - 96).
    return (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96 ? prefix >= 96 + 8 : prefix >= 7
  } catch {
    return false
  }
}
