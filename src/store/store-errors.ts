// A damaged file (CORRUPT, NOTADB) is one too: no request caused it, and a 500 would call it a bug.
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|PROTOCOL|NOMEM|CORRUPT|NOTADB)/
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN'])
// PostgreSQL SQLSTATE: 08 connection exception, 53 insufficient resources, 57P shutdown, 57014 statement
// timeout, 55P03 lock timeout, 25P03 a transaction ended for sitting idle past the deadline (the
// service frozen in it), XX001 and XX002 data or an index damaged, 25006 a database read-only (a
// failover to a standby, `default_transaction_read_only`), 42501 a privilege the service's role lost.
const POSTGRES_UNAVAILABLE = /^(08|53|57P|57014|55P03|25P03|XX001|XX002|25006|42501)/
// node-postgres raises these without a code: no connection within the deadline, no answer within the
// deadline, or the connection lost.
const POSTGRES_NO_CONNECTION = /^timeout exceeded when trying to connect/
const POSTGRES_CONNECTION_LOST = /^(Query read timeout|Connection terminated|Client has encountered a connection error)/
// The connection is gone too after these codes: 08 and 57P from the server, E... from the socket.
const POSTGRES_CONNECTION_LOST_CODES = /^(08|57P)|^E[A-Z_]+$/

// pg's words when the server asks for a password (SCRAM, PostgreSQL's default) that the URL lacks or leaves empty.
const NO_PASSWORD_GIVEN = /^SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a (non-empty )?string$/
const NO_PASSWORD_GIVEN_PLAINLY = 'PostgreSQL asks for a password, and the connection URL gives none: postgres://USER:PASSWORD@HOST:PORT/DB'

// pg's words when the URL asks for SSL (any sslmode but disable: it takes prefer for verify-full) and
// the server offers none: no outage, which a restart would outlast.
const NO_SSL_OFFERED = 'The server does not support SSL connections'
const NO_SSL_OFFERED_PLAINLY = `${NO_SSL_OFFERED}, which the URL asks for (pg, the driver, takes sslmode prefer, require and verify-ca for verify-full): ` +
  'set sslmode=disable for a connection without SSL, or turn SSL on in the server'

// Errors of a connection the server refused to open (see markConnectionRefused).
const refusedConnections = new WeakSet<object>()

/**
 * Marks an error as a failure to open a PostgreSQL connection: whatever its code (a wrong password
 * 28P01, a database closed to connections 55000 or gone 3D000), the store cannot answer, and no
 * request caused it. pg's cryptic words for a password missing from the URL become plain ones.
 */
export function markConnectionRefused (error: unknown): unknown {
  if (typeof error === 'object' && error !== null) refusedConnections.add(error)
  if (error instanceof Error && NO_PASSWORD_GIVEN.test(error.message)) reword(error, NO_PASSWORD_GIVEN_PLAINLY)
  if (error instanceof Error && error.message === NO_SSL_OFFERED) reword(error, NO_SSL_OFFERED_PLAINLY)
  return error
}

/**
 * The store fault (SQLITE_IOERR: 503) for a system call on a SQLite store's files that failed while it
 * served (`stat` or `read`: EIO from a failing disk, EACCES from a folder made unreadable): its errno
 * alone was taken for a bug, a 500.
 */
export function storeFileFault (error: unknown, file: string): Error {
  return Object.assign(new Error(`The store's file ${file} cannot be read: ${fieldsOf(error).message ?? String(error)}`, { cause: error }), { code: 'SQLITE_IOERR' })
}

function reword (error: Error, message: string): void {
  error.stack = error.stack?.replace(error.message, message)
  error.message = message
}

/** True for an error that says the store cannot answer now (full, locked, down), not that the request is wrong. */
export function isStoreUnavailable (error: unknown): boolean {
  if (typeof error === 'object' && error !== null && refusedConnections.has(error)) return true
  const { code, message } = fieldsOf(error)
  if (code === undefined) return message !== undefined && (POSTGRES_NO_CONNECTION.test(message) || POSTGRES_CONNECTION_LOST.test(message))
  return SQLITE_UNAVAILABLE.test(code) || NETWORK_ERRORS.has(code) || POSTGRES_UNAVAILABLE.test(code)
}

// What DATABASE_URL names cannot be the store, whatever the time. SQLite: a path that is no database,
// that this process may not open or write (or make its folder), a file where a folder goes.
const SQLITE_UNUSABLE_PATH = new Set(['SQLITE_NOTADB', 'SQLITE_CANTOPEN', 'EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR'])
// PostgreSQL: a server that refuses the user, its password or the database, or a privilege (28P01,
// 28000, 3D000, 42501). Not the socket's errors: a server stopped leaves no socket file (ENOENT).
const POSTGRES_REFUSED_SETTING = new Set(['28P01', '28000', '3D000', '42501'])
// And, as a connection opens, a setting of the URL's `options` (or a parameter) the server does not
// take: a value it refuses (22023), a name it does not know (42704).
const POSTGRES_REFUSED_STARTUP_SETTING = new Set(['22023', '42704'])

/**
 * True for an error of opening a SQLite store that its path caused (see above): DATABASE_URL must be
 * changed, or the file or its folder set up for it. A store busy, full or damaged is not one.
 */
export function isUnusableSqlitePath (error: unknown): boolean {
  const { code } = fieldsOf(error)
  return code !== undefined && SQLITE_UNUSABLE_PATH.has(code)
}

/**
 * True for an error of a PostgreSQL server that refuses what DATABASE_URL names, or the privileges
 * the service needs (see above): a setting to change. A server down, unreachable or full is not one.
 */
export function isRefusedPostgresSetting (error: unknown): boolean {
  const { code, message } = fieldsOf(error)
  if (code === undefined) return message === NO_PASSWORD_GIVEN_PLAINLY || message === NO_SSL_OFFERED_PLAINLY
  return POSTGRES_REFUSED_SETTING.has(code) || (POSTGRES_REFUSED_STARTUP_SETTING.has(code) && refusedConnections.has(error as object))
}

/** True when the PostgreSQL connection an error came from cannot be trusted to answer again (timed out, lost). */
export function isPostgresConnectionLost (error: unknown): boolean {
  const { code, message } = fieldsOf(error)
  return (code !== undefined && POSTGRES_CONNECTION_LOST_CODES.test(code)) ||
    (message !== undefined && POSTGRES_CONNECTION_LOST.test(message))
}

/**
 * True when the PostgreSQL connection an error came from is not to be used again: lost, or a session
 * that found the database read-only (25006). One opened while the database's or the role's default
 * was read-only (`default_transaction_read_only`) keeps that default for good: such sessions served
 * 503s long after the database could be written again.
 */
export function isPostgresConnectionSpent (error: unknown): boolean {
  return isPostgresConnectionLost(error) || fieldsOf(error).code === '25006'
}

function fieldsOf (error: unknown): { code?: string, message?: string } {
  if (typeof error !== 'object' || error === null) return {}
  const { code, message } = error as { code?: unknown, message?: unknown }
  return { code: typeof code === 'string' ? code : undefined, message: typeof message === 'string' ? message : undefined }
}
