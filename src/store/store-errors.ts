const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|PROTOCOL|NOMEM)/
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'])
// PostgreSQL SQLSTATE: 08 connection exception, 53 insufficient resources, 57P shutdown, 57014 statement timeout.
const POSTGRES_UNAVAILABLE = /^(08|53|57P|57014)/
// node-postgres raises these without a code.
const POSTGRES_MESSAGES = /^(timeout exceeded when trying to connect|Connection terminated)/

/** True for an error that says the store cannot answer now (full, locked, down), not that the request is wrong. */
export function isStoreUnavailable (error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, message } = error as { code?: unknown, message?: unknown }
  if (typeof code !== 'string') return typeof message === 'string' && POSTGRES_MESSAGES.test(message)
  return SQLITE_UNAVAILABLE.test(code) || NETWORK_ERRORS.has(code) || POSTGRES_UNAVAILABLE.test(code)
}
