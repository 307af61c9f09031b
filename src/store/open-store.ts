import { systemClock, type Clock } from '../clock.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Durability, Store, StoreLog } from './store.js'

const SQLITE_PREFIX = 'sqlite:'

export interface StoreOptions {
  /** PostgreSQL connections per instance. */
  poolSize?: number
  durability?: Durability
  clock?: Clock
  log?: StoreLog
}

const SILENT: StoreLog = { warn: () => {}, error: () => {} }

/** Opens the store that `DATABASE_URL` names (`sqlite:PATH` or `postgres://...`); the caller owns it and must `close()` it. */
export function openStore (databaseUrl: string, { poolSize = 10, durability = 'default', clock = systemClock, log = SILENT }: StoreOptions = {}): Store {
  if (databaseUrl.startsWith(SQLITE_PREFIX)) return openSqliteStore(databaseUrl.slice(SQLITE_PREFIX.length), { durability, clock, log })
  return openPostgresStore(databaseUrl, { poolSize, clock })
}
