import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import type { SqliteDatabase as KyselySqliteDatabase } from 'kysely'
import type { Durability } from '../store.js'
import { storeFileFault } from '../store-errors.js'
import { makeFolder } from './make-folder.js'

// Once open: better-sqlite3 waits synchronously, stalling every request meanwhile: long enough for
// another process's short transactions (a batch of `pets import` included), short enough that writes
// refused back to back while a process holds the lock still leave the loop turning (0.5 s did not:
// the service shed load, reads and /healthz included). Past it: 503.
const BUSY_TIMEOUT_MS = 100
// While opening (set first, so that even switching to WAL waits for another process holding the
// file), before any request is served: another process may hold it longer than a request could
// wait (its own opening, its migrations), and an instance started beside one failed to start with
// "database is locked".
const OPEN_BUSY_TIMEOUT_MS = 5000
const STATEMENT_CACHE_SIZE = 200
/**
 * The size the WAL file is cut back to when it starts over, on the commit that starts it over.
 * SQLite keeps it at its largest otherwise: a long run of small commits (a webhook backlog delivered,
 * about a thousand a second) takes it to the commits' own checkpoint threshold (40 MB, see
 * WalCheckpointer), which stays on disk until the last connection closes.
 */
export const WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024
/** The most pages a step of an online backup may copy (better-sqlite3's bound): all of them. */
const ALL_PAGES = 0x7fffffff
/** How every transaction of Kysely's begins (see MultiProcessSqliteDialect): each one writes. */
export const BEGIN_WRITE = 'begin immediate'

/**
 * One better-sqlite3 connection to a store file with the service's settings, its prepared statements
 * kept by their SQL (Kysely would prepare every query anew, which cost a sixth of a request; the
 * queries here take their values as parameters, so a few statements serve them all), and one
 * transaction function (better-sqlite3 builds five wrappers for each `transaction(fn)`).
 */
export class SqliteConnection {
  readonly #sqlite: SqliteDatabase.Database
  readonly #statements = new Map<string, SqliteDatabase.Statement>()
  readonly #transaction: SqliteDatabase.Transaction<(work: () => unknown) => unknown>
  readonly #path: string
  /** The file opened, as the file system tells files apart. */
  readonly #file: FileId
  /**
   * Its write-ahead log, once seen: SQLite makes it with the file's first write (for a file with
   * content, when the connection opens), and keeps it while any connection is open.
   */
  #wal: FileId | undefined

  /** `queryOnly` refuses every write on this connection, for one that serves reads alone. */
  constructor (path: string, durability: Durability, { queryOnly = false } = {}) {
    makeFolder(dirname(resolve(path)))
    if (!queryOnly) refuseReadOnly(path)
    this.#sqlite = new SqliteDatabase(path)
    this.#path = path
    this.#file = statSync(path)
    this.#sqlite.pragma(`busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`)
    // WAL with synchronous=NORMAL: a commit survives a crash of the process, not a power loss; FULL
    // syncs the WAL on every commit (group commit keeps that affordable).
    this.#sqlite.pragma('journal_mode = WAL')
    this.#sqlite.pragma(durability === 'strict' ? 'synchronous = FULL' : 'synchronous = NORMAL')
    if (queryOnly) this.#sqlite.pragma('query_only = ON')
    this.#sqlite.pragma('foreign_keys = ON')
    this.#sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
    // int64 columns (ids, categoryId) must round-trip exactly, also above 2^53.
    this.#sqlite.defaultSafeIntegers(true)
    this.#sqlite.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    this.#transaction = this.#sqlite.transaction((work: () => unknown) => work())
  }

  /** The file's name as SQLite resolved it. */
  get path (): string {
    return this.#sqlite.name
  }

  /** A setting of the connection, such as `journal_mode`, as one value. */
  setting (name: string): unknown {
    return this.#sqlite.pragma(name, { simple: true })
  }

  /** Runs a statement and returns its rows (those of RETURNING for a write; none for other writes). */
  query<Row> (sql: string, parameters: readonly unknown[] = []): Row[] {
    const statement = this.#prepare(sql)
    if (statement.reader) return statement.all(...parameters) as Row[]
    statement.run(...parameters)
    return []
  }

  /** Runs a statement that returns no rows: how many rows it changed, and the rowid of the last row it inserted. */
  run (sql: string, parameters: readonly unknown[] = []): { changes: number, lastInsertRowid: bigint } {
    // Safe integers are on: the rowid comes as a BigInt.
    return this.#prepare(sql).run(...parameters) as { changes: number, lastInsertRowid: bigint }
  }

