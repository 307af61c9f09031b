import type SqliteDatabase from 'better-sqlite3'
import { CompiledQuery } from 'kysely'
import type { Db } from './database.js'

const connections = new WeakMap<Db, SqliteDatabase.Database>()
const statements = new WeakMap<SqliteDatabase.Database, Map<string, SqliteDatabase.Statement>>()
// better-sqlite3 builds five wrapper functions for each `transaction(fn)`: one, made once per
// connection, runs every write transaction.
const transactions = new WeakMap<SqliteDatabase.Database, SqliteDatabase.Transaction<(work: () => unknown) => unknown>>()

/** Lets `sqliteRead` and `sqliteTransactionNow` run straight on the better-sqlite3 connection of `db`. */
export function allowDirectAccess (db: Db, connection: SqliteDatabase.Database): void {
  connections.set(db, connection)
  statements.set(connection, new Map())
  transactions.set(connection, connection.transaction((work: () => unknown) => work()))
}

/**
 * Runs a hot read. On a SQLite store whose connection is free, it runs straight on better-sqlite3:
 * Kysely's executor (connection lock, promises, result wrapping) costs as much as a small query
 * itself. While a transaction is open on the connection (a group commit, between its statements),
 * its uncommitted rows must not be seen, so the read goes through Kysely and waits for it to end, as
 * every read does on PostgreSQL.
 */
export async function sqliteRead<Row> (db: Db, sql: string, parameters: readonly unknown[]): Promise<Row[]> {
  const connection = connections.get(db)
  if (connection === undefined || connection.inTransaction) {
    return (await db.executeQuery(CompiledQuery.raw(sql, [...parameters]))).rows as Row[]
  }
  return prepare(connection, sql).all(...parameters) as Row[]
}

/** A statement run on the connection, returning its rows (those of RETURNING for a write). */
export type DirectQuery = <Row>(sql: string, parameters: readonly unknown[]) => Row[]

/**
 * Runs `work` as one write transaction (BEGIN IMMEDIATE), synchronously, straight on a free SQLite
 * connection: the hot write path, without a promise per statement. Undefined, with nothing done,
 * when that cannot be (PostgreSQL, every query logged, or a transaction already open on the
 * connection): the caller then runs its transaction through Kysely.
 */
export function sqliteTransactionNow<T> (db: Db, work: (query: DirectQuery) => T): T | undefined {
  const connection = connections.get(db)
  if (connection === undefined || connection.inTransaction) return undefined
  const query: DirectQuery = <Row>(sql: string, parameters: readonly unknown[]) => {
    const statement = prepare(connection, sql)
    return (statement.reader ? statement.all(...parameters) : (statement.run(...parameters), [])) as Row[]
  }
  return transactions.get(connection)!.immediate(() => work(query)) as T
}

function prepare (connection: SqliteDatabase.Database, sql: string): SqliteDatabase.Statement {
  const prepared = statements.get(connection)!
  let statement = prepared.get(sql)
  if (statement === undefined) {
    statement = connection.prepare(sql)
    prepared.set(sql, statement)
  }
  return statement
}

/**
 * The path of the SQLite file under `db`; undefined for PostgreSQL, an in-memory store, or a store
 * whose every query must reach the log (see `allowDirectAccess`).
 */
export function sqliteFileOf (db: Db): string | undefined {
  const connection = connections.get(db)
  return connection === undefined || connection.memory ? undefined : connection.name
}
