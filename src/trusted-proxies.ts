import ipaddr from 'ipaddr.js'
import { isAddress } from './client-address.js'

/**
 * TRUST_PROXY as a list of addresses and CIDRs (`10.0.0.0/8`, `::1`), commas and spaces between them;
 * undefined when an entry is neither, or is a /0: trusting every address would let any client choose
 * the address it is counted under (and proxy-addr refuses it).
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
    return ipaddr.parseCIDR(entry)[1] > 0
  } catch {
    return false
  }
}
