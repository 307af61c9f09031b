import {
  CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver,
  type DatabaseConnection, type DialectAdapter, type Driver, type SqliteDialectConfig
} from 'kysely'
import { BEGIN_WRITE } from './sqlite-connection.js'

/**
 * Starts every transaction with BEGIN IMMEDIATE, which takes SQLite's write lock up front. Kysely's
 * plain BEGIN defers it, so two processes on one file (instances, or the CLI beside a server) could
 * both read, then one fail to write. Every transaction here writes.
 */
class ImmediateTransactionSqliteDriver extends SqliteDriver {
  override async beginTransaction (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(BEGIN_WRITE))
  }

  // After some errors (a full disk, an I/O error) SQLite has rolled the transaction back itself; the
  // rollback that follows then fails, and Kysely would throw that failure instead of the error that
  // caused it (SQLITE_FULL, answered 503, would become a 500).
  override async rollbackTransaction (connection: DatabaseConnection): Promise<void> {
    try {
      await super.rollbackTransaction(connection)
    } catch (error) {
      if (!/no transaction is active/.test((error as Error).message)) throw error
    }
  }
}

/**
 * SQLite's DDL is transactional, but Kysely's adapter says otherwise, so its migrator would run
 * migrations outside any transaction: two processes migrating a new file at once would both create
 * the tables. Saying so runs all pending migrations in one immediate transaction: the second process
 * waits (busy_timeout), then finds them applied; a failed migration leaves nothing behind.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl (): boolean {
    return true
  }
}

/** SQLite through better-sqlite3, safe for several processes on one file. */
export class MultiProcessSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig

  constructor (config: SqliteDialectConfig) {
    super(config)
    this.#config = config
  }

  override createDriver (): Driver {
    return new ImmediateTransactionSqliteDriver(this.#config)
  }

  override createAdapter (): DialectAdapter {
    return new TransactionalDdlSqliteAdapter()
  }
}