  /** Runs `work` as one write transaction (BEGIN IMMEDIATE, which takes the write lock up front). */
  writeTransaction<T> (work: () => T): T {
    // Never a savepoint in a transaction left open (by a rollback that failed, say): its work would
    // be answered as committed while nothing is.
    if (this.#sqlite.inTransaction) throw new Error('A transaction is already open on this connection')
    this.checkFile()
    return this.#transaction.immediate(work) as T
  }

  /**
   * Throws SQLite's SQLITE_READONLY_DBMOVED (a store fault: 503) when the path no longer names the
   * file this connection has open, or its `-wal` path the write-ahead log it has open: deleted or
   * replaced under the running service, SQLite would go on committing to the files it has open, and
   * every write acknowledged since the last checkpoint would be gone with the process (a deleted log
   * alone lost the creates of the last tenth of a second before a `kill -9`). Two `stat` calls a write
   * transaction, a few microseconds.
   */
  checkFile (): void {
    const wal = statOf(`${this.#path}-wal`)
    this.#wal ??= wal
    const moved = !sameFile(statOf(this.#path), this.#file) ? `The store file ${this.#path}` :
      this.#wal !== undefined && !sameFile(wal, this.#wal) ? `The store's write-ahead log ${this.#path}-wal` :
        undefined
    if (moved === undefined) return
    throw Object.assign(new Error(`${moved} was deleted or replaced while open: writes are refused, as they would be lost; restart the service on the file as it should be`), {
      code: 'SQLITE_READONLY_DBMOVED'
    })
  }

  /**
   * Copies the database, as committed at one moment, to `destination` (SQLite's online backup): the
   * pages of the file and of the WAL, where a copy of the file alone lacks every commit not yet
   * checkpointed into it. All pages in one step after the first: a commit by another connection
   * between steps starts the copy over, and under a steady flow of commits 100 pages a step (the
   * default) might never end.
   */
  async backup (destination: string): Promise<void> {
    await this.#sqlite.backup(destination, { progress: () => ALL_PAGES })
  }

  /** The connection as Kysely's SQLite dialect takes it, sharing these prepared statements; closed by `close()` only. */
  forKysely (): KyselySqliteDatabase {
    return {
      // Every transaction begins so (checked once, there), and a write outside one (an UPDATE, say) is a statement that writes.
      prepare: (sql) => {
        const statement = this.#prepare(sql)
        if (sql === BEGIN_WRITE || (!statement.readonly && !this.#sqlite.inTransaction)) this.checkFile()
        return statement
      },
      close: () => {}
    }
  }

  close (): void {
    this.#sqlite.close()
  }

  #prepare (sql: string): SqliteDatabase.Statement {
    let statement = this.#statements.get(sql)
    if (statement === undefined) {
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) this.#statements.clear()
      statement = this.#sqlite.prepare(sql)
      this.#statements.set(sql, statement)
    }
    return statement
  }
}

/** A file as the file system tells files apart. */
interface FileId {
  dev: number
  ino: number
}

function sameFile (file: FileId | undefined, opened: FileId): boolean {
  return file?.dev === opened.dev && file.ino === opened.ino
}

/** The file at `path`, undefined if there is none; a store fault if the system cannot tell (see storeFileFault). */
function statOf (path: string): FileId | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false })
  } catch (error) {
    throw storeFileFault(error, path)
  }
}

/**
 * Throws unless this process may write to the file and to its -wal and -shm files where they exist:
 * SQLite opens one it may not read-only, without a word, and a service started on it, ready, answered
 * every write 503. Nor unless it may make files in its folder, where they are not made yet: SQLite's
 * words were "attempt to write a readonly database", naming no folder. SQLite keeps them beside the
 * file a link leads to.
 */
function refuseReadOnly (path: string): void {
  const uid = process.getuid?.() ?? 'unknown'
  const file = existsSync(path) ? realpathSync(path) : resolve(path)
  const folder = dirname(file)
  const tryWriting = (target: string, what: string) => {
    try {
      accessSync(target, constants.W_OK)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      throw Object.assign(new Error(`this process (uid ${uid}) may not write to ${what} (${code})`, { cause: error }), { code })
    }
  }
  const named = [[file, 'it'], [`${file}-wal`, `${file}-wal`], [`${file}-shm`, `${file}-shm`]] as const
  const existing = named.filter(([target]) => existsSync(target))
  for (const [target, what] of existing) tryWriting(target, what)
  if (existing.length < named.length) tryWriting(folder, `its folder ${folder}, where SQLite makes the store's files`)
}
