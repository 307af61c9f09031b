import { Kysely, PostgresDialect, sql } from 'kysely'
import type { Clock } from '../../clock.js'
import type { Database } from '../../db/database.js'
import type { Store } from '../store.js'
import { PostgresPetStore } from './postgres-pet-store.js'

const PG_INT8 = 20

export interface PostgresStoreOptions {
  /** Connections this instance keeps at most. */
  poolSize: number
  clock: Clock
}

/** Opens a PostgreSQL store over a pool of connections, shared by many instances of the service. */
export function openPostgresStore (connectionString: string, { poolSize, clock }: PostgresStoreOptions): Store {
  // pg is loaded only when PostgreSQL is used: it adds a tenth of a second to every SQLite start.
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: async () => await createPool(connectionString, poolSize) }) })
  return {
    dialect: 'postgres',
    db,
    pets: new PostgresPetStore(db, clock),
    ping: async () => { await sql`select 1`.execute(db) },
    close: async () => { await db.destroy() }
  }
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
