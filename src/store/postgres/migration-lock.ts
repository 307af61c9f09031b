import { PostgresAdapter, PostgresDialect, type DialectAdapter, type PostgresDialectConfig } from 'kysely'
import type { Client } from 'pg'
import { endWithin } from './bounded-end.js'

// Kysely's own lock id: a migrator of an earlier build, holding Kysely's session lock, still excludes this one.
const MIGRATION_LOCK_ID = '3853314791062309107'
// PostgreSQL's error when lock_timeout ends a wait.
const LOCK_NOT_AVAILABLE = '55P03'
/**
 * The longest wait for another process's migrations, in statement deadlines (a minute by default):
 * those of a deploy's first instance may take many statements; a migrator frozen holds them forever.
 */
export const MIGRATION_WAIT_STATEMENTS = 12

/**
 * PostgreSQL as Kysely's dialect, but with the migrations' lock held by a transaction of a connection
 * of its own. Kysely's migrator takes a session-level advisory lock, which PgBouncer in transaction
 * mode cannot keep: the lock stays on whichever server connection took it, the unlock runs on
 * another, and the next migrator (a CLI command, an instance starting) waits for it forever. A
 * transaction keeps its server connection through a pooler; ending the connection ends the
 * transaction and frees the lock, a crashed migrator's too.
 */
export class TransactionLockDialect extends PostgresDialect {
  constructor (config: PostgresDialectConfig, private readonly connect: () => Promise<Client>, private readonly lockTimeoutMs: number, private readonly endMs: number) {
    super(config)
  }

  override createAdapter (): DialectAdapter {
    return new TransactionLockAdapter(this.connect, this.lockTimeoutMs, this.endMs)
  }
}

class TransactionLockAdapter extends PostgresAdapter {
  // One migrator at a time per store: the lock itself is what makes the next one wait.
  #holder: Client | undefined

  /** `endMs`: the longest wait for the lock's connection to close (see endWithin). */
  constructor (private readonly connect: () => Promise<Client>, private readonly lockTimeoutMs: number, private readonly endMs: number) {
    super()
  }

  /**
   * Waits for the lock at most `lockTimeoutMs`: a migrator that is stuck or frozen holds it for as long
   * as its connection lasts, and every start and CLI command would wait for it without a word.
   */
  override async acquireMigrationLock (): Promise<void> {
    const client = await this.connect()
    try {
      await client.query('begin')
      await client.query(`set local lock_timeout = ${this.lockTimeoutMs}`)
      await client.query('select pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_ID])
    } catch (error) {
      await endWithin(client, this.endMs).catch(() => {})
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error
      throw new Error(`Another process has held the migrations' lock for over ${this.lockTimeoutMs / 1000} s (a migration under way, or a migrator stuck or frozen: ` +
        `pg_locks shows it as the advisory lock ${MIGRATION_LOCK_ID}); try again once it is done, or raise DATABASE_STATEMENT_TIMEOUT_MS (the wait is ${MIGRATION_WAIT_STATEMENTS} times it)`, { cause: error })
    }
    this.#holder = client
  }

  override async releaseMigrationLock (): Promise<void> {
    const holder = this.#holder
    this.#holder = undefined
    if (holder !== undefined) await endWithin(holder, this.endMs)
  }
}
