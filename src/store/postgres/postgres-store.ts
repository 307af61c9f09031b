import { Kysely, PostgresDialect, sql } from 'kysely'
import type { Clock } from '../../clock.js'
import type { Database } from '../../db/database.js'
import type { Store } from '../store.js'
import { deadlinePool, type Deadlines } from './deadline-pool.js'
import { PostgresPetStore } from './postgres-pet-store.js'

const PG_INT8 = 20
const CLIENT_MARGIN_MS = 250

export interface PostgresStoreOptions {
  /** Connections this instance keeps at most. */
  poolSize: number
  deadlines: Deadlines
  clock: Clock
}

/** Opens a PostgreSQL store over a pool of connections, shared by many instances of the service. */
export function openPostgresStore (connectionString: string, { poolSize, deadlines, clock }: PostgresStoreOptions): Store {
  // pg is loaded only when PostgreSQL is used: it adds a tenth of a second to every SQLite start.
  const pool = async () => deadlinePool(await createPool(connectionString, poolSize, deadlines), deadlines)
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    dialect: 'postgres',
    db,
    pets: new PostgresPetStore(db, clock),
    ping: async () => { await sql`select 1`.execute(db) },
    close: async () => { await db.destroy() }
  }
}

async function createPool (connectionString: string, poolSize: number, { connectMs, statementMs }: Deadlines) {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    // A database that is down or frozen turns into a 503 within these, instead of a request that hangs.
    connectionTimeoutMillis: connectMs,
    // The client waits a little longer than the server's statement_timeout, so that inside a
    // transaction the server ends a statement first and the connection stays usable.
    query_timeout: statementMs + CLIENT_MARGIN_MS,
    // int8 (ids, categoryId) as BigInt, exact; pg's default is a string.
    types: { getTypeParser: (oid: number, format?: string) => oid === PG_INT8 ? BigInt : pg.types.getTypeParser(oid, format as 'text') }
  })
  // A connection lost while idle (pool 'error') or checked out (client 'error') must not crash the
  // process: the pool replaces it, and a query it was running fails and is answered 503.
  pool.on('error', () => {})
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}
