import { existsSync, realpathSync, statfsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { systemClock, type Clock } from '../clock.js'
import { ConfigError, loadConfig, sqlitePathOf, type Config } from '../config.js'
import { messageOf } from '../error-message.js'
import type { Deadlines } from './postgres/deadline-pool.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import { isUnusableSqlitePath } from './store-errors.js'
import type { Durability, Store, StoreLog } from './store.js'

export interface StoreOptions {
  /** PostgreSQL: a direct connection for LISTEN, when the store's URL is a pooler's. */
  directUrl?: string | undefined
  /** PostgreSQL connections per instance. */
  poolSize?: number
  /** PostgreSQL: the longest waits for a connection and for a statement. */
  deadlines?: Deadlines
  durability?: Durability
  /** SQLite: how long after opening the WAL checkpoint thread starts (a second unless told). */
  checkpointStartDelayMs?: number
  /** The store's clock (see Store), for tests: given one, a PostgreSQL store does not read its server's time. */
  clock?: Clock
  log?: StoreLog
}

const SILENT: StoreLog = { info: () => {}, warn: () => {}, error: () => {} }

/** The store's settings in the configuration. */
export function storeOptionsFrom (config: Config): Required<Pick<StoreOptions, 'poolSize' | 'deadlines' | 'durability'>> & Pick<StoreOptions, 'directUrl'> {
  return {
    directUrl: config.DATABASE_DIRECT_URL,
    poolSize: config.DATABASE_POOL_SIZE,
    deadlines: { connectMs: config.DATABASE_CONNECT_TIMEOUT_MS, statementMs: config.DATABASE_STATEMENT_TIMEOUT_MS },
    durability: config.DURABILITY
  }
}

const DEFAULTS = storeOptionsFrom(loadConfig({}))

/**
 * The files of the SQLite store that `databaseUrl` names, with those SQLite keeps beside it (named
 * after the file its path leads to, links followed); none for PostgreSQL or `sqlite::memory:`.
 */
export function sqliteStoreFiles (databaseUrl: string): string[] {
  const path = sqlitePathOf(databaseUrl)
  if (path === undefined || path === ':memory:') return []
  const paths = new Set([resolve(path), existsSync(path) ? realpathSync(path) : resolve(path)])
  return [...paths].flatMap((file) => [file, `${file}-wal`, `${file}-shm`, `${file}-journal`])
}

/** Opens the store that `DATABASE_URL` names (`sqlite:PATH` or `postgres://...`); the caller owns it and must `close()` it. */
export function openStore (databaseUrl: string, options: StoreOptions = {}): Store {
  const { directUrl, poolSize = DEFAULTS.poolSize, deadlines = DEFAULTS.deadlines, durability = DEFAULTS.durability, checkpointStartDelayMs, clock, log = SILENT } = options
  const path = sqlitePathOf(databaseUrl)
  if (path !== undefined) {
    try {
      return openSqliteStore(path, { durability, clock: clock ?? systemClock, log, checkpointStartDelayMs })
    } catch (error) {
      // SQLite's own messages ("file is not a database", "unable to open database file") name no file.
      // A path that cannot be the store is a setting to change (exit 2), as an invalid value is.
      throw new (isUnusableSqlitePath(error) ? ConfigError : Error)(`Cannot open the SQLite store at ${path}: ${messageOf(error)}${fullDiskNote(path, error)}`, { cause: error })
    }
  }
  return openPostgresStore(databaseUrl, { directUrl, poolSize, deadlines, clock, log })
}

// Less room than this, and SQLite may fail to make or grow its files.
const NEARLY_FULL_BYTES = 1024 * 1024

/**
 * What to add to an opening's failure of input or output when the disk of the store's folder is
 * (nearly) full: SQLite, unable to make its `-shm` and `-wal` files there, says only "disk I/O error".
 */
function fullDiskNote (path: string, error: unknown): string {
  const { code } = error as { code?: unknown }
  if (typeof code !== 'string' || !/^(SQLITE_(IOERR|FULL|CANTOPEN)|ENOSPC$)/.test(code)) return ''
  const folder = dirname(resolve(path))
  try {
    const { bavail, bsize } = statfsSync(folder)
    return bavail * bsize < NEARLY_FULL_BYTES ? `; the disk it is on is full (less than 1 MiB left in ${folder})` : ''
  } catch {
    return '' // no folder to look at: the opening's own error says what is wrong
  }
}
