const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|PROTOCOL|NOMEM)/
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'])
// PostgreSQL SQLSTATE classes: 08 connection exception, 53 insufficient resources, 57P admin shutdown.
const POSTGRES_UNAVAILABLE = /^(08|53|57P)/

/** True for an error that says the store cannot answer now (full, locked, down), not that the request is wrong. */
export function isStoreUnavailable (error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string') return false
  return SQLITE_UNAVAILABLE.test(code) || NETWORK_ERRORS.has(code) || POSTGRES_UNAVAILABLE.test(code)
}
