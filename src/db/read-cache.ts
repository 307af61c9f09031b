import { LRUCache } from 'lru-cache'
import type { Db } from './database.js'
import { isPostgres } from './dialect.js'
import { sqliteRead } from './sqlite-direct.js'
import { commitStamp } from './wal-index-stamp.js'

/** Cached answers are JSON text; the cache holds at most this many characters of them and their keys. */
const MAX_CACHED_CHARS = 8 * 1024 * 1024
/** What an entry costs beyond its text (the answer object, the key, the cache's own slots), in characters. */
const ENTRY_OVERHEAD_CHARS = 128

// Without a WAL index (an in-memory store), SQLite is asked: data_version changes when another
// connection commits, schema_version on any schema change, total_changes() when this one writes rows.
const SQLITE_STORE_VERSION = 'select (select data_version from pragma_data_version) || \':\' || ' +
  '(select schema_version from pragma_schema_version) || \':\' || total_changes() as version'

export interface CachedAnswer {
  /** The JSON text of the answer; its length is its size in the cache. */
  json: string
}

/**
 * Answers repeated reads (a page of pets, a pet) from memory while a SQLite store has not changed
 * since they were read, so that a hot page costs a look at the WAL index instead of a query. Any
 * write, by this process or another one on the same file, empties it. On PostgreSQL, where other
 * instances write unseen, every read goes to the store.
 */
export class StoreReadCache {
  readonly #db: Db
  readonly #enabled: boolean
  readonly #answers = new LRUCache<string, CachedAnswer>({
    maxSize: MAX_CACHED_CHARS,
    sizeCalculation: (answer, key) => ENTRY_OVERHEAD_CHARS + key.length + answer.json.length
  })

  #version = ''

  constructor (db: Db) {
    this.#db = db
    this.#enabled = !isPostgres(db)
  }

  /**
   * The answer for `key`: from memory while the store is unchanged, else from `load` (and kept,
   * unless it is undefined: what is not found is not kept, so that misses cannot crowd out answers).
   */
  async get<T extends CachedAnswer | undefined> (key: string, load: () => Promise<T>): Promise<T> {
    if (!this.#enabled) return await load()
    // Read before loading: a write that lands in between changes the version, so what is kept under
    // this one is dropped at the next read rather than served stale.
    const version = commitStamp(this.#db) ?? await this.#storeVersion()
    if (version !== this.#version) {
      this.#answers.clear()
      this.#version = version
    }
    const cached = this.#answers.get(key) as T
    if (cached !== undefined) return cached
    const answer = await load()
    if (answer !== undefined && version === this.#version) this.#answers.set(key, answer)
    return answer
  }

  async #storeVersion (): Promise<string> {
    const [row] = await sqliteRead<{ version: string }>(this.#db, SQLITE_STORE_VERSION, [])
    return row!.version
  }
}
