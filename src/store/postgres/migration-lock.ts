import { PostgresAdapter, PostgresDialect, type DialectAdapter, type PostgresDialectConfig } from 'kysely'
import type { Client } from 'pg'

// Kysely's own lock id: a migrator of an earlier build, holding Kysely's session lock, still excludes this one.
const MIGRATION_LOCK_ID = '3853314791062309107'

/**
 * PostgreSQL as Kysely's dialect, but with the migrations' lock held by a transaction of a connection
 * of its own. Kysely's migrator takes a session-level advisory lock, which PgBouncer in transaction
 * mode cannot keep: the lock stays on whichever server connection took it, the unlock runs on
 * another, and the next migrator (a CLI command, an instance starting) waits for it forever. A
 * transaction keeps its server connection through a pooler; ending the connection ends the
 * transaction and frees the lock, a crashed migrator's too.
 */
export class TransactionLockDialect extends PostgresDialect {
  constructor (config: PostgresDialectConfig, private readonly connect: () => Promise<Client>) {
    super(config)
  }

  override createAdapter (): DialectAdapter {
    return new TransactionLockAdapter(this.connect)
  }
}

class TransactionLockAdapter extends PostgresAdapter {
  // One migrator at a time per store: the lock itself is what makes the next one wait.
  #holder: Client | undefined

  constructor (private readonly connect: () => Promise<Client>) {
    super()
  }

  override async acquireMigrationLock (): Promise<void> {
    const client = await this.connect()
    try {
      await client.query('begin')
      await client.query('select pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_ID])
    } catch (error) {
      await client.end().catch(() => {})
      throw error
    }
    this.#holder = client
  }

  override async releaseMigrationLock (): Promise<void> {
    const holder = this.#holder
    this.#holder = undefined
    await holder?.end()
  }
}
