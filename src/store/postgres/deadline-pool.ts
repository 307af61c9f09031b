import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import type { Pool, PoolClient } from 'pg'
import { isPostgresConnectionLost } from '../store-errors.js'

export interface Deadlines {
  /** Longest wait for a connection: a new one, or a free one of the pool's. */
  connectMs: number
  /** Longest wait for one statement's answer; also the longest a transaction may sit idle on the server. */
  statementMs: number
}

const EMPTY_RESULT: PostgresQueryResult<never> = { command: 'SELECT', rowCount: 0, rows: [] }

/**
 * The pool Kysely is given: each statement has a client-side deadline (pg's `query_timeout`, set on the
 * pool), and a client that missed one or lost its connection is destroyed on release rather than reused:
 * pg would hand it out again with the late statement still owed ahead of the next one, and Kysely
 * releases clients without saying whether they failed.
 *
 * Every transaction also sets the same deadlines on the server (`set local`, which works through
 * PgBouncer in transaction mode, unlike a startup parameter): a statement waiting for a lock held by a
 * frozen instance ends, and so does that instance's transaction, which would otherwise hold the lock.
 *
 * `committed` is called when a commit succeeds, before Kysely's transaction resolves. The pool is
 * ended by its owner, not by Kysely: the store's reads share it.
 */
export function deadlinePool (pool: Pool, { statementMs }: Deadlines, committed: () => void): PostgresPool {
  const begin = `begin; set local statement_timeout = ${statementMs}; set local idle_in_transaction_session_timeout = ${statementMs}`
  return {
    connect: async () => clientWithDeadlines(await pool.connect(), begin, committed),
    end: async () => {}
  }
}

function clientWithDeadlines (client: PoolClient, begin: string, committed: () => void): PostgresPoolClient {
  let lost = false
  return {
    query: async (sql: string, parameters: readonly unknown[]) => {
      // A lost session's transaction is rolled back by the server: a rollback sent down the dead
      // connection would only fail, and its error would replace the one that says why.
      if (lost && sql === 'rollback') return EMPTY_RESULT
      try {
        // Kysely sends "begin" without parameters, so pg sends it as a simple query, where several
        // statements may go in one round trip.
        const result = await client.query(sql === 'begin' ? begin : sql, parameters as unknown[])
        if (sql === 'commit') committed()
        return result
      } catch (error) {
        lost ||= isPostgresConnectionLost(error)
        // Likewise a rollback that fails (times out, say): the connection is destroyed on release,
        // which rolls the transaction back, and the error that called for the rollback is the one thrown.
        if (sql === 'rollback') {
          lost = true
          return EMPTY_RESULT
        }
        throw error
      }
    },
    release: () => { client.release(lost) }
  } as unknown as PostgresPoolClient // only the (sql, parameters) form: no cursor is configured
}
