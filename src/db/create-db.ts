import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { ConfigError } from '../config.js'
import type { Database, Db } from './database.js'

const SQLITE_PREFIX = 'sqlite:'

/** Opens the store that `DATABASE_URL` names; the caller owns it and must `destroy()` it. */
export function createDb (databaseUrl: string): Db {
  if (databaseUrl.startsWith(SQLITE_PREFIX)) return createSqliteDb(databaseUrl.slice(SQLITE_PREFIX.length))
  throw new ConfigError('Invalid configuration: DATABASE_URL: only sqlite: is supported in this version')
}

function createSqliteDb (path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true })
  const sqlite = new SqliteDatabase(path)
  // WAL with synchronous=NORMAL: a commit survives a crash of the process (not of the machine).
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('synchronous = NORMAL')
  sqlite.pragma('busy_timeout = 5000')
  sqlite.pragma('foreign_keys = ON')
  // int64 columns (ids, categoryId) must round-trip exactly, also above 2^53.
  sqlite.defaultSafeIntegers(true)
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) })
}
