import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import type { Pool, PoolClient, QueryResult } from 'pg'
import { isPostgresConnectionSpent } from '../store-errors.js'

export interface Deadlines {
  /** Longest wait for a connection: a new one, or a free one of the pool's. */
  connectMs: number
  /** Longest wait for one statement's answer; also the longest a transaction may sit idle on the server. */
  statementMs: number
}

const EMPTY_RESULT: PostgresQueryResult<never> = { command: 'SELECT', rowCount: 0, rows: [] }

/**
 * The pool Kysely is given: each statement has a client-side deadline (pg's `query_timeout`, set on the
 * pool), and a client that missed one, lost its connection or found the database read-only (see
 * isPostgresConnectionSpent) is destroyed on release rather than reused: pg would hand it out again
 * (with a late statement still owed ahead of the next one), and Kysely releases clients without
 * saying whether they failed.
 *
 * Every transaction also sets the same deadlines on the server (`set local`, which works through
 * PgBouncer in transaction mode, unlike a startup parameter): a statement waiting for a lock held by a
 * frozen instance ends, and so does that instance's transaction, which would otherwise hold the lock.
 *
 * The `begin` waits to go with the transaction's first statement when that one has no parameters (the
 * locks every create takes first): a round trip each transaction saves, while the group of creates
 * waiting for it grows.
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
  let spent = false
  let beginOwed = false
  const send = async (sql: string, parameters: readonly unknown[]): Promise<QueryResult> => {
    if (!beginOwed) return await client.query(sql, parameters as unknown[])
    beginOwed = false
    // Statements without parameters go as one simple query, several in a round trip, each with its result.
    if (parameters.length === 0) return (await client.query(`${begin}; ${sql}`) as unknown as QueryResult[]).at(-1)!
    await client.query(begin)
    return await client.query(sql, parameters as unknown[])
  }
  return {
    query: async (sql: string, parameters: readonly unknown[]) => {
      if (sql === 'begin') {
        beginOwed = true
        return EMPTY_RESULT
      }
      // A transaction that sent nothing has nothing to end.
      if (beginOwed && (sql === 'commit' || sql === 'rollback')) {
        beginOwed = false
        return EMPTY_RESULT
      }
      // A spent session's transaction is rolled back by the server as the connection is destroyed: a
      // rollback sent down a dead connection would only fail, and its error would replace the one that says why.
      if (spent && sql === 'rollback') return EMPTY_RESULT
      try {
        const result = await send(sql, parameters)
        if (sql === 'commit') committed()
        return result
      } catch (error) {
        spent ||= isPostgresConnectionSpent(error)
        // Likewise a rollback that fails (times out, say): the connection is destroyed on release,
        // which rolls the transaction back, and the error that called for the rollback is the one thrown.
        if (sql === 'rollback') {
          spent = true
          return EMPTY_RESULT
        }
        throw error
      }
    },
    release: () => { client.release(spent) }
  } as unknown as PostgresPoolClient // only the (sql, parameters) form: no cursor is configured
}
