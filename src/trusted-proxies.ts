import ipaddr from 'ipaddr.js'

/**
 * TRUST_PROXY as a list of addresses and CIDRs (`10.0.0.0/8`, `::1`), commas and spaces between them;
 * undefined when an entry is neither.
 */
export function parseTrustedProxies (text: string): string[] | undefined {
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  const valid = (entry: string) => entry.includes('/') ? isCidr(entry) : ipaddr.isValid(entry)
  return entries.length > 0 && entries.every(valid) ? entries : undefined
}

function isCidr (entry: string): boolean {
  try {
    ipaddr.parseCIDR(entry)
    return true
  } catch {
    return false
  }
}
