import type SqliteDatabase from 'better-sqlite3'
import { CompiledQuery } from 'kysely'
import type { Db } from './database.js'

const connections = new WeakMap<Db, SqliteDatabase.Database>()
const statements = new WeakMap<SqliteDatabase.Database, Map<string, SqliteDatabase.Statement>>()

/** Lets `sqliteRead` run reads of `db` straight on its better-sqlite3 connection. */
export function allowDirectReads (db: Db, connection: SqliteDatabase.Database): void {
  connections.set(db, connection)
  statements.set(connection, new Map())
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
  const prepared = statements.get(connection)!
  let statement = prepared.get(sql)
  if (statement === undefined) {
    statement = connection.prepare(sql)
    prepared.set(sql, statement)
  }
  return statement.all(...parameters) as Row[]
}
