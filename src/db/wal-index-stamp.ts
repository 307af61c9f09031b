import { closeSync, openSync, readSync } from 'node:fs'
import type { Db } from './database.js'

// The first of the two copies of the wal-index header (https://www.sqlite.org/walformat.html).
const HEADER_BYTES = 48

/**
 * Tells, with one read of 48 bytes, whether anything was committed to a SQLite store in WAL mode:
 * every commit, by any connection of any process, schema changes included, rewrites the header of
 * the WAL index (the `-shm` file: a change counter, the last frame, checksums), and SQLite compares
 * that same header to learn that a database changed. Asking SQLite (`data_version`) opens a read
 * transaction, whose file locks cost a cached listPets a fifth of its time.
 *
 * A header read while a commit writes it differs from the one before: the cache it guards is then
 * dropped once more than needed, never kept stale. Reads after a commit returned see its header, as
 * SQLite maps the file shared and the kernel keeps one copy of its pages.
 */
export class WalIndexStamp {
  readonly #path: string
  readonly #header = Buffer.alloc(HEADER_BYTES)
  #fd: number | undefined

  /** `path` is the `-shm` file of a store that the caller opened in WAL mode and keeps open. */
  constructor (path: string) {
    this.#path = path
  }

  /** The header as text; undefined while there is no WAL index to read (before the first query). */
  read (): string | undefined {
    try {
      this.#fd ??= openSync(this.#path, 'r')
    } catch {
      return undefined
    }
    const length = readSync(this.#fd, this.#header, 0, HEADER_BYTES, 0)
    return length === HEADER_BYTES ? this.#header.toString('latin1') : undefined
  }

  close (): void {
    if (this.#fd !== undefined) closeSync(this.#fd)
    this.#fd = undefined
  }
}

const stamps = new WeakMap<Db, WalIndexStamp>()

/** Makes `stamp` the commit stamp of `db`, for `commitStamp`. */
export function watchCommits (db: Db, stamp: WalIndexStamp): void {
  stamps.set(db, stamp)
}

/** What changes with every commit to `db`, read without a query; undefined when unknown. */
export function commitStamp (db: Db): string | undefined {
  return stamps.get(db)?.read()
}
