import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kysely } from 'kysely'
import type { Clock } from '../../clock.js'
import type { Database } from '../../db/database.js'
import type { Store, StoreLog, Durability } from '../store.js'
import { PetWriterThread } from './pet-writer-thread.js'
import { SqliteConnection } from './sqlite-connection.js'
import { MultiProcessSqliteDialect } from './sqlite-dialect.js'
import { SqlitePetStore } from './sqlite-pet-store.js'
import { AUTOCHECKPOINT_SAFETY_NET_PAGES, SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES, WalCheckpointer } from './wal-checkpointer.js'
import { WalIndexStamp } from './wal-index-stamp.js'

export interface SqliteStoreOptions {
  durability: Durability
  clock: Clock
  log: StoreLog
  /** How long after opening the WAL checkpoint thread starts (see WalCheckpointer); tests shorten it. */
  checkpointStartDelayMs?: number
}

// Asked of the reading connection, which never writes: data_version changes whenever another
// connection (this process's writer included) commits, schema changes included.
const DATA_VERSION = 'select data_version as version from pragma_data_version'

/**
 * Opens a SQLite store: `path` is a file, made if missing, or `:memory:` for a throw-away store (a
 * file in the system's temporary folder, removed on close, so that it works exactly as a file does).
 * Two connections: one writes (group commits, Kysely's queries), one reads the hot paths, so that a
 * read never sees what an open transaction has not committed. Beside them, a thread checkpoints the
 * WAL, and under DURABILITY=strict another one commits creates (see PetWriterThread).
 */
export function openSqliteStore (path: string, { durability, clock, log, checkpointStartDelayMs }: SqliteStoreOptions): Store {
  const temporaryDir = path === ':memory:' ? mkdtempSync(join(tmpdir(), 'petstore-memory-')) : undefined
  const file = temporaryDir === undefined ? path : join(temporaryDir, 'petstore.db')
  const writer = new SqliteConnection(file, durability)
  const db = new Kysely<Database>({ dialect: new MultiProcessSqliteDialect({ database: writer.forKysely() }) })
  const reader = new SqliteConnection(file, durability, { queryOnly: true })
  const wal = writer.setting('journal_mode') === 'wal'

  let checkpointer: WalCheckpointer | undefined
  if (wal) {
    writer.setting(`wal_autocheckpoint = ${AUTOCHECKPOINT_SAFETY_NET_PAGES}`)
    checkpointer = new WalCheckpointer(file, {
      onCheckpointError: (err) => log.warn({ err }, 'a WAL checkpoint failed; it is tried again'),
      onFailure: (err) => {
        log.error({ err }, 'the WAL checkpoint thread failed: commits checkpoint the store again')
        writer.setting(`wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES}`)
      }
    }, checkpointStartDelayMs)
  }
  const writerThread = durability !== 'strict' ? undefined : new PetWriterThread(
    { path: file, durability, autocheckpointPages: wal ? AUTOCHECKPOINT_SAFETY_NET_PAGES : SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES },
    (err) => log.error({ err }, 'the pet writer thread failed: pets are now committed on the main thread')
  )
  const walIndex = walIndexOf(reader)
  const commitVersion = walIndex === undefined ? dataVersionOf(reader) : () => walIndex.read()

  const close = async () => {
    await writerThread?.close()
    await checkpointer?.close()
    walIndex?.close()
    await db.destroy()
    reader.close()
    writer.close()
    if (temporaryDir !== undefined) rmSync(temporaryDir, { recursive: true, force: true })
  }
  let closed: Promise<void> | undefined
  return {
    dialect: 'sqlite',
    db,
    pets: new SqlitePetStore({ db, writer, reader, writerThread, commitVersion, clock }),
    clock,
    ping: async () => {
      writer.checkFile()
      reader.query('select 1')
      // What every cached read looks at first: a disk failing under a warm cache answers nothing else.
      commitVersion()
    },
    close: async () => { await (closed ??= close()) }
  }
}

/**
 * The WAL index to read commits from (see WalIndexStamp), when what that relies on holds: WAL mode,
 * normal locking (exclusive locking keeps the index in private memory) and a `-shm` file that the
 * reading connection has opened. Otherwise undefined, and the reader asks SQLite instead.
 */
export function walIndexOf (reader: SqliteConnection): WalIndexStamp | undefined {
  reader.query('select count(*) from sqlite_schema') // a first read transaction opens the WAL index
  // SQLite names the WAL index after the database file, its symbolic links resolved.
  const shm = `${realpathSync(reader.path)}-shm`
  const usable = reader.setting('journal_mode') === 'wal' && reader.setting('locking_mode') === 'normal' && existsSync(shm)
  return usable ? new WalIndexStamp(shm) : undefined
}

/** What changes with every commit of another connection to the file, asked of SQLite: the fallback where the WAL index cannot be read. */
export function dataVersionOf (reader: SqliteConnection): () => string {
  return () => String(reader.query<{ version: bigint }>(DATA_VERSION)[0]!.version)
}
