import { Kysely, sql } from 'kysely'
import type { Client, Pool } from 'pg'
import { systemClock, type Clock } from '../../clock.js'
import type { Database } from '../../db/database.js'
import type { Store, StoreLog } from '../store.js'
import { markConnectionRefused } from '../store-errors.js'
import { NOTIFY_UNFLUSHED, PET_CHANGES_CHANNEL, PostgresChangeFeed } from './change-feed.js'
import { endingWithin } from './bounded-end.js'
import { DatabaseClock, type ServerTimeReading } from './database-clock.js'
import { deadlinePool, type Deadlines } from './deadline-pool.js'
import { MIGRATION_WAIT_STATEMENTS, TransactionLockDialect } from './migration-lock.js'
import { PostgresPetStore } from './postgres-pet-store.js'
import { preparedStatements } from './prepared-statements.js'

const PG_INT8 = 20
const CLIENT_MARGIN_MS = 250

export interface PostgresStoreOptions {
  /** A direct connection to the database, for what a pooler in transaction mode cannot pass (LISTEN); the store's own URL when unset. */
  directUrl: string | undefined
  /** Connections this instance keeps at most. */
  poolSize: number
  deadlines: Deadlines
  /** The server's time of day when unset (see DatabaseClock). */
  clock: Clock | undefined
  log: StoreLog
}

/**
 * Opens a PostgreSQL store over a pool of connections, shared by many instances of the service; its
 * reads of pets are cached while the change feed says no pet changed (see PostgresChangeFeed).
 */
export function openPostgresStore (connectionString: string, { directUrl, poolSize, deadlines, clock, log }: PostgresStoreOptions): Store {
  // pg is loaded only when PostgreSQL is used: it adds a tenth of a second to every SQLite start.
  let shared: Promise<Pool> | undefined
  const storeClock = clock ?? new DatabaseClock(systemClock, log)
  const serverClock = storeClock instanceof DatabaseClock ? storeClock : undefined
  let closed = false
  const connections = async () => {
    if (closed) throw new Error('The PostgreSQL store is closed')
    const pool = await (shared ??= createPool(connectionString, poolSize, deadlines))
    // Before the first statement: what a process stores or compares is dated by the server's clock.
    if (serverClock !== undefined && !serverClock.isKnown) await serverClock.known(async () => await readServerTime(pool, serverClock.elapsed))
    return pool
  }
  const feed = new PostgresChangeFeed({
    connectionString: directUrl ?? connectionString,
    notify: async (payload) => { await (await connections()).query(NOTIFY_UNFLUSHED, [PET_CHANGES_CHANNEL, payload]) },
    connectMs: deadlines.connectMs,
    log
  })
  const pool = async () => deadlinePool(await connections(), deadlines, () => { feed.changed() })
  const migrationWaitMs = MIGRATION_WAIT_STATEMENTS * deadlines.statementMs
  const db = new Kysely<Database>({ dialect: new TransactionLockDialect({ pool }, async () => await connectOnce(connectionString, deadlines.connectMs, migrationWaitMs), migrationWaitMs, deadlines.connectMs) })
  // The hot statements go to pg without Kysely: a constant statement needs no query builder.
  const query = preparedStatements(connections, { named: directUrl === undefined, log })
  return {
    dialect: 'postgres',
    db,
    pets: new PostgresPetStore({
      db,
      query,
      version: () => feed.version(),
      changed: () => { feed.changed() },
      lockTimeoutMs: deadlines.statementMs,
      clock: storeClock
    }),
    clock: storeClock,
    ping: async () => { await sql`select 1`.execute(db) },
    close: async () => {
      if (closed) return
      closed = true
      serverClock?.stop()
      await feed.close()
      await db.destroy()
      await (await shared)?.end()
    }
  }
}

/**
 * The server's time of day, its statement timed on `elapsed` once a connection is had: the wait for
 * one (a new connection, a frozen server) is no part of the round trip. `clock_timestamp()`, unlike
 * `now()`, is not the transaction's start.
 */
async function readServerTime (pool: Pool, elapsed: () => number): Promise<ServerTimeReading> {
  const client = await pool.connect()
  try {
    const sentAt = elapsed()
    const { rows } = await client.query<{ ms: number }>('select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms')
    const reading = { serverTime: rows[0]!.ms, sentAt, answeredAt: elapsed() }
    client.release()
    return reading
  } catch (error) {
    client.release(error as Error) // not reused: a statement that timed out may leave it busy
    throw error
  }
}

async function createPool (connectionString: string, poolSize: number, { connectMs, statementMs }: Deadlines): Promise<Pool> {
  const { default: pg } = await import('pg')
  // Closed within the connection deadline, even by a server frozen as the pool says goodbye.
  const pool = endingWithin(new pg.Pool({
    connectionString,
    max: poolSize,
    Client: refusalMarkingClient(pg.Client),
    // A database that is down or frozen turns into a 503 within these, instead of a request that hangs.
    connectionTimeoutMillis: connectMs,
    // The client waits a little longer than the server's statement_timeout, so that inside a
    // transaction the server ends a statement first and the connection stays usable.
    query_timeout: statementMs + CLIENT_MARGIN_MS,
    // int8 (ids, categoryId) as BigInt, exact; pg's default is a string.
    types: { getTypeParser: (oid: number, format?: string) => oid === PG_INT8 ? BigInt : pg.types.getTypeParser(oid, format as 'text') }
  }), connectMs)
  // A connection lost while idle (pool 'error') or checked out (client 'error') must not crash the
  // process: the pool replaces it, and a query it was running fails and is answered 503.
  pool.on('error', () => {})
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}

/**
 * pg's Client, whose failures to connect are marked as the store's (see markConnectionRefused): a
 * server that refuses a session (a wrong password, a database closed to connections or gone, too
 * many clients) does so with codes a statement may also fail with, so only where the error comes
 * from tells it apart. The pool connects with a callback.
 */
function refusalMarkingClient (PgClient: typeof Client): typeof Client {
  return class RefusalMarkingClient extends PgClient {
    override connect (): Promise<Client>
    override connect (callback: (error: Error) => void): void
    override connect (callback?: (error: Error) => void): Promise<Client> | undefined {
      if (callback === undefined) return super.connect().catch((error: unknown) => { throw markConnectionRefused(error) })
      super.connect((error: Error) => { callback(error === null || error === undefined ? error : markConnectionRefused(error) as Error) })
      return undefined
    }
  }
}

/** A connection of its own, outside the pool (see TransactionLockDialect). */
async function connectOnce (connectionString: string, connectMs: number, lockWaitMs: number): Promise<Client> {
  const { default: pg } = await import('pg')
  // The lock's wait is bounded by the server (lock_timeout); a frozen server's, by the client.
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: connectMs, query_timeout: lockWaitMs + CLIENT_MARGIN_MS })
  client.on('error', () => {}) // a lost connection fails the lock's query, or frees the lock
  await client.connect().catch((error: unknown) => { throw markConnectionRefused(error) })
  return client
}
