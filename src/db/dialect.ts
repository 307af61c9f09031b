import { PostgresAdapter, type Kysely } from 'kysely'

/** True when the store is PostgreSQL (or compatible); false for SQLite. */
export function isPostgres (db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}
