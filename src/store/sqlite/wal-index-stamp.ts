import { closeSync, openSync, readSync } from 'node:fs'
import { storeFileFault } from '../store-errors.js'

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
 * SQLite maps the file shared and the kernel keeps one copy of its pages. This holds only while every
 * connection to the file uses the WAL index in shared memory: WAL mode with normal locking (see
 * SqliteStore, which checks that before using it).
 */
export class WalIndexStamp {
  readonly #header = Buffer.alloc(HEADER_BYTES)
  readonly #fd: number

  /** `path` is the `-shm` file of a store in WAL mode that the caller keeps open. */
  constructor (private readonly path: string) {
    this.#fd = openSync(path, 'r')
  }

  /** The header as text; a store fault if it cannot be read (a failing disk). */
  read (): string {
    let length: number
    try {
      length = readSync(this.#fd, this.#header, 0, HEADER_BYTES, 0)
    } catch (error) {
      throw storeFileFault(error, this.path)
    }
    return this.#header.toString('latin1', 0, length)
  }

  close (): void {
    closeSync(this.#fd)
  }
}
