import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDialectConfig } from 'kysely'

/**
 * Starts every transaction with BEGIN IMMEDIATE, which takes SQLite's write lock up front. Kysely's
 * plain BEGIN defers it, so two processes on one file (instances, or the CLI beside a server) could
 * both read, then one fail to write; migrating at once is the case that matters: now the second
 * waits (busy_timeout) and then finds the migrations applied. Every transaction here writes.
 */
class ImmediateTransactionSqliteDriver extends SqliteDriver {
  override async beginTransaction (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
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
}
