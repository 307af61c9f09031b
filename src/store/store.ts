import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import type { PetStore } from './pet-store.js'

/** `strict` also keeps commits through a power loss, by an fsync on each commit. */
export type Durability = 'default' | 'strict'

/**
 * An open store: its pets behind their own interface, Kysely for the other tables, and whatever it
 * runs beside them (connections, threads, caches), all released by `close()`.
 */
export interface Store {
  readonly dialect: 'sqlite' | 'postgres'
  /** Kysely over the store's connections, for the tables off the hot path (keys, orders, settings). */
  readonly db: Db
  readonly pets: PetStore
  /**
   * The time of day that every instance on the store shares: the PostgreSQL server's (see
   * DatabaseClock), this machine's for SQLite; or the one the store was opened with.
   */
  readonly clock: Clock
  /** Resolves when the store answers a trivial query; rejects with its error when it does not. */
  ping: () => Promise<void>
  close: () => Promise<void>
}

/** Where the store reports what happens beside the requests (a background thread failing, say); pino's signature. */
export interface StoreLog {
  info: (details: object, message: string) => void
  warn: (details: object, message: string) => void
  error: (details: { err: Error }, message: string) => void
}
