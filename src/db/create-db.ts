import { mkdirSync, realpathSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { Kysely, PostgresDialect, type Dialect, type LogConfig, type SqliteDialectConfig } from 'kysely'
import type { Database, Db } from './database.js'
import { MultiProcessSqliteDialect } from './sqlite-dialect.js'
import { allowDirectAccess } from './sqlite-direct.js'
import { WalIndexStamp, watchCommits } from './wal-index-stamp.js'

const SQLITE_PREFIX = 'sqlite:'
const SQLITE_BUSY_TIMEOUT_MS = 500
const PG_INT8 = 20

/**
 * Opens the store that `DATABASE_URL` names, with up to `poolSize` PostgreSQL connections (SQLite has
 * one) and an optional query `log` (for metrics); the caller owns it and must `destroy()` it.
 */
export function createDb (databaseUrl: string, poolSize = 10, durability: Durability = 'default', log?: LogConfig): Db {
  if (!databaseUrl.startsWith(SQLITE_PREFIX)) {
    return new Kysely<Database>({ dialect: createPostgresDialect(databaseUrl, poolSize), ...(log !== undefined && { log }) })
  }
  const connection = openSqlite(databaseUrl.slice(SQLITE_PREFIX.length), durability)
  // SQLite names the WAL index after the database file, its symbolic links resolved.
  const walIndex = isWal(connection) ? new WalIndexStamp(`${realpathSync(connection.name)}-shm`) : undefined
  const db = new Kysely<Database>({
    dialect: new MultiProcessSqliteDialect({ database: withStatementCache(connection, () => walIndex?.close()) }),
    ...(log !== undefined && { log })
  })
  if (walIndex !== undefined) watchCommits(db, walIndex)
  // The hot paths skip Kysely, unless every query must reach the log (store timings for metrics).
  if (log === undefined) allowDirectAccess(db, connection)
  return db
}

/** `strict` also keeps commits through a power loss, by an fsync on each commit. */
export type Durability = 'default' | 'strict'

function openSqlite (path: string, durability: Durability): SqliteDatabase.Database {
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true })
  const sqlite = new SqliteDatabase(path)
  // First, so that even switching to WAL waits for another process holding the file. better-sqlite3
  // waits synchronously, stalling every request meanwhile: long enough for another process's short
  // transactions, well under the 1 s lag at which the server sheds load. Past it: 503.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`)
  // WAL with synchronous=NORMAL: a commit survives a crash of the process, not a power loss; FULL
  // syncs the WAL on every commit (group commit keeps that affordable).
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma(durability === 'strict' ? 'synchronous = FULL' : 'synchronous = NORMAL')
  sqlite.pragma('foreign_keys = ON')
  // int64 columns (ids, categoryId) must round-trip exactly, also above 2^53.
  sqlite.defaultSafeIntegers(true)
  return sqlite
}

/** An in-memory store, or a file system without shared memory, keeps another journal and no WAL index. */
function isWal (sqlite: SqliteDatabase.Database): boolean {
  return sqlite.pragma('journal_mode', { simple: true }) === 'wal'
}

const STATEMENT_CACHE_SIZE = 200

/**
 * Kysely prepares every query anew, which cost a sixth of a request; the queries here take their
 * values as parameters, so a few statements serve them all and are kept, prepared, by their SQL.
 */
function withStatementCache (sqlite: SqliteDatabase.Database, beforeClose: () => void): SqliteDialectConfig['database'] {
  const statements = new Map<string, SqliteDatabase.Statement>()
  return {
    prepare: (sql: string) => {
      let statement = statements.get(sql)
      if (statement === undefined) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear()
        statement = sqlite.prepare(sql)
        statements.set(sql, statement)
      }
      return statement
    },
    close: () => {
      beforeClose()
      sqlite.close()
    }
  }
}

function createPostgresDialect (connectionString: string, poolSize: number): Dialect {
  // pg is loaded only when PostgreSQL is used: it adds a tenth of a second to every SQLite start.
  return new PostgresDialect({ pool: async () => createPool(connectionString, poolSize) })
}

async function createPool (connectionString: string, poolSize: number) {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    // Fail fast while the database is down, so requests get a 503 instead of hanging.
    connectionTimeoutMillis: 5000,
    statement_timeout: 10_000,
    // int8 (ids, categoryId) as BigInt, exact; pg's default is a string.
    types: { getTypeParser: (oid: number, format?: string) => oid === PG_INT8 ? BigInt : pg.types.getTypeParser(oid, format as 'text') }
  })
  // A connection lost while idle (pool 'error') or checked out (client 'error') must not crash the
  // process: the pool replaces it, and a query it was running fails and is answered 503.
  pool.on('error', () => {})
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}
