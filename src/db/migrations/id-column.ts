import type { CreateTableBuilder, Kysely } from 'kysely'
import { isPostgres } from '../dialect.js'

/** An int64 id assigned by the store in increasing order and never reused, in either dialect. */
export function withIdColumn<T extends string> (db: Kysely<unknown>, table: CreateTableBuilder<T>): CreateTableBuilder<T, 'id'> {
  if (isPostgres(db)) {
    return table.addColumn('id', 'bigint', (col) => col.primaryKey().generatedByDefaultAsIdentity())
  }
  // SQLite: AUTOINCREMENT keeps ids of deleted rows from coming back.
  return table.addColumn('id', 'integer', (col) => col.primaryKey().autoIncrement())
}
